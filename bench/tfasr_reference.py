"""Reference decoder for bench/tflite_parity.py: TensorFlowASR's own ``ASRInference``.

Runs in the exporter's Python 3.12 venv (tests/fixtures/tflite/make_fixtures.sh builds it), never
in captioner's environment and never imported by captioner. Reads one JSON request on stdin::

    {"model": "x.tflite", "signals": ["a.npy", ...], "block": 1000, "repeats": 3}

and prints one JSON object on stdout::

    {"onepass": [text, ...], "streaming": [text, ...], "stream_s": [seconds per signal, best of
     repeats], "chunks": [chunks per signal], "load_s": seconds}

Streaming feeds each signal in ``block``-sample pieces to one session (``start`` ... ``end``), as
the TensorFlowASR inference page (section 4.1) shows. Only ASRInference's public API is used.
"""

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
from tensorflow_asr.inferences import ASRInference  # noqa: E402


def main() -> None:
    req = json.load(sys.stdin)
    block = int(req.get("block", 1000))
    repeats = int(req.get("repeats", 3))
    t0 = time.perf_counter()
    one = ASRInference(tflite=req["model"], streaming=False)
    session = ASRInference(tflite=req["model"], streaming=True)
    load_s = time.perf_counter() - t0
    size, step = session.engine._geometry()  # noqa: SLF001 (metadata geometry, for the chunk count only)
    out = {"onepass": [], "streaming": [], "stream_s": [], "chunks": [], "load_s": load_s}
    for path in req["signals"]:
        signal = np.load(path).astype(np.float32)
        out["onepass"].append(one(signal))
        best, text = float("inf"), ""
        for _ in range(repeats):
            session.start()
            pieces = []
            t = time.perf_counter()
            for i in range(0, len(signal), block):
                pieces.append(session(signal[i : i + block]))
            pieces.append(session.end())
            best = min(best, time.perf_counter() - t)
            text = "".join(pieces)
        out["streaming"].append(text)
        out["stream_s"].append(best)
        n = len(signal)
        out["chunks"].append(0 if n < size else 1 + (n - size) // step)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
