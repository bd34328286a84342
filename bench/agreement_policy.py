"""Which LocalAgreement policy: replay the live re-decodes of a meeting through each one.

Live WER with the default model depends on which words the partial re-decodes commit as
final before the line ends (:class:`captioner.asr.agreement.LineAgreement`): a word
committed early from a short clip stays, even when the final decode of the whole line reads
it differently. Comparing policies live costs a real-time run each (21 minutes for the
20-minute meeting); this script decodes the re-decodes once and replays them through every
policy, deterministically:

1. the one-pass lines: the meeting through ``MoonshineBackend(partials=False)`` (the same
   per-session VAD line segmentation as live; ``captioner transcribe`` decodes the same);
2. per line, the re-decodes a live session makes: clips from the line's start to ``t``
   (plus ``PARTIAL_PAD_S`` of silence), the first at ``MIN_PARTIAL_S`` into the line, each
   next one when the previous finished (its measured cost + 50 ms, at least the budget's
   ``min_interval_s``), until the line's end (where the VAD closed it: ~0.26 s into the
   pause); ``--jobs`` processes;
3. for each policy: the line's committed words, then ``finish()`` with the one-pass text,
   exactly as the backend does. WER against the rendered sentences (jiwer, normalised);
   per-word final latency estimated as the commit time (re-decode start + cost + 50 ms)
   or, for the words left to the final, line end + 0.1 s (the next engine step) + the
   line's decode cost, minus the word's end (its character position across the line).

    python bench/agreement_policy.py --minutes 20 --out bench/results/agreement_policy_20min

Prints JSON (and writes ``OUT.json``). The latency figures are estimates for ranking
policies; ``bench/latency.py`` measures the real ones.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (holdback words, minimum clip s, minimum gap s between the compared clips) to compare; the
#: first is the previous round's policy.
POLICIES = [(0, 2.5, 0.0), (0, 1.5, 0.0), (0, 2.0, 0.0), (0, 3.0, 0.0), (0, 2.5, 1.0), (0, 2.5, 1.5),
            (0, 2.5, 2.0), (0, 2.5, 2.5), (1, 2.5, 1.5), (1, 2.5, 2.0)]

_BACKEND = None
_AUDIO = None


def one_pass_lines(audio) -> list[tuple[float, float, str]]:
    """``(start s, end s, text)`` of each line the default model finalises for ``audio``."""
    import numpy as np

    from captioner.asr.base import StepRow
    from captioner.asr.moonshine import CHUNK_SAMPLES, MoonshineBackend
    from captioner.events import TextDelta

    be = MoonshineBackend(partials=False)
    sr, n, state, lines = 16000, CHUNK_SAMPLES, None, []
    try:
        for i in range(0, len(audio), n):
            chunk = audio[i : i + n]
            if len(chunk) < n:
                chunk = np.pad(chunk, (0, n - len(chunk)))
            (res,) = be.step([StepRow(chunk, state, i / sr, (i + n) / sr)])
            state = res.state
            lines += [(e.start, e.end, e.text.strip()) for e in res.events if isinstance(e, TextDelta) and e.final]
        (res,) = be.step([StepRow(None, state, len(audio) / sr, len(audio) / sr, last=True)])
        lines += [(e.start, e.end, e.text.strip()) for e in res.events if isinstance(e, TextDelta) and e.final]
    finally:
        be.close()
    return lines


def _init(wav: str) -> None:
    global _BACKEND, _AUDIO
    import soundfile as sf

    from captioner.asr.moonshine import MoonshineBackend

    _AUDIO, _ = sf.read(wav, dtype="float32")
    _BACKEND = MoonshineBackend(partials=True)


def replay_line(line: tuple[float, float, str]) -> dict:
    """The live-like re-decodes of one line: ``{"hyps": [(t, cost, text)], "final_cost": s}``."""
    import numpy as np

    from captioner.asr.moonshine import MIN_PARTIAL_S, PARTIAL_PAD_S

    ls, le, _ = line
    sr, be = 16000, _BACKEND
    pad = np.zeros(int(PARTIAL_PAD_S * sr), np.float32)
    hyps, t = [], ls + max(0.5, MIN_PARTIAL_S)
    while t < le:
        clip = np.concatenate([_AUDIO[int(ls * sr) : int(t * sr)], pad])
        t0 = time.perf_counter()
        text = be._decode_clip(clip)
        cost = time.perf_counter() - t0
        hyps.append((t, cost, text))
        t += max(cost + 0.05, be.budget.min_interval_s)
    t0 = time.perf_counter()
    be._decode_clip(_AUDIO[int(ls * sr) : int(le * sr)])
    return {"hyps": hyps, "final_cost": time.perf_counter() - t0}


def evaluate(lines, replays, ref: str, holdback: int, min_clip_s: float, min_gap_s: float = 0.0) -> dict:
    """Replay every line's re-decodes through one policy; WER and estimated word latency."""
    import jiwer
    import numpy as np

    from captioner.asr.agreement import LineAgreement
    from captioner.asr.repeats import collapse_repeats
    from tests.speech import normalize_words

    out_words, lat, early = [], [], 0
    for (ls, le, text), rep in zip(lines, replays):
        ag = LineAgreement(holdback=holdback, min_clip_s=min_clip_s, min_gap_s=min_gap_s)
        times = []
        for t, cost, hyp in rep["hyps"]:
            new, _ = ag.update(collapse_repeats(hyp), t - ls)
            times += [t + cost + 0.05] * len(new.split())
        committed = list(ag.committed)
        rest = ag.finish(collapse_repeats(text)).split()
        words = committed + rest
        times += [le + 0.1 + rep["final_cost"]] * len(rest)
        total, pos = len(" ".join(words)), 0
        for w, tw in zip(words, times):
            pos += len(w) + 1
            lat.append(tw - (ls + min(1.0, pos / max(1, total)) * (le - ls)))
        early += len(committed)
        out_words += words
    one_pass = " ".join(collapse_repeats(t) for _, _, t in lines)
    wer = jiwer.wer(normalize_words(ref), normalize_words(" ".join(out_words)))
    wer_1 = jiwer.wer(normalize_words(ref), normalize_words(one_pass))
    return {
        "holdback": holdback,
        "min_clip_s": min_clip_s,
        "min_gap_s": min_gap_s,
        "wer": round(wer, 4),
        "wer_one_pass": round(wer_1, 4),
        "wer_gap_points": round(100 * (wer - wer_1), 2),
        "final_word_latency_est_s": {"p50": round(float(np.percentile(lat, 50)), 2),
                                     "p95": round(float(np.percentile(lat, 95)), 2)},
        "committed_early": round(early / max(1, len(out_words)), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=2.0, help="meeting length (bench/meeting_audio.py, seed 10)")
    ap.add_argument("--jobs", type=int, default=2, help="decoding processes")
    ap.add_argument("--out", help="write OUT.json")
    args = ap.parse_args()
    import soundfile as sf

    from bench.meeting_audio import make_meeting

    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        wav = str(Path(tmp) / "meeting.wav")
        ref = " ".join(u.text for u in make_meeting(wav, args.minutes, seed=10))
        audio, _ = sf.read(wav, dtype="float32")
        lines = one_pass_lines(audio)
        with mp.get_context("spawn").Pool(max(1, args.jobs), initializer=_init, initargs=(wav,)) as pool:
            replays = pool.map(replay_line, lines, chunksize=1)
    results = [evaluate(lines, replays, ref, *policy) for policy in POLICIES]
    report = {
        "command": "python bench/agreement_policy.py " + " ".join(sys.argv[1:]),
        "minutes": args.minutes,
        "lines": len(lines),
        "re_decodes": sum(len(r["hyps"]) for r in replays),
        "wall_s": round(time.perf_counter() - t_start, 1),
        "policies": results,
    }
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).with_suffix(".replays.json").write_text(json.dumps({"lines": lines, "replays": replays}))
    if args.out:
        Path(args.out).with_suffix(".json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
