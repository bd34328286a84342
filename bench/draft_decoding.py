"""Drafted decoding of the default model, with and without finding the draft again (issue 27).

Every sentence of the three multi-voice sets of ``bench/voice_sets.py`` is cut out with 0.25 s
of its pauses and read as live captioning reads it: re-decodes every 0.3 s of the growing
line (with ``PARTIAL_PAD_S`` of silence), each drafted by the one before, then the line's two
final framings (as cut, and ``line_framing.framed``) drafted by the last re-decode. Each
configuration of :data:`captioner.asr.moonshine.model.LOOKAHEAD` runs ``--passes`` times,
alternating (same machine load); printed as JSON and written to ``--out``:

* decoder runs and decoder seconds of the re-decodes and of the final readings;
* whether every reading's tokens are identical across configurations.

    python bench/draft_decoding.py --out bench/results/draft_decoding.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lookahead", default="0,10", help="comma list of LOOKAHEAD values (0: off)")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--out", default="bench/results/draft_decoding.json")
    args = ap.parse_args()

    import numpy as np
    import soundfile as sf

    import captioner.asr.moonshine.model as mm
    from bench.hotwords import count_decoder_runs
    from bench.voice_sets import render_set
    from captioner.asr.moonshine.framings import framed
    from captioner.asr.moonshine.partials import PARTIAL_PAD_S
    from captioner.asr.moonshine.files import default_model_dir

    model = mm.shared_model(default_model_dir())
    runs = count_decoder_runs(model)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("set1", "set2", "set3"):
            utts = render_set(name, Path(tmp) / f"{name}.wav")
            audio, _ = sf.read(Path(tmp) / f"{name}.wav", dtype="float32")
            for u in utts:
                lines.append(audio[int((u["start"] - 0.25) * 16000): int((u["end"] + 0.25) * 16000)])
    pad = np.zeros(int(PARTIAL_PAD_S * 16000), np.float32)

    def timed(clip, draft, row, kind):
        hidden = model.encode(clip)
        runs[0] = 0
        t0 = time.perf_counter()
        tokens = model.decode(hidden, model.max_tokens(len(clip)), draft=draft)
        row[f"{kind}_decoder_s"] += time.perf_counter() - t0
        row[f"{kind}_runs"] += runs[0]
        row[f"{kind}_readings"] += 1
        return tokens

    configs = [int(x) for x in args.lookahead.split(",")]
    results: dict[int, list[dict]] = {c: [] for c in configs}
    outputs: dict[int, list] = {}
    for _ in range(args.passes):
        for look in configs:
            mm.LOOKAHEAD = look
            row = {k: 0 for k in ("partial_runs", "partial_readings", "final_runs", "final_readings")}
            row.update(partial_decoder_s=0.0, final_decoder_s=0.0)
            outs = []
            for line in lines:
                draft: list[int] = []
                for end in np.arange(0.5, len(line) / 16000, 0.3):
                    draft = timed(np.concatenate([line[: int(end * 16000)], pad]), draft, row, "partial")
                    outs.append(draft)
                for clip in (line, framed(line)):
                    outs.append(timed(clip, draft, row, "final"))
            outputs.setdefault(look, outs)
            results[look].append({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()})
    base = outputs[configs[0]]
    summary = {
        "command": "python bench/draft_decoding.py " + " ".join(sys.argv[1:]),
        "lines": len(lines),
        "identical_tokens": {str(c): sum(a == b for a, b in zip(base, outputs[c])) for c in configs},
        "readings": len(base),
        "by_lookahead": {str(c): {
            "passes": results[c],
            "partial_decoder_ms_per_reading": round(1000 * float(np.mean([r["partial_decoder_s"] / r["partial_readings"] for r in results[c]])), 1),
            "final_decoder_ms_per_reading": round(1000 * float(np.mean([r["final_decoder_s"] / r["final_readings"] for r in results[c]])), 1),
            "partial_runs_per_reading": round(results[c][0]["partial_runs"] / results[c][0]["partial_readings"], 2),
            "final_runs_per_reading": round(results[c][0]["final_runs"] / results[c][0]["final_readings"], 2),
        } for c in configs},
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
