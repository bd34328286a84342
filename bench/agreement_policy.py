"""Which LocalAgreement policy: replay the live re-decodes of a meeting through each one.

Live WER with the default model depends on which words the partial re-decodes commit as
final before the line ends (:class:`captioner.asr.moonshine.agreement.LineAgreement`): a word
committed early from a short clip stays, even when the final decode of the whole line reads
it differently. Comparing policies live costs a real-time run each (21 minutes for the
20-minute meeting); this script decodes the re-decodes once and replays them through every
policy, deterministically:

1. the one-pass lines: each input through ``MoonshineBackend(partials=False)`` (the same
   per-session VAD line segmentation as live; ``captioner transcribe`` decodes the same);
2. per line, the re-decodes a live session makes: clips from the line's start to ``t``
   (plus ``PARTIAL_PAD_S`` of silence), the first at ``MIN_PARTIAL_S`` into the line, each
   next one when the previous finished (its measured cost + 50 ms, at least the budget's
   ``min_interval_s``), until the line's end (where the VAD closed it: ~0.26 s into the
   pause), each with its words' confidences as live (``MoonshineBackend._decode_clip``);
   ``--jobs`` processes;
3. for each policy (words held back, shortest clip, gap between the compared re-decodes,
   lowest confidence committed): the line's committed words, then ``finish()`` with the
   one-pass text, exactly as the backend does. WER against the rendered sentences (jiwer,
   normalised); per-word final latency estimated as the commit time (re-decode start + cost +
   50 ms) or, for the words left to the final, line end + 0.1 s (the next engine step) + the
   line's decode cost, minus the word's end (its character position across the line).

Inputs (``--inputs``): ``meeting`` (the ``--minutes``-minute meeting of
``bench/meeting_audio.py``) and the sets of ``bench/voice_sets.py`` (``set1,set2,set3``):

    python bench/agreement_policy.py --minutes 20 --inputs meeting,set1,set2,set3 \
        --out bench/results/agreement_policy_confidence

Prints JSON (and writes ``OUT.json`` and the re-decodes to ``OUT.replays.json``, which
``--replays`` evaluates again without decoding). The latency figures are estimates for
ranking policies; ``bench/latency.py`` measures the real ones.
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

#: (holdback words, minimum clip s, minimum gap s between the compared clips, lowest word
#: confidence committed or None) to compare; the first is the previous round's policy.
POLICIES = [(0, 2.5, 2.0, None), (0, 2.5, 0.0, None), (0, 2.5, 1.0, None), (0, 2.5, 1.5, None),
            (0, 2.5, 2.5, None), (1, 2.5, 2.0, None), (1, 2.5, 2.5, None), (0, 3.5, 2.0, None),
            (0, 2.5, 0.0, -0.2), (0, 2.5, 0.5, -0.2), (0, 2.5, 1.0, -0.3), (0, 2.5, 1.0, -0.2),
            (0, 2.5, 1.0, -0.1), (0, 2.5, 1.5, -0.3), (0, 2.5, 1.5, -0.2), (0, 2.5, 1.5, -0.1),
            (0, 2.5, 2.0, -0.3), (0, 2.5, 2.0, -0.2), (0, 2.5, 2.0, -0.1), (0, 2.0, 1.0, -0.2),
            (0, 2.0, 1.5, -0.2)]

_BACKEND = None
_AUDIO = None


def one_pass_lines(audio) -> list[tuple[float, float, str]]:
    """``(start s, end s, text)`` of each line the default model finalises for ``audio``."""
    import numpy as np

    from captioner.asr.base import StepRow
    from captioner.asr.moonshine.backend import CHUNK_SAMPLES, MoonshineBackend
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

    from captioner.asr.moonshine.backend import MoonshineBackend

    _AUDIO, _ = sf.read(wav, dtype="float32")
    _BACKEND = MoonshineBackend(partials=True)


def replay_line(line: tuple[float, float, str]) -> dict:
    """The live-like re-decodes of one line: ``{"hyps": [(t, cost, text, confidence)],
    "final_cost": s}``; ``confidence``: per word, its least likely token's log-probability
    (:meth:`MoonshineBackend._decode_clip`)."""
    import numpy as np

    from captioner.asr.moonshine.partials import MIN_PARTIAL_S, PARTIAL_PAD_S

    ls, le, _ = line
    sr, be = 16000, _BACKEND
    pad = np.zeros(int(PARTIAL_PAD_S * sr), np.float32)
    hyps, t = [], ls + max(0.5, MIN_PARTIAL_S)
    while t < le:
        clip = np.concatenate([_AUDIO[int(ls * sr) : int(t * sr)], pad])
        t0 = time.perf_counter()
        confidence: list[float] = []
        text = be._decode_clip(clip, draft=[], confidence=confidence)
        cost = time.perf_counter() - t0
        hyps.append((t, cost, text, confidence))
        t += max(cost + 0.05, be.budget.min_interval_s)
    t0 = time.perf_counter()
    be._decode_clip(_AUDIO[int(ls * sr) : int(le * sr)])
    return {"hyps": hyps, "final_cost": time.perf_counter() - t0}


def evaluate(lines, replays, ref: str, holdback: int, min_clip_s: float, min_gap_s: float = 0.0,
             commit_logprob: float | None = None) -> dict:
    """Replay every line's re-decodes through one policy; WER and estimated word latency."""
    import jiwer
    import numpy as np

    from captioner.asr.moonshine.agreement import LineAgreement
    from captioner.asr.moonshine.repeats import collapse_repeats
    from tests.speech import normalize_words

    out_words, lat, early = [], [], 0
    for (ls, le, text), rep in zip(lines, replays):
        ag = LineAgreement(holdback=holdback, min_clip_s=min_clip_s, min_gap_s=min_gap_s,
                           commit_logprob=commit_logprob)
        times = []
        for t, cost, hyp, confidence in rep["hyps"]:
            new, _ = ag.update(hyp, t - ls, confidence or None)
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
        "commit_logprob": commit_logprob,
        "wer": round(wer, 4),
        "wer_one_pass": round(wer_1, 4),
        "wer_gap_points": round(100 * (wer - wer_1), 2),
        "final_word_latency_est_s": {"p50": round(float(np.percentile(lat, 50)), 2),
                                     "p95": round(float(np.percentile(lat, 95)), 2)},
        "committed_early": round(early / max(1, len(out_words)), 3),
    }


def replay_audio(name: str, minutes: float, jobs: int, tmp: str) -> dict:
    """Render one input (``"meeting"``: the ``minutes``-minute meeting of
    ``bench/meeting_audio.py``, seed 10; else a set of ``bench/voice_sets.py``), find its
    one-pass lines and decode every line's live-like re-decodes.

    Returns:
        ``{"ref": reference text, "lines": [(start s, end s, text)], "replays": [...]}``.
    """
    import soundfile as sf

    wav = str(Path(tmp) / f"{name}.wav")
    if name == "meeting":
        from bench.meeting_audio import make_meeting

        ref = " ".join(u.text for u in make_meeting(wav, minutes, seed=10))
    else:
        from bench.voice_sets import render_set

        ref = " ".join(u["text"] for u in render_set(name, wav))
    audio, _ = sf.read(wav, dtype="float32")
    lines = one_pass_lines(audio)
    with mp.get_context("spawn").Pool(max(1, jobs), initializer=_init, initargs=(wav,)) as pool:
        replays = pool.map(replay_line, lines, chunksize=1)
    return {"ref": ref, "lines": lines, "replays": replays}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=2.0, help="meeting length (bench/meeting_audio.py, seed 10)")
    ap.add_argument("--inputs", default="meeting",
                    help="comma-separated: 'meeting' and/or sets of bench/voice_sets.py (set1,set2,set3)")
    ap.add_argument("--jobs", type=int, default=2, help="decoding processes")
    ap.add_argument("--replays", help="evaluate the re-decodes stored in this OUT.replays.json instead of decoding")
    ap.add_argument("--out", help="write OUT.json and OUT.replays.json")
    args = ap.parse_args()

    t_start = time.perf_counter()
    if args.replays:
        stored = json.loads(Path(args.replays).read_text())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            stored = {name: replay_audio(name, args.minutes, args.jobs, tmp) for name in args.inputs.split(",")}
    report = {
        "command": "python bench/agreement_policy.py " + " ".join(sys.argv[1:]),
        "minutes": args.minutes,
        "wall_s": round(time.perf_counter() - t_start, 1),
        "inputs": {},
    }
    for name, data in stored.items():
        report["inputs"][name] = {
            "lines": len(data["lines"]),
            "re_decodes": sum(len(r["hyps"]) for r in data["replays"]),
            "policies": [evaluate(data["lines"], data["replays"], data["ref"], *p) for p in POLICIES],
        }
    text = json.dumps(report, indent=1)
    if args.out:
        if not args.replays:
            Path(args.out).with_suffix(".replays.json").write_text(json.dumps(stored))
        Path(args.out).with_suffix(".json").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
