"""What a line's final costs on this machine, reading by reading, and the earliest it can come (issue 40).

Live, a completed line's final text waits for its readings (:class:`captioner.asr.moonshine.line_framing.LineReader`):
the line as cut; unless the model is sure of it, the framed line; unless the surer of the two is
sure, the line played at each of ``FURTHER_RATES``. This script records the clips ``captioner
transcribe`` cuts from each input (``bench/final_reading.py``: ``setN`` of ``bench/voice_sets.py``,
``meetingM`` an M-minute meeting), and times every reading of every line on one thread, alone
(encoder run, then decoder with the cut reading's own tokens as the draft, which is the best
draft a live reading can have: the open line's last re-decode), and gives, per line:

* ``before``: when the final comes with the live schedule up to c243b23 (the cut and framed
  readings side by side, then the slower retimed reading beside the two faster ones in turn):
  ``max(cut, framed) + max(r0.9, r1.1 + r1.2)`` for a line read five times;
* ``after``: when it comes with the schedule of :meth:`LineReader._start_further
  <captioner.asr.moonshine.line_framing.LineReader._start_further>` (since 2026-12-07): the framed reading
  on one helper from the start; once the cut reading is done (and unsure), the retimed readings
  on the two helpers, shortest first, then longest, each taken by the helper free first;
* ``floor``: the earliest any schedule on two cores could give it: the readings the policy needs
  (known only once the line is cut), packed perfectly on both cores, ``max(sum / 2, longest)``,
  with nothing else running: no partial re-decode, VAD, capture or turn detection;

in seconds after the line is cut (what ``bench/latency.py``'s "final per line" measures, plus
what the partials, the VAD and the other threads take from the two cores live), and their
p50/p95 over the lines. Prints one JSON line per input; writes ``OUT.json``.

    python bench/reading_cost.py --inputs set1,set2,set3,set4,meeting20 --out bench/results/reading_cost
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Issue 40's target for a line's final, live: p95 at or below this many seconds.
TARGET_S = 0.6


def time_reading(model, clip: np.ndarray, draft: list[int]) -> dict:
    """One reading of ``clip`` (``[n] float32``, 16 kHz) as ``LineReader`` does it: encoder
    seconds, decoder seconds (``draft`` given), text and mean token log-probability."""
    t0 = time.perf_counter()
    hidden = model.encode(clip)
    t1 = time.perf_counter()
    logprobs: list[float] = []
    ids = model.decode(hidden, model.max_tokens(len(clip)), logprobs=logprobs, draft=draft)
    t2 = time.perf_counter()
    return {"encoder_s": t1 - t0, "decoder_s": t2 - t1, "text": model.tokenizer.decode(ids).strip(),
            "score": float(np.mean(logprobs)) if logprobs else 0.0}


def line_cost(model, clip: np.ndarray, at_end: bool) -> dict:
    """The readings today's policy needs for one line, timed, and its ``before``, ``after`` and ``floor`` (s)."""
    from captioner.asr.moonshine import line_framing as lf

    sr = lf.SAMPLE_RATE
    if at_end:
        clip = np.concatenate([clip, np.zeros(int(lf.END_PAD_S * sr), np.float32)])
    draft = model.generate(clip)  # the best draft live can have (untimed)
    readings = {"cut": time_reading(model, clip, draft)}
    cut = (readings["cut"]["text"], readings["cut"]["score"])
    if not (cut[0] and cut[1] >= lf.SURE_LOGPROB):
        readings["framed"] = time_reading(model, lf.framed(clip, sr), draft)
        best = lf.surest([cut, (readings["framed"]["text"], readings["framed"]["score"])], len(clip), sr)
        if best[1] < lf.SURE_LOGPROB:
            for rate in lf.FURTHER_RATES:
                readings[f"x{rate}"] = time_reading(model, lf.retimed(clip, rate, sr), draft)
    cost = {k: r["encoder_s"] + r["decoder_s"] for k, r in readings.items()}
    if len(cost) == 1:
        before = cost["cut"]
    else:
        before = max(cost["cut"], cost["framed"])
        if len(cost) > 2:
            slow, *fast = (cost[f"x{rate}"] for rate in lf.FURTHER_RATES)
            before += max(slow, sum(fast))
    after = before
    if len(cost) > 2:
        retimed = sorted((cost[f"x{rate}"] for rate in lf.FURTHER_RATES))
        free = [cost["framed"], cost["cut"]]  # when each helper can take the next reading
        for c in [retimed[0], *reversed(retimed[1:])]:
            i = free.index(min(free))
            free[i] += c
        after = max(free)
    floor = max(sum(cost.values()) / 2, max(cost.values()))
    return {"seconds": len(clip) / sr, "readings": len(cost), "before_s": before, "after_s": after, "floor_s": floor,
            "cost_s": cost, "encoder_s": {k: r["encoder_s"] for k, r in readings.items()}}


def summary(rows: list[dict]) -> dict:
    """Per input: lines by number of readings, p50/p95 of ``before``, ``after`` and ``floor``, lines over the
    target, and the mean cost of each reading of the lines read five times."""
    def pct(key: str, q: float, sel=rows) -> float | None:
        return round(float(np.percentile([r[key] for r in sel], q)), 3) if sel else None

    five = [r for r in rows if r["readings"] == 5]
    kinds = list(five[0]["cost_s"]) if five else []
    return {
        "lines": len(rows),
        "lines_by_readings": {n: sum(r["readings"] == n for r in rows) for n in (1, 2, 5)},
        "before_p50_s": pct("before_s", 50), "before_p95_s": pct("before_s", 95),
        "after_p50_s": pct("after_s", 50), "after_p95_s": pct("after_s", 95),
        "floor_p50_s": pct("floor_s", 50), "floor_p95_s": pct("floor_s", 95),
        "floor_over_target": sum(r["floor_s"] > TARGET_S for r in rows),
        "five_readings": {
            "seconds_mean": round(float(np.mean([r["seconds"] for r in five])), 2) if five else None,
            "before_p50_s": pct("before_s", 50, five), "after_p50_s": pct("after_s", 50, five),
            "floor_p50_s": pct("floor_s", 50, five),
            "reading_s_mean": {k: round(float(np.mean([r["cost_s"][k] for r in five])), 3) for k in kinds},
            "encoder_s_mean": {k: round(float(np.mean([r["encoder_s"][k] for r in five])), 3) for k in kinds},
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="set1,set2,set3,set4,meeting20")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    import subprocess

    from bench.final_reading import record_lines
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import shared_model

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    model = shared_model(default_model_dir())
    result: dict = {"command": "python bench/reading_cost.py " + " ".join(sys.argv[1:]), "commit": commit,
                    "int8_decoder": bool(model.prepared.int8_decoder), "target_s": TARGET_S,
                    "loadavg_start": [round(x, 2) for x in os.getloadavg()], "inputs": {}}
    with tempfile.TemporaryDirectory() as tmpd:
        for name in args.inputs.split(","):
            _, clips = record_lines(name, Path(tmpd))
            rows = [line_cost(model, clip, at_end) for clip, at_end in clips]
            result["inputs"][name] = summary(rows)
            print(json.dumps({name: result["inputs"][name]}), flush=True)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
