"""The 8-bit decoder against the float one on the same line clips (issue 40: ``captioner.asr.moonshine.int8``).

Prepares the default model both ways in temporary cache folders (the float one as on a CPU
without fast int8 kernels), records the clips ``captioner transcribe`` cuts from each input
(``bench/final_reading.py``: ``setN`` of ``bench/voice_sets.py``, ``meetingM`` an M-minute
meeting), and reads every clip with today's final-reading policy
(:class:`captioner.asr.moonshine.line_framing.LineReader`) with each decoder. Prints one JSON line per
input and writes ``OUT.json``: WER %, CPU seconds of the reading (one thread), lines whose
final text is the same, and the decoder's data size on disk.

    python bench/int8_decoder.py --inputs set1,set2,set3,set4,meeting20 --out bench/results/int8_decoder
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="set1,set2,set3,set4,meeting20")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    from bench.final_reading import record_lines
    from bench.voice_sets import wer
    from captioner.asr.moonshine import line_framing as lf
    from captioner.asr.moonshine import int8 as moonshine_int8
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import MoonshineModel

    result: dict = {"command": "python bench/int8_decoder.py " + " ".join(sys.argv[1:]),
                    "cpu_count": os.cpu_count(), "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                    "inputs": {}}
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        models = {"int8": MoonshineModel(default_model_dir(), cache_root=tmp / "int8")}
        fast = moonshine_int8.fast_int8
        moonshine_int8.fast_int8 = lambda: False
        try:
            models["float"] = MoonshineModel(default_model_dir(), cache_root=tmp / "float")
        finally:
            moonshine_int8.fast_int8 = fast
        result["int8_decoder_built"] = models["int8"].prepared.int8_decoder
        result["decoder_data_mb"] = {k: round(Path(str(m.prepared.decoder) + ".data").stat().st_size / 1e6, 1)
                                     for k, m in models.items()}
        for name in args.inputs.split(","):
            ref, clips = record_lines(name, tmp)
            row: dict = {"lines": len(clips)}
            texts = {}
            for kind, model in models.items():
                t0 = time.process_time()
                texts[kind] = [re.sub(r"\s+", " ", lf.LineReader(model).read(c, e)).strip() for c, e in clips]
                row[kind] = {"wer_pct": round(100 * wer(ref, " ".join(texts[kind])), 2),
                             "cpu_s": round(time.process_time() - t0, 1)}
            row["same_lines"] = sum(a == b for a, b in zip(texts["int8"], texts["float"]))
            result["inputs"][name] = row
            print(json.dumps({name: row}), flush=True)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
