"""Accuracy of the default model on several multi-voice espeak-ng meetings (issue 27.1).

Three deterministic sets, each read by several espeak-ng voices at 145-190 words per
minute with 1-4 s pauses (rendered at run time with :func:`bench.meeting_audio._espeak`,
nothing big is committed):

* ``set1``: 24 office sentences, voices en-us, en-gb, en-gb-x-rp, en-gb-scotland, en-029,
  en-us+f3, en-us+f4, en-us+m3 (the issue's set);
* ``set2``: 20 other sentences (travel, numbers, names), six other voice variants;
* ``set3``: 20 other sentences (a lecture), five voices incl. fast ones;
* ``set4``: 20 other sentences (a help desk, a clinic, sport, a library), six voice variants
  none of the other sets or ``bench/meeting_audio.py`` use (issue 40's fourth set).

For every set it measures the WER (jiwer, normalised as ``tests.speech.normalize_words``) of:

* ``old``: ``captioner transcribe`` of the moonshine-voice runtime (git revision 3e6d95f),
  run with ``--old-python`` in the tree ``--old-tree`` (skipped, with a note, when not given);
* ``before``: ``captioner transcribe`` of git revision ``--before-rev`` (exported with
  ``git archive``) in this venv;
* ``after``: ``captioner transcribe`` of this working tree;
* ``live``: the working tree's :class:`~captioner.engine.live.LiveCaptioner` fed from a
  ``FileSource`` at ``--live-speed`` x real time (partials, LocalAgreement, finals).

``--meeting-minutes M`` adds the M-minute meeting of ``bench/meeting_audio.py``
(one-pass transcribe, before and after). Writes ``OUT.json`` and ``OUT.png`` (a chart of the
sets; none for the meeting alone):

    python bench/voice_sets.py --old-python venv-old/bin/python --old-tree old-3e6d95f \\
        --out bench/results/voice_sets
    python bench/voice_sets.py --sets "" --meeting-minutes 20 --out bench/results/voice_sets_meeting20

The old runtime's venv: ``python3 -m venv venv-old``, then ``pip install`` the dependencies of
``git show 3e6d95f:pyproject.toml`` (``moonshine-voice>=0.1.5,<0.2``, ``moonshine-cpp``, numpy,
soundfile, soxr, ...) and ``pip install --no-deps 'pipecat-ai>=1.14,<1.15'`` as
``scripts/_common.sh`` does; the tree: ``git archive 3e6d95f | tar -x -C /tmp/old``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SET1_SENTENCES = [
    "Welcome back to the weekly planning meeting.",
    "Our cloud costs were higher than planned this month.",
    "Finance would like a short written explanation.",
    "The storage team moved the old backups to a cheaper tier.",
    "Could you show us the dashboard with the new numbers?",
    "Click the export button to download the report.",
    "The report lists every service and its monthly cost.",
    "Two of the test servers were never switched off.",
    "We will add an alert when a machine runs idle for a day.",
    "Sarah is on holiday until the end of next week.",
    "Her tasks were handed over to the support desk.",
    "The customer in Berlin asked for a second training day.",
    "I can travel there on the first Tuesday of the month.",
    "Please check the contract before we confirm the date.",
    "The new laptop order arrives on Wednesday morning.",
    "Everyone should back up their files before the upgrade.",
    "The printer on the third floor is broken again.",
    "A technician will come to repair it tomorrow.",
    "Let us keep the next meeting short and focused.",
    "Send your questions by email before Thursday noon.",
    "The survey closes at the end of this week.",
    "So far more than two hundred people have answered.",
    "We will share the results at the next meeting.",
    "Thank you all, and have a good afternoon.",
]
SET1_VOICES = ["en-us", "en-gb", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-us+f3", "en-us+f4", "en-us+m3"]

SET2_SENTENCES = [
    "The train to the airport leaves every twenty minutes.",
    "My flight was delayed by almost three hours.",
    "The hotel is next to the river, close to the old bridge.",
    "Please keep your passport and your ticket ready.",
    "We booked a table for six people at eight o'clock.",
    "The museum is closed on Mondays and public holidays.",
    "Take the second street on the left after the bank.",
    "The weather will be sunny with a light wind from the west.",
    "Bring a warm jacket, the evenings are cold in the mountains.",
    "The conference room is on the fourth floor.",
    "Our guide speaks English, French and a little Spanish.",
    "The bus stop is right in front of the station.",
    "I lost my umbrella somewhere in the shopping centre.",
    "The taxi driver did not have change for a large note.",
    "Breakfast is served from seven until half past ten.",
    "There is a small bakery around the corner.",
    "The tickets for the concert were sold out in one day.",
    "We should leave early to avoid the traffic.",
    "The ferry crosses the lake twice every afternoon.",
    "Call me when you arrive at the hotel.",
]
SET2_VOICES = ["en-gb-x-gbclan", "en-us+f2", "en-gb+m4", "en-029+f1", "en-us+m1", "en-gb-scotland+f3"]

SET3_SENTENCES = [
    "Today we talk about how plants turn sunlight into food.",
    "The process is called photosynthesis.",
    "Leaves contain a green pigment named chlorophyll.",
    "It absorbs red and blue light, and reflects green light.",
    "Water enters the plant through the roots.",
    "Carbon dioxide enters through tiny openings in the leaves.",
    "The plant uses light energy to build sugar molecules.",
    "Oxygen is released into the air as a by-product.",
    "Animals depend on this oxygen to breathe.",
    "Without plants, most life on earth could not exist.",
    "Some bacteria can also perform photosynthesis.",
    "In the ocean, tiny algae produce much of our oxygen.",
    "The rate of growth depends on light and temperature.",
    "Farmers use greenhouses to control these conditions.",
    "Next week we will look at how cells divide.",
    "Please read the second chapter before the next lecture.",
    "The exam will cover everything we discussed this term.",
    "You may bring one page of handwritten notes.",
    "Questions can be posted on the course forum.",
    "That is all for today, thank you for listening.",
]
SET3_VOICES = ["en-us-nyc", "en-gb-x-rp+f4", "en-029", "en-us+f5", "en-gb-x-gbcwmd+m2"]

SET4_SENTENCES = [
    "Thanks for calling the help desk, how can I help you today?",
    "My laptop will not connect to the office network.",
    "Have you tried restarting the wireless adapter?",
    "Yes, and the light on the router is still blinking orange.",
    "Let me reset your password from here.",
    "You should receive a text message with a six digit code.",
    "The code arrived, but the screen froze after I typed it.",
    "Hold the power button for ten seconds and start again.",
    "The clinic opens at nine and closes at half past five.",
    "Your appointment with the dentist is on Friday afternoon.",
    "Please bring your insurance card and a list of your medicines.",
    "The pharmacy next door can fill the prescription today.",
    "Drink plenty of water and rest for a couple of days.",
    "Our football team won the final by two goals to one.",
    "The coach said the players worked hard all season.",
    "Tickets for the next home game go on sale tomorrow.",
    "The library will stay open late during the exam period.",
    "Borrowed books must be returned within three weeks.",
    "A late fee of one dollar is charged for each day.",
    "Thank you for your patience, have a lovely evening.",
]
SET4_VOICES = ["en-us+m6", "en-gb-x-gbcwmd+f3", "en-us-nyc+m4", "en-gb-x-gbclan+f4", "en-029+m3", "en-gb-scotland+m2"]

#: name -> (sentences, voices, words-per-minute range, seed)
SETS = {
    "set1": (SET1_SENTENCES, SET1_VOICES, (145, 190), 27),
    "set2": (SET2_SENTENCES, SET2_VOICES, (145, 190), 28),
    "set3": (SET3_SENTENCES, SET3_VOICES, (160, 190), 29),
    "set4": (SET4_SENTENCES, SET4_VOICES, (150, 185), 40),
}


def render_set(name: str, path: str | Path) -> list[dict]:
    """Write set ``name`` to ``path`` (16 kHz mono WAV); returns its sentences with file times.

    Deterministic: the voice of sentence i is ``voices[i % len(voices)]``; speed and the
    following pause (1-4 s) come from ``random.Random(seed)``; 0.5 s of lead-in; noise at
    -60 dBFS as in ``bench/meeting_audio.py``.

    Returns:
        ``[{"text", "voice", "wpm", "start", "end"}]`` (s).
    """
    import numpy as np
    import soundfile as sf

    from bench.meeting_audio import RATE, _espeak

    sentences, voices, (lo, hi), seed = SETS[name]
    rng = random.Random(seed)
    parts = [np.zeros(int(0.5 * RATE), np.float32)]
    t = 0.5
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(sentences):
            voice, wpm = voices[i % len(voices)], rng.randint(lo, hi)
            speech = _espeak(text, voice, wpm, Path(tmp) / "u.wav")
            out.append({"text": text, "voice": voice, "wpm": wpm, "start": round(t, 3),
                        "end": round(t + len(speech) / RATE, 3)})
            gap = int(rng.uniform(1.0, 4.0) * RATE)
            parts += [speech, np.zeros(gap, np.float32)]
            t += (len(speech) + gap) / RATE
    audio = np.concatenate(parts)
    audio += np.random.default_rng(seed).normal(0, 1e-3, len(audio)).astype(np.float32)
    sf.write(path, np.clip(audio, -1, 1), RATE, subtype="PCM_16")
    return out


def wer(ref: str, hyp: str) -> float:
    """Word error rate (0..1) after ``tests.speech.normalize_words``."""
    import jiwer

    from tests.speech import normalize_words

    return round(jiwer.wer(normalize_words(ref), normalize_words(hyp)), 4)


def transcribe(python: str, tree: Path, wav: Path, cache: Path | None = None) -> dict:
    """``captioner transcribe`` of ``wav`` with ``python`` in ``tree``: text, wall s, RTF.
    ``cache``: the tree's own ``XDG_CACHE_HOME`` (a tree whose prepared model has another recipe
    would delete this checkout's copy from a shared cache, and each run would build it again)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-m", "captioner.cli", "transcribe", str(wav), "--format", "txt"],
                          cwd=tree, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"transcribe failed in {tree}: {proc.stderr[-2000:]}")
    import soundfile as sf

    audio_s = sf.info(str(wav)).duration
    # txt lines start with "[hh:mm:ss] " and, where the speaker changes, "Speaker N: " (issue 38;
    # the sentences have no colon): only the words count
    text = " ".join(re.sub(r"^\[[0-9:.]+\]\s*(Speaker \d+: )?", "", line) for line in proc.stdout.splitlines())
    # "captioner: X s of audio in Y s (real-time factor R, ...)": decoding only, without the load
    rtf = re.findall(r"real-time factor ([0-9.]+)", proc.stderr)
    return {"text": text.strip(), "wall_s": round(wall, 1), "rtf_wall": round(wall / audio_s, 4),
            "rtf": float(rtf[-1]) if rtf else None}


def live_child(wav: str, speed: float) -> None:
    """Child process: the working tree's LiveCaptioner over ``wav``; prints the finals' text as JSON."""
    from captioner.asr import load_backend
    from captioner.audio.filesource import FileSource
    from captioner.engine.live import LiveCaptioner
    from captioner.events import TextDelta

    finals: list[str] = []

    def on_event(ev) -> None:
        if isinstance(ev, TextDelta) and ev.final and ev.text.strip():
            finals.append(ev.text.strip())

    backend = load_backend("default")
    live = LiveCaptioner(backend, [FileSource(wav, label="Meeting", realtime=True, speed=speed)], on_event)
    live.start()
    live.wait()
    print(json.dumps({"text": " ".join(finals)}), flush=True)
    sys.stderr.flush()
    os._exit(0)  # the text is out: skip interpreter teardown (an abort there is issue 30.2's)


def live(wav: Path, speed: float) -> dict:
    """Run :func:`live_child` in a child process (working tree); returns its text."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, "--live-child", str(wav), "--live-speed", str(speed)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"live run failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def export(rev: str, dest: Path) -> Path:
    """``git archive`` of ``rev`` unpacked into ``dest``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)
    return dest


def per_sentence(utts: list[dict], hyp: str) -> list[dict]:
    """Align the hypothesis to the sentences (jiwer word alignment); per-sentence WER and text."""
    import jiwer

    from tests.speech import normalize_words

    ref_words, owner = [], []
    for i, u in enumerate(utts):
        words = normalize_words(u["text"]).split()
        ref_words += words
        owner += [i] * len(words)
    hyp_words = normalize_words(hyp).split()
    out = jiwer.process_words(" ".join(ref_words), " ".join(hyp_words))
    got: list[list[str]] = [[] for _ in utts]
    errs = [0] * len(utts)
    last = 0
    for chunk in out.alignments[0]:
        for k in range(max(chunk.ref_end_idx - chunk.ref_start_idx, chunk.hyp_end_idx - chunk.hyp_start_idx)):
            r = chunk.ref_start_idx + k
            h = chunk.hyp_start_idx + k
            i = owner[r] if r < chunk.ref_end_idx else last
            last = i
            if chunk.type != "equal":
                errs[i] += 1
            if h < chunk.hyp_end_idx:
                got[i].append(hyp_words[h])
    return [{"ref": u["text"], "hyp": " ".join(g), "errors": e} for u, g, e in zip(utts, got, errs)]


def plot(result: dict, path: Path) -> None:
    """Bar chart: WER per set and column."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = ["old", "before", "after", "live"]
    names = list(result["sets"])
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.2
    for k, col in enumerate(cols):
        vals = [result["sets"][n]["wer"].get(col) for n in names]
        xs = [i + (k - 1.5) * width for i in range(len(names))]
        ax.bar([x for x, v in zip(xs, vals) if v is not None], [100 * v for v in vals if v is not None],
               width, label=col)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("WER %")
    ax.set_title("Default model WER per voice set (old runtime / before / after / live)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--old-python", help="python of a venv with the old revision's dependencies (moonshine-voice)")
    ap.add_argument("--old-tree", help="the old revision's tree (git archive 3e6d95f)")
    ap.add_argument("--before-rev", default="main")
    ap.add_argument("--runs", default="old,before,after,live")
    ap.add_argument("--live-speed", type=float, default=2.0)
    ap.add_argument("--meeting-minutes", type=float, default=0.0)
    ap.add_argument("--out", default=str(ROOT / "bench/results/voice_sets"))
    ap.add_argument("--live-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.live_child:
        live_child(args.live_child, args.live_speed)
        return
    runs = args.runs.split(",")
    notes = []
    if "old" in runs and not (args.old_python and args.old_tree):
        runs.remove("old")
        notes.append("old runtime skipped: give --old-python and --old-tree (git archive 3e6d95f, "
                     "a venv with moonshine-voice>=0.1.5,<0.2)")
    result: dict = {"load_before": os.getloadavg(), "runs": runs, "notes": notes, "before_rev": args.before_rev,
                    "old_tree": args.old_tree and "git archive 3e6d95f", "live_speed": args.live_speed, "sets": {}}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before_rev],
                          capture_output=True, text=True).stdout.strip()
    result["before_commit"] = head
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        before_tree = export(args.before_rev, tmp / "before") if "before" in runs or args.meeting_minutes else None
        # (python, tree, its own XDG_CACHE_HOME or None for the user's)
        trees = {"before": (sys.executable, before_tree, tmp / "cache-before"), "after": (sys.executable, ROOT, None)}
        if "old" in runs:
            trees["old"] = (args.old_python, Path(args.old_tree), None)
        for name in filter(None, args.sets.split(",")):
            wav = tmp / f"{name}.wav"
            utts = render_set(name, wav)
            ref = " ".join(u["text"] for u in utts)
            row: dict = {"sentences": len(utts), "audio_s": round(utts[-1]["end"], 1),
                         "voices": sorted({u["voice"] for u in utts}), "wer": {}, "rtf": {}, "rtf_wall": {},
                         "per_sentence": {}}
            for run in runs:
                got = live(wav, args.live_speed) if run == "live" else transcribe(*trees[run][:2], wav, trees[run][2])
                row["wer"][run] = wer(ref, got["text"])
                if "rtf_wall" in got:
                    row["rtf_wall"][run] = got["rtf_wall"]
                    row["rtf"][run] = got["rtf"]
                row["per_sentence"][run] = per_sentence(utts, got["text"])
                print(f"{name} {run}: WER {row['wer'][run]:.3f}", file=sys.stderr, flush=True)
            result["sets"][name] = row
        if args.meeting_minutes:
            from bench.meeting_audio import make_meeting

            wav = tmp / "meeting.wav"
            ref = " ".join(u.text for u in make_meeting(wav, args.meeting_minutes, seed=10))
            row = {"minutes": args.meeting_minutes, "wer": {}, "rtf": {}, "rtf_wall": {}}
            for run in ("before", "after"):
                got = transcribe(*trees[run][:2], wav, trees[run][2])
                row["wer"][run] = wer(ref, got["text"])
                row["rtf_wall"][run] = got["rtf_wall"]
                row["rtf"][run] = got["rtf"]
                print(f"meeting {run}: WER {row['wer'][run]:.4f} RTF {got['rtf']}", file=sys.stderr, flush=True)
            result["meeting"] = row
    result["load_after"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    if result["sets"]:
        plot(result, out.with_suffix(".png"))
    print(json.dumps({k: v["wer"] for k, v in result["sets"].items()} | {"meeting": result.get("meeting", {})}))


if __name__ == "__main__":
    main()
