"""End-of-turn models: import and load time, per-decision latency, VAD cost, install size.

Prints one JSON object:

* ``import_s``: importing pipecat's smart-turn analyzer (fresh interpreter);
* ``load_s``: loading both ONNX models (smart-turn v3.2 CPU, Silero VAD);
* ``decision_ms``: median / p95 of one smart-turn decision (8 s of audio: Whisper
  features + the ONNX call) on one intra-op thread;
* ``vad_window_us``: median microseconds per 32 ms Silero window;
* ``install_mb``: disk use of what the --no-deps install adds (pipecat, onnxruntime,
  loguru, wait_for2; pydantic is counted apart since other packages often bring it).

Usage::

    python bench/turns.py [--decisions 30]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _du_mb(package: str) -> float | None:
    spec = importlib.util.find_spec(package)
    if spec is None:
        return None
    root = list(spec.submodule_search_locations or [os.path.dirname(spec.origin)])[0]
    total = 0
    for folder, _, files in os.walk(root):
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return round(total / 2**20, 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--decisions", type=int, default=30)
    args = p.parse_args()
    code = ("import time; t=time.perf_counter(); from loguru import logger; logger.disable('pipecat'); "
            "from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3; "
            "print(time.perf_counter()-t)")
    import_s = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout.strip())
    import numpy as np

    from captioner.engine.turns import SileroVad, SmartTurn

    t0 = time.perf_counter()
    clf, vad = SmartTurn(), SileroVad()
    load_s = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    audio = (0.05 * rng.standard_normal(8 * 16000)).astype(np.float32)
    clf(audio)  # warm-up
    times = []
    for _ in range(args.decisions):
        t0 = time.perf_counter()
        clf(audio)
        times.append(1000.0 * (time.perf_counter() - t0))
    state, vt = None, []
    for i in range(0, len(audio) - 511, 512):
        t0 = time.perf_counter()
        _, state = vad(audio[i : i + 512], state)
        vt.append(1e6 * (time.perf_counter() - t0))
    times.sort()
    print(json.dumps({
        "import_s": round(import_s, 3),
        "load_s": round(load_s, 3),
        "decision_ms": {"median": round(statistics.median(times), 1), "p95": round(times[int(0.95 * len(times)) - 1], 1)},
        "vad_window_us": round(statistics.median(vt), 1),
        "cpus": os.cpu_count(),
        "install_mb": {name: _du_mb(name) for name in ("pipecat", "onnxruntime", "loguru", "wait_for2", "pydantic",
                                                      "pydantic_core")},
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
