"""Who is speaking (issue 38): speaker attribution on multi-voice meetings, scored against the
sentences' known voices.

Inputs (rendered at run time, nothing big is committed):

* ``set1``, ``set2``, ``set3``: the espeak-ng sets of ``bench/voice_sets.py``;
* ``quick``: a new set where four voices recur many times and alternate quickly (0.3-0.8 s
  pauses, often shorter than the default model's line cut, so lines hold two voices);
* ``meeting``: the ``--meeting-minutes`` meeting of ``bench/meeting_audio.py``;
* ``one``: real recorded speech of one speaker (``beckett.wav``, shipped in the moonshine-cpp
  wheel the suite already uses) and, with ``--faults``, silence, noise and a tone.

For each input, what ``captioner transcribe`` does (the default model, one pass, the file read
ahead) runs in a child process twice: the tree ``--tree`` (default: this working tree) with
``--speakers auto`` (labels) and the git revision ``--before-rev`` exported with ``git
archive`` (no attribution), for the real-time factor side by side; the child also records the
final lines the speaker tracker was given and what it made of them. Scores, per input:

* ``accuracy``: the share of sentences whose label (the label of the final text that overlaps the
  sentence most in time) is their voice's after the best one-to-one mapping of labels to voices
  (Hungarian, scipy); a sentence with no text counts as wrong;
* ``speakers``: labels found against voices in the truth;
* ``der``: diarization error rate, ``pyannote.metrics`` (no collar, overlap counted);
* the same three with voices grouped by *timbre*: espeak-ng's accent-only voices (``en-us``,
  ``en-gb``, ``en-gb-x-rp``, ``en-gb-scotland``, ``en-029``, ... with no ``+variant``) are one
  synthesiser voice with other pronunciation rules, which a speaker embedding cannot tell
  apart (GE2E: 0.84-0.89 between them against 0.86-0.93 within one); a ``+variant`` changes
  pitch and formants and is a voice of its own.

``--replay`` re-runs only the labelling of the recorded lines (no decoding), for tuning.
``--live`` plays each input in real time through the live path (``LiveCaptioner``, as system
audio is captioned: partials, early commits of agreed words and all) on both trees with
attribution on, and scores the labelled finals the same way.

    python bench/speakers.py --meeting-minutes 20 --out bench/results/speakers
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

import warnings

import numpy as np

warnings.filterwarnings("ignore", message="'uem' was approximated")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the mark of doubt (captioner.speakers.clustering.UNSURE; written out: the 'before' tree lacks it)
UNSURE = "Speaker ?"

QUICK_SENTENCES = [
    "Are you ready?", "Yes, I am ready now.", "Good, then let us start with the budget.",
    "The budget is almost finished.", "How much is left for travel?", "About two thousand euros.",
    "That should be enough.", "I agree.", "What about the new hires?", "Two people start in March.",
    "Do they have laptops yet?", "Not yet, the order is late.", "Can you call the supplier today?",
    "Sure, I will call after lunch.", "Thanks.", "Next point, the office move.",
    "We move on the fifteenth.", "Is the new office bigger?", "Yes, it has two meeting rooms.",
    "Great, we need those.", "Who packs the server room?", "The support team does that.",
    "Fine, any other questions?", "No, that is all from me.", "Then we are done for today.",
    "See you next week.", "Bye everyone.", "Goodbye.",
]
QUICK_VOICES = ["en-us", "en-us+f3", "en-gb+m4", "en-029+f1"]


def timbre(voice: str) -> str:
    """A voice's timbre: its ``+variant`` when it has one, else espeak-ng's default voice."""
    return voice.split("+", 1)[1] if "+" in voice else "default"


def render_quick(path: Path) -> list[dict]:
    """The quick-alternation set: sentence i by ``QUICK_VOICES[pattern]``, 0.3-0.8 s pauses."""
    import soundfile as sf

    from bench.meeting_audio import RATE, _espeak

    rng = random.Random(38)
    parts = [np.zeros(int(0.5 * RATE), np.float32)]
    t, out, prev = 0.5, [], -1
    with tempfile.TemporaryDirectory() as tmp:
        for text in QUICK_SENTENCES:
            k = rng.choice([i for i in range(len(QUICK_VOICES)) if i != prev])
            prev = k
            voice, wpm = QUICK_VOICES[k], rng.randint(150, 185)
            speech = _espeak(text, voice, wpm, Path(tmp) / "u.wav")
            out.append({"text": text, "voice": voice, "start": round(t, 3), "end": round(t + len(speech) / RATE, 3)})
            gap = int(rng.uniform(0.3, 0.8) * RATE)
            parts += [speech, np.zeros(gap, np.float32)]
            t += (len(speech) + gap) / RATE
    audio = np.concatenate(parts)
    audio += np.random.default_rng(38).normal(0, 1e-3, len(audio)).astype(np.float32)
    sf.write(path, np.clip(audio, -1, 1), RATE, subtype="PCM_16")
    return out


def render(name: str, folder: Path, minutes: float) -> tuple[Path, list[dict]]:
    """Write input ``name`` to ``folder``; returns its path and its sentences (``voice`` per sentence)."""
    wav = folder / f"{name}.wav"
    if name.startswith("set"):
        from bench.voice_sets import render_set

        return wav, render_set(name, wav)
    if name == "quick":
        return wav, render_quick(wav)
    if name == "meeting":
        from bench.meeting_audio import make_meeting

        utts = make_meeting(wav, minutes)
        return wav, [{"text": u.text, "voice": u.voice, "start": u.start, "end": u.end} for u in utts]
    if name.startswith("nat"):
        from bench.natural_voices import render_natural

        return wav, render_natural(name, wav, minutes or 20)
    if name in ("endgame", "cities"):  # real recordings in moonshine-voice's assets (bench extra)
        import importlib.util

        import soundfile as sf
        import soxr

        folder = Path(list(importlib.util.find_spec("moonshine_voice").submodule_search_locations)[0]) / "assets"
        src = folder / ("endgame_nagg_nell.wav" if name == "endgame" else "two_cities.wav")
        a, sr = sf.read(src, dtype="float32", always_2d=True)
        a = soxr.resample(a.mean(axis=1), sr, 16000).astype(np.float32)
        sf.write(wav, a, 16000, subtype="PCM_16")
        # no sentence times: only the number of labels is scored (two actors / one reader)
        return wav, [{"text": "", "voice": name, "start": 0.0, "end": len(a) / 16000, "speakers": 2 if name == "endgame" else 1}]
    if name == "one":
        import soundfile as sf
        import soxr

        src = Path(__import__("moonshine_cpp").__file__).parent / "test-data" / "beckett.wav"
        a, sr = sf.read(src, dtype="float32", always_2d=True)
        a = soxr.resample(a.mean(axis=1), sr, 16000).astype(np.float32)
        sf.write(wav, a, 16000, subtype="PCM_16")
        return wav, [{"text": "", "voice": "beckett", "start": 0.0, "end": len(a) / 16000}]
    import soundfile as sf

    rng = np.random.default_rng(7)
    n = 60 * 16000
    if name == "silence":
        a = np.zeros(n, np.float32)
    elif name == "noise":
        a = (0.1 * rng.standard_normal(n)).astype(np.float32)
    else:  # "tone": a chord, the simplest music
        t = np.arange(n) / 16000
        a = (0.1 * (np.sin(2 * np.pi * 220 * t) + np.sin(2 * np.pi * 277 * t) + np.sin(2 * np.pi * 330 * t))).astype(np.float32)
    sf.write(wav, a, 16000, subtype="PCM_16")
    return wav, []


# -- child: one transcribe run, recording the tracker's lines ------------------------------------
def child(tree: str, wav: str, out: str, speakers: str) -> None:
    sys.path.insert(0, tree)
    speakers, _, mode = speakers.partition(":")
    record = {"lines": [], "labelled": []}
    if speakers != "none":
        from captioner.events import TextDelta
        from captioner.speakers import tracker

        real = tracker.SpeakerTracker.label

        def label(self, events):
            t0 = time.process_time()
            got = real(self, events)
            record.setdefault("cpu_s", 0.0)
            record["cpu_s"] += time.process_time() - t0
            record["lines"] += [dict(text=e.text, start=e.start, end=e.end) for e in events
                                if isinstance(e, TextDelta) and e.final and e.text.strip()]
            record["labelled"] += [dict(text=e.text, start=e.start, end=e.end, speaker=e.speaker) for e in got
                                   if isinstance(e, TextDelta) and e.final and e.text.strip()]
            return got

        tracker.SpeakerTracker.label = label
    try:
        from captioner.asr.moonshine.line_pool import WORKERS
    except ImportError:  # a tree from before the asr/ subpackages (issue 50)
        from captioner.asr.line_pool import WORKERS
    from captioner.audio.fileio import load_audio
    from captioner.engine.batcher import BatchEngine
    from captioner.engine.readahead import ReadAhead
    from captioner.engine.session import StreamingSession
    from captioner.engine.turn_models import preload
    from captioner.asr import load_backend

    if mode == "live":  # the file played in real time through the live path, as system audio is
        live_record(wav, speakers, record)
        Path(out).write_text(json.dumps(record))
        os._exit(0)  # the record is out: skip interpreter teardown
    # what `captioner transcribe` does (captioner/commands/transcribe.py), in this process
    preload()
    t0 = time.perf_counter()
    backend = load_backend("default", None, partials=False, line_workers=WORKERS)
    audio = load_audio(wav, backend.sample_rate)
    kw = {}
    if speakers != "none":
        from captioner.speakers.options import parse_speakers
        from captioner.speakers.tracker import make_tracker
        try:
            from captioner.speakers.registry import new_registry
        except ImportError:  # a tree from before issue 51
            from captioner.speakers.tracker import new_registry

        opts = parse_speakers(speakers)
        registry = new_registry(opts)
        kw["speakers"] = make_tracker(opts, "file", backend.sample_rate, registry)
    session = StreamingSession(BatchEngine(backend, max_wait_ms=0.0), Path(wav).name, None, **kw)
    block = backend.geometry.chunk_step
    ahead = ReadAhead(session, (audio[i: i + block] for i in range(0, len(audio), block)))
    events = []
    for _ in range(0, len(audio), block):
        events += next(ahead, [])
    events += ahead.close()
    events += session.end()
    if speakers != "none" and hasattr(registry, "second_pass"):  # what transcribe saves (issue 51)
        from captioner.events import TextDelta
        from captioner.speakers.recluster import relabel_events

        t1 = time.process_time()
        again = relabel_events(events, registry.second_pass(renumber=True))
        record["second_pass_cpu_s"] = time.process_time() - t1
        record["first_pass"] = record["labelled"]
        record["labelled"] = [dict(text=e.text, start=e.start, end=e.end, speaker=e.speaker) for e in again
                              if isinstance(e, TextDelta) and e.final and e.text.strip()]
    record["wall_s"] = time.perf_counter() - t0
    record["code"] = 0
    if speakers == "none":
        from captioner.events import TextDelta

        record["lines"] = [dict(text=e.text, start=e.start, end=e.end) for e in events
                           if isinstance(e, TextDelta) and e.final and e.text.strip()]
    import resource

    record["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out).write_text(json.dumps(record))


def live_record(wav: str, speakers: str, record: dict) -> None:
    """``wav`` through ``LiveCaptioner`` in real time (partials, early commits and all) with
    attribution ``speakers``; the final deltas as labelled go to ``record["labelled"]``."""
    from captioner.asr import load_backend
    from captioner.audio.filesource import FileSource
    from captioner.engine.live import LiveCaptioner
    from captioner.events import TextDelta
    from captioner.speakers.options import parse_speakers

    finals: list[dict] = []  # as the live path emits them (the tracker hook records its own copy)

    def on_event(ev) -> None:
        if isinstance(ev, TextDelta) and ev.final and ev.text.strip():
            finals.append(dict(text=ev.text, start=ev.start, end=ev.end, speaker=ev.speaker))
        elif type(ev).__name__ == "SpeakerFix":  # a shown line corrected (issue 51): as the transcript does
            for f in finals:
                if min(f["end"], ev.end) - max(f["start"], ev.start) >= 0.5 * (f["end"] - f["start"]):
                    f["speaker"] = ev.speaker

    t0 = time.perf_counter()
    live = LiveCaptioner(load_backend("default"), [FileSource(wav, label="Meeting", realtime=True)], on_event,
                         speakers=parse_speakers(speakers))
    live.start()
    live.wait()
    record["wall_s"] = time.perf_counter() - t0
    record["labelled"] = finals
    record["code"] = 0


def run_child(tree: Path, wav: Path, speakers: str, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    with open(str(out) + ".log", "w") as log:
        subprocess.run([sys.executable, __file__, "--child", str(tree), str(wav), str(out), speakers],
                       check=True, env=env, cwd=str(tree), stderr=log)
    return json.loads(out.read_text())


# -- scoring --------------------------------------------------------------------------------------
def sentence_labels(utts: list[dict], labelled: list[dict]) -> list[str]:
    """The label of each sentence: the speaker of the final text overlapping it most ('' if none)."""
    out = []
    for u in utts:
        best, best_ov = "", 0.0
        for d in labelled:
            ov = min(u["end"], d["end"]) - max(u["start"], d["start"])
            if ov > best_ov:
                best, best_ov = d["speaker"], ov
        out.append(best)
    return out


def score(utts: list[dict], labelled: list[dict], key=lambda v: v) -> dict:
    """accuracy / speakers / der of ``labelled`` against ``utts`` with voices mapped by ``key``."""
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate
    from scipy.optimize import linear_sum_assignment

    voices = sorted({key(u["voice"]) for u in utts})
    labels = [lab if lab != UNSURE else "" for lab in sentence_labels(utts, labelled)]  # doubt: not right
    found = sorted({d["speaker"] for d in labelled if d["speaker"] and d["speaker"] != UNSURE})
    cost = np.zeros((len(found), len(voices)))
    for lab, u in zip(labels, utts):
        if lab:
            cost[found.index(lab), voices.index(key(u["voice"]))] -= 1
    rows, cols = linear_sum_assignment(cost) if found else ([], [])
    mapping = {found[r]: voices[c] for r, c in zip(rows, cols)}
    right = sum(1 for lab, u in zip(labels, utts) if lab and mapping.get(lab) == key(u["voice"]))
    ref, hyp = Annotation(), Annotation()
    for u in utts:
        ref[Segment(u["start"], u["end"])] = key(u["voice"])
    for d in labelled:
        if d["end"] > d["start"] and d["speaker"]:
            hyp[Segment(d["start"], d["end"])] = d["speaker"]
    der = float(DiarizationErrorRate()(ref, hyp)) if utts else 0.0
    unsure = sum(1 for lab in sentence_labels(utts, labelled) if lab == UNSURE)
    wrong = len(utts) - right - unsure
    return {"accuracy": right / len(utts) if utts else 1.0, "speakers": len(found), "truth": len(voices),
            "der": der, "unsure": unsure, "wrong": wrong}


def line_faults(utts: list[dict], labelled: list[dict], least_s: float = 0.3) -> dict:
    """Faults a reader sees in the lines (issue 51): ``mixed_lines``, labelled finals that hold
    speech of two voices (each overlapping the final by at least ``least_s`` s, or by half of a
    shorter sentence); ``split_sentences``, sentences whose text went to two different labels."""
    def overlap(a: dict, b: dict) -> float:
        return min(a["end"], b["end"]) - max(a["start"], b["start"])

    mixed = 0
    for d in labelled:
        voices = {u["voice"] for u in utts
                  if overlap(u, d) >= min(least_s, 0.5 * (u["end"] - u["start"]))}
        mixed += len(voices) > 1
    split = 0
    for u in utts:
        labels = {d["speaker"] for d in labelled if d["speaker"]
                  and overlap(u, d) >= min(least_s, 0.5 * (d["end"] - d["start"]))}
        split += len(labels) > 1
    return {"mixed_lines": mixed, "lines": len(labelled), "split_sentences": split, "sentences": len(utts)}


def scores(name: str, utts: list[dict], labelled: list[dict]) -> dict:
    """Every score of one input: by voice (and by timbre for espeak-ng inputs), the line faults,
    and for the real recordings without sentence times only the number of labels."""
    found = sorted({d["speaker"] for d in labelled if d["speaker"] and d["speaker"] != UNSURE})
    if utts and "speakers" in utts[0]:
        return {"labels": found, "speakers": len(found), "truth": utts[0]["speakers"]}
    out = {"voices": score(utts, labelled), "labels": found}
    if not name.startswith("nat"):
        out["timbre"] = score(utts, labelled, timbre)
    if utts and utts[0]["text"]:
        out["line_faults"] = line_faults(utts, labelled)
    return out


def replay(wav: Path, lines: list[dict], second_pass: bool = True) -> list[dict]:
    """Label recorded final lines again with the working tree's tracker (no decoding)."""
    from captioner.audio.fileio import load_audio
    from captioner.events import TextDelta
    from captioner.speakers.options import AUTO
    from captioner.speakers.tracker import SpeakerTracker

    audio = load_audio(str(wav), 16000)
    tr = SpeakerTracker(AUTO)
    fed, got = 0, []
    for ln in lines:
        upto = min(len(audio), int((ln["end"] + 3.0) * 16000))
        if upto > fed:
            tr.feed(audio[fed:upto], fed)
            fed = upto
        got += tr.label([TextDelta(ln["text"], ln["start"], ln["end"], True, "x")])
    if second_pass and hasattr(tr.registry, "second_pass"):
        from captioner.speakers.recluster import relabel_events

        got = relabel_events(got, tr.registry.second_pass(renumber=True))
    return [dict(text=e.text, start=e.start, end=e.end, speaker=e.speaker) for e in got if isinstance(e, TextDelta)]


def export(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--inputs", default="set1,set2,set3,quick,one,nat4,nat6quick,nat12blend,nat_backchannel,"
                                         "endgame,cities")
    ap.add_argument("--faults", action="store_true", help="also silence, noise and a tone (no speaker expected)")
    ap.add_argument("--meeting-minutes", type=float, default=0.0,
                    help="add the M-minute meetings (espeak-ng and natural voices)")
    ap.add_argument("--before-rev", default="HEAD", help="revision without attribution, for the RTF side by side")
    ap.add_argument("--before-tree", help="an exported tree to use as 'before' instead of --before-rev")
    ap.add_argument("--no-before", action="store_true", help="skip the before runs")
    ap.add_argument("--before-labels", action="store_true",
                    help="the before tree labels speakers too (its accuracy beside the after tree's) instead of "
                         "running without attribution")
    ap.add_argument("--replay", help="a results JSON of an earlier run: label its recorded lines again")
    ap.add_argument("--live", action="store_true",
                    help="play each input in real time through the live path instead (early commits and all): "
                         "'before' is then --before-tree/--before-rev with attribution on too")
    ap.add_argument("--work", help="folder for the rendered audio (default: a temporary one)")
    ap.add_argument("--tree", default=str(ROOT), help="the tree measured as 'after'")
    ap.add_argument("--out", default=str(ROOT / "bench/results/speakers"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    work = Path(args.work or tempfile.mkdtemp(prefix="speakers-"))
    work.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.inputs.split(",") if n]
    if args.meeting_minutes:
        names += ["meeting", "nat_meeting"]
    if args.faults:
        names += ["silence", "noise", "tone"]
    result: dict = {"machine": f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d"), "inputs": {}}
    if args.replay:
        old = json.loads(Path(args.replay).read_text())
        for name, r in old["inputs"].items():
            if args.inputs != ap.get_default("inputs") and name not in names:
                continue
            wav, utts = render(name, work, args.meeting_minutes or 20)
            result["inputs"][name] = {"first_pass": scores(name, utts, replay(wav, r["lines"], False)),
                                      **scores(name, utts, replay(wav, r["lines"]))}
            print(name, json.dumps(result["inputs"][name]), flush=True)
        if args.out:
            Path(args.out + ".json").write_text(json.dumps(result, indent=1))
        return
    before_tree = None if args.no_before else (
        Path(args.before_tree) if args.before_tree else export(args.before_rev, work / "before"))
    if args.live:
        for name in names:
            wav, utts = render(name, work, args.meeting_minutes)
            entry = {"audio_s": _duration(wav), "sentences": utts}
            for side, tree in (("before", before_tree), ("after", Path(args.tree))):
                if tree is None:
                    continue
                r = run_child(tree, wav, "auto:live", work / f"{name}.{side}.live.json")
                entry[side] = {**scores(name, utts, r["labelled"]),
                               "finals": len(r["labelled"]), "labelled": r["labelled"]}
                print(name, side, json.dumps({k: v for k, v in entry[side].items() if k != "labelled"}), flush=True)
            result["inputs"][name] = entry
        Path(args.out + ".json").write_text(json.dumps(result, indent=1))
        return
    for name in names:
        wav, utts = render(name, work, args.meeting_minutes)
        after = run_child(Path(args.tree), wav, "auto", work / f"{name}.after.json")
        entry = {"audio_s": _duration(wav), **scores(name, utts, after["labelled"]),
                 "first_pass": scores(name, utts, after.get("first_pass", after["labelled"])),
                 "second_pass_cpu_s": after.get("second_pass_cpu_s", 0.0), "after_wall_s": after["wall_s"],
                 "after_max_rss_mb": after["max_rss_mb"], "attribution_cpu_s": after.get("cpu_s", 0.0),
                 "lines": after["lines"], "labelled": after["labelled"], "sentences": utts}
        if before_tree is not None:
            before = run_child(before_tree, wav, "auto" if args.before_labels else "none", work / f"{name}.before.json")
            entry.update(before_wall_s=before["wall_s"], before_max_rss_mb=before["max_rss_mb"])
            if args.before_labels:  # the labels the before tree gives, scored the same way
                entry["before"] = {**scores(name, utts, before["labelled"]),
                                   "attribution_cpu_s": before.get("cpu_s", 0.0)}
        for k in ("after", "before"):
            if f"{k}_wall_s" in entry:
                entry[f"{k}_rtf"] = entry[f"{k}_wall_s"] / entry["audio_s"]
        entry["attribution_cpu_share"] = entry["attribution_cpu_s"] / entry["audio_s"]
        result["inputs"][name] = entry
        brief = {k: v for k, v in entry.items() if k not in ("lines", "labelled", "sentences")}
        print(name, json.dumps(brief), flush=True)
    Path(args.out + ".json").write_text(json.dumps(result, indent=1))


def _duration(wav: Path) -> float:
    import soundfile as sf

    return sf.info(str(wav)).duration


if __name__ == "__main__":
    main()
