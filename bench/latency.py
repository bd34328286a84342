"""Live caption latency of a backend: a meeting played in real time through the real path.

Renders a meeting with espeak-ng (bench/meeting_audio.py: several voices, 1-4 s pauses),
plays it live through ``FileSource(realtime=True)`` -> ``LiveCaptioner`` (or through the
GUI's ``EngineController`` on a QThread, offscreen, with ``--gui``), and measures:

* final and partial latency: wall time a text event was emitted minus the wall time its
  audio was played (``FileSource`` start + the event's stream end time); per event, and
  per word with word end times interpolated inside the event by character position
  (base-en gives no word timestamps); p50/p95/max. A partial's end time is the end of the
  audio its text covers: before issue 27.2 the default model's partial showed the whole
  re-decode and ended at the end of the decoded clip; since, it shows the steady words
  only and ends where the last of them ends, so it reads as later for the same cadence;
* partial update latency (``partial_update_latency_s``): a partial event's wall time minus
  the wall time the end of the audio its re-decode read was played (``TextDelta.heard``):
  how old the newest sound behind a screen update is, the measure issue 20's "partials in
  0.1-0.2 s" was taken with (the partial's end was the decoded clip's end then); None
  for code or backends that do not give ``heard``;
* per final word, when it first stood on screen for good (``word_shown_latency_s``: the
  first screen from which it, and every word before it, read as in the final text),
  minus its audio end: what a reader waits for a word, partials included;
* backlog over time (``LiveCaptioner.backlog_s`` sampled every second), dropped audio,
  notices;
* real-time factor (model busy seconds / audio seconds), CPU seconds per thread, engine
  overhead (CPU seconds of the capture + decode threads per wall second), RSS over time;
* WER of the final text against the rendered sentences (jiwer, normalised);
* caption stability: erased words per final word (``captioner/transcript/erasure.py``,
  DESIGN section 4: words a screen showed that the next one took back or changed; events
  of a source less than 50 ms apart are one screen), as shown and normalised. It is
  computed with this checkout's module for every run, the ``before`` code included.

Each configuration runs in its own child process, one after another in one invocation
(so they see the same machine load; ``os.getloadavg()`` is recorded before and after):

    python bench/latency.py --minutes 2 --runs before,after,gui,dual --out bench/results/latency_2min
    python bench/latency.py --minutes 20 --runs after --out bench/results/latency_20min

``before`` runs the code of git revision ``--before-rev`` (exported to a temporary
directory); ``after`` the working tree; ``gui`` the working tree through the Qt engine;
``dual`` two meetings at once (microphone + system audio: two sessions on one backend);
``words`` the working tree with a list of ``--hotwords`` invented hotwords (``bench/hotwords.py``'s
``synthetic_words``, none of them said); ``speakers`` the working tree with speaker attribution on
the played file (``--speakers auto``, issue 38); ``sounds`` the working tree with sound captions on
(YAMNet beside the model, issue 49). ``busy`` keeps another process spinning on one
core for the whole run (issue 48.3: a video call takes a core; :data:`SPIN`, pinned with
``os.sched_setaffinity`` and in a session of its own, the captioner left free on both cores;
``busy_core`` in the JSON says how much of the core it took), and ``--busy-core`` does that for
every run; ``--nice -10`` (root) runs each captioner and spinner above other people's jobs on a
shared machine (:func:`reniced`). Names join with ``-``: ``before-dual`` and ``before-words`` are
those runs on the ``before`` code (issue 40's memory side by side:
``--runs before,after,before-dual,dual,before-words,words``; issue 48.3's busy core:
``--runs before,nobudget,after,before-busy,nobudget-busy,busy --one-pass``, where ``nobudget`` is
the working tree with the line reader's :class:`~captioner.asr.moonshine.reading_budget.ReadingBudget`
off). ``waiting_audio_s`` is the audio waiting to be read, sampled every 0.1 s (p50/p95/max);
``readings`` what the line reader started and left out; ``other_cores`` how many cores the rest of
the machine took meanwhile; ``--one-pass`` adds the one-pass WER that live WER is held against.
Writes ``OUT.json`` and ``OUT.png``.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# -- measurement helpers (child) ------------------------------------------------------------------
def rss_mb() -> float:
    """Resident set size of this process (MB)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def read_events(path: str | os.PathLike) -> list[dict]:
    """The text events ``--events`` kept: one dict per line of ``path`` (``t``: wall s after the
    file started playing, ``source``, ``final``, ``start``, ``end`` in stream s, ``text``).

    ``OUT.RUN.events.jsonl.gz`` is gzip (how ``--events`` writes it and how ``bench/results``
    keeps it); a plain ``.jsonl`` (older runs) is read as it is.

    Raises:
        OSError: the file is missing or unreadable; ValueError: a line is not JSON.
    """
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) so far per thread of this process (Linux /proc).

    Python threads are named by their ``threading`` name (CPython 3.11 does not name OS
    threads); other threads (ONNX Runtime, Qt) by their OS name and id.
    """
    tick = os.sysconf("SC_CLK_TCK")
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
            fields = rest.split()
            name = names.get(int(tid)) or f"{head.split('(', 1)[1]}-{tid}"
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return out


def pct(values, q):
    """The ``q``-th percentile of ``values`` (None when empty)."""
    import numpy as np

    return round(float(np.percentile(values, q)), 3) if len(values) else None


def growth(rss: list[float]) -> float | None:
    """RSS growth (MB): median of the last tenth of the samples minus that of the first tenth."""
    import numpy as np

    if len(rss) < 2:
        return None
    k = max(1, len(rss) // 10)
    return round(float(np.median(rss[-k:]) - np.median(rss[:k])), 1)


def summary(values) -> dict:
    """p50/p95/max/mean/count of a list of seconds."""
    import numpy as np

    return {
        "p50": pct(values, 50),
        "p95": pct(values, 95),
        "max": round(float(max(values)), 3) if values else None,
        "mean": round(float(np.mean(values)), 3) if values else None,
        "n": len(values),
    }


def load_erasure():
    """``captioner/transcript/erasure.py`` of this checkout, loaded by path: the ``before``
    run imports another revision's ``captioner``, which may not have it."""
    spec = importlib.util.spec_from_file_location("_bench_erasure", ROOT / "captioner" / "transcript" / "erasure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


def stability(records) -> dict:
    """Erasure of a run: ``records`` are ``(wall s, event)`` in arrival order.

    Returns ``erasure`` (erased words per final word, words as shown), ``erasure_normalised``
    (words compared lower-cased without punctuation), ``erased_words``, ``final_words``,
    ``screens``.
    """
    er = load_erasure()
    shown, plain = er.erasure(records), er.erasure(records, normalise=True)
    ratio = (lambda r: round(r.ratio, 3) if r.ratio is not None else None)
    return {"erasure": ratio(shown), "erasure_normalised": ratio(plain), "erased_words": shown.erased_words,
            "final_words": shown.final_words, "screens": shown.screens}


def line_final_latency(final_events: list[dict]) -> list[float]:
    """Latency of the final events that complete a line (``final_events`` rows in order).

    Words LocalAgreement commits early are followed by the rest of their line, which starts
    exactly where they end; the event that completes a line is followed by one that starts
    later (the next line, after a pause) or by none.
    """
    out = []
    for i, ev in enumerate(final_events):
        nxt = next((e for e in final_events[i + 1:] if e["source"] == ev["source"]), None)
        if nxt is None or nxt["start"] > ev["end"]:
            out.append(ev["latency"])
    return out


def shown_latency(records, word_ends: dict[str, list[float]]) -> list[float]:
    """Seconds from each final word's audio end (``word_ends``: wall s per word, per source)
    to the first screen from which it stood as it finally reads (``erasure.first_shown``)."""
    shown = load_erasure().first_shown(records)
    return [t - end for src, ends in word_ends.items() for t, end in zip(shown.get(src, []), ends) if t is not None]


#: Seconds between two samples of the audio waiting to be read (``waiting_audio_s``).
WAIT_SAMPLE_S = 0.1


def reader_counts(backend) -> dict | None:
    """What the default model's line reader did over the run (None for another backend or a
    revision without these counters): readings started on the helpers, cancelled, left out
    late, and left out by the load-aware reading budget (issue 48.3)."""
    reader = getattr(backend, "_reader", None)
    if reader is None:
        return None
    names = ("started_at_once", "cancelled", "late", "shed_framed", "shed_retimed", "capped")
    out = {name: getattr(reader, name) for name in names if isinstance(getattr(reader, name, None), int)}
    budget = getattr(reader, "budget", None)
    levels = getattr(budget, "line_levels", None)
    if isinstance(levels, dict):
        out["lines_per_level"] = dict(levels)
        out["level_changes"] = list(getattr(budget, "changes", []))
        # per line: (level, audio waiting at its start s, wall s its reading took, unsure, capped)
        lines = list(getattr(budget, "lines", []))
        out["lines"] = lines
        out["line_waiting_at_start_s"] = summary([w for _, w, _, _, _ in lines])
        out["line_reading_s"] = summary([r for _, _, r, _, _ in lines])
        out["line_waiting_at_final_s"] = summary([w + r for _, w, r, _, _ in lines])
    return out


def child(args) -> None:
    """Run one configuration and print its JSON on stdout's last line."""
    sys.path.insert(0, args.code)
    import numpy as np

    from captioner.asr import load_backend
    from captioner.audio.filesource import FileSource
    from captioner.events import Notice, Stats, TextDelta

    sys.path.insert(1, str(ROOT))
    from tests.speech import normalize_words

    import jiwer

    files = args.files.split(",")
    refs = json.loads(Path(args.refs).read_text())
    labels = ["Meeting", "You"][: len(files)]
    threading.current_thread().name = "bench-main"
    t_load = time.perf_counter()
    if args.hotwords:  # an invented list, none of it said (bench/hotwords.py)
        from bench.hotwords import synthetic_words

        backend = load_backend("default", hotwords=synthetic_words(args.hotwords))
    else:
        backend = load_backend("default")
    load_s = time.perf_counter() - t_load
    rss_loaded = rss_mb()
    reader = getattr(backend, "_reader", None)
    if args.no_reading_budget and getattr(reader, "budget", None) is not None:
        reader.budget = None  # every line read in full, as before issue 48.3
    records: list[tuple[float, object]] = []
    lock = threading.Lock()

    def on_event(ev) -> None:
        now = time.monotonic()
        with lock:
            records.append((now, ev))

    sources = [FileSource(f, label=lab, realtime=True) for f, lab in zip(files, labels)]
    samples: list[dict] = []
    done = threading.Event()
    live_ref: dict = {}

    cpu_seen: dict[str, float] = {}

    def sampler() -> None:
        t0 = time.monotonic()
        while not done.wait(1.0):
            cpu_seen.update(thread_cpu())
            live = live_ref.get("live")
            backlog = live.backlog_s() if live is not None and live.is_running else 0.0
            samples.append({"t": round(time.monotonic() - t0, 2), "rss_mb": round(rss_mb(), 1),
                            "backlog_s": round(backlog, 3)})

    waiting: list[float] = []  # audio waiting to be read (s), every WAIT_SAMPLE_S while the run lasts

    def wait_sampler() -> None:
        while not done.wait(WAIT_SAMPLE_S):
            live = live_ref.get("live")
            if live is not None and live.is_running:
                waiting.append(live.backlog_s())

    threading.Thread(target=sampler, name="bench-sampler", daemon=True).start()
    threading.Thread(target=wait_sampler, name="bench-wait-sampler", daemon=True).start()
    wall0 = time.monotonic()
    cpu0 = thread_cpu()
    if args.gui:
        run_gui(backend, files, labels, on_event, live_ref)
    else:
        from captioner.engine.live import LiveCaptioner

        kw = {}
        if args.speakers != "off":
            from captioner.speakers.options import parse_speakers

            kw["speakers"] = parse_speakers(args.speakers)
        if args.sounds == "on":
            from captioner.engine.sound_captions import ON

            kw["sounds"] = ON
        live = LiveCaptioner(backend, sources, on_event, **kw)
        live_ref["live"] = live
        live.start()
        live.wait()
        sources = live.sources
    wall = time.monotonic() - wall0
    done.set()
    cpu1 = dict(cpu_seen)
    cpu1.update(thread_cpu())
    sources = live_ref.get("sources", sources)
    t0s = {s.label: s._t0 for s in sources}  # wall (monotonic) time the file started playing

    finals: dict[str, list] = {lab: [] for lab in labels}
    final_lat, final_word_lat, partial_lat, notices, last_stats = [], [], [], [], {}
    update_lat = []  # per partial event: its time minus the end of the audio its re-decode heard
    final_events = []  # one row per final event: for reading where the slow ones come from
    word_ends: dict[str, list[float]] = {}  # wall time each final word's audio ended, per source
    for now, ev in records:
        if isinstance(ev, TextDelta) and ev.source in t0s:
            t0 = t0s[ev.source]
            if ev.final and ev.text.strip():
                finals[ev.source].append(ev.text)
                final_lat.append(now - (t0 + ev.end))
                final_events.append({"source": ev.source, "start": round(ev.start, 2), "end": round(ev.end, 2),
                                     "latency": round(final_lat[-1], 3), "text": ev.text.strip()})
                words = ev.text.split()
                total = max(1, len(ev.text.strip()))
                pos = 0
                for w in words:
                    pos += len(w) + (1 if pos else 0)
                    w_end = ev.start + (ev.end - ev.start) * min(1.0, pos / total)
                    final_word_lat.append(now - (t0 + w_end))
                    word_ends.setdefault(ev.source, []).append(t0 + w_end)
            elif not ev.final and ev.text.strip():
                partial_lat.append(now - (t0 + ev.end))
                heard = getattr(ev, "heard", None)  # None: a backend (or revision) that does not say
                if heard is not None:
                    update_lat.append(now - (t0 + heard))
        elif isinstance(ev, Notice):
            notices.append({"code": ev.code, "severity": ev.severity, "message": ev.message, "source": ev.source})
        elif isinstance(ev, Stats):
            last_stats[ev.source] = ev
    audio_s = sum(sf_seconds(f) for f in files)
    wers = {}
    for f, lab in zip(files, labels):
        hyp = " ".join(t.strip() for t in finals[lab])
        wers[lab] = round(jiwer.wer(normalize_words(refs[f]), normalize_words(hyp)), 4)
    from captioner.engine.batcher import BatchEngine

    engine = BatchEngine.shared(backend)
    cpu = {k: round(cpu1.get(k, 0.0) - cpu0.get(k, 0.0), 2) for k in cpu1}
    overhead_cpu = sum(v for k, v in cpu.items() if k in ("captioner-capture", "captioner-decode"))
    warm = [s["rss_mb"] for s in samples if s["t"] >= 60.0] or [s["rss_mb"] for s in samples]
    budget = getattr(backend, "budget", None)
    result = {
        "config": args.name,
        "hotwords": args.hotwords,
        "code": args.code,
        "gui": bool(args.gui),
        "sources": labels,
        "audio_s": round(audio_s, 1),
        "wall_s": round(wall, 1),
        "load_s": round(load_s, 2),
        "final_latency_s": summary(final_lat),
        "final_word_latency_s": summary(final_word_lat),
        "final_events": final_events,
        "final_line_latency_s": summary(line_final_latency(final_events)),
        "partial_latency_s": summary(partial_lat),
        # issue 20's measure: how old the newest audio behind a partial update is when it is
        # emitted (the re-decoded clip's end, TextDelta.heard); the steady tail's words end earlier
        "partial_update_latency_s": summary(update_lat),
        "backlog_max_s": round(max((s["backlog_s"] for s in samples), default=0.0), 3),
        # the same backlog sampled every WAIT_SAMPLE_S (the 1 s timeline misses the peak a line's
        # reading leaves): the audio waiting to be read, p50/p95/max over the run
        "waiting_audio_s": summary(waiting),
        "dropped_s": round(sum(st.dropped_s for st in last_stats.values()), 3),
        "notices": [n for n in notices if n["code"] not in ("source_ended", "stopped")],
        "rtf": round(engine.busy_s / audio_s, 3) if audio_s else None,
        "model_busy_s": round(engine.busy_s, 1),
        # partial re-decodes on their own thread (not in model_busy_s, which is the engine's)
        "partial_thread_cpu_s": round(sum(v for k, v in cpu.items() if k.startswith("captioner-partial")), 1),
        "cpu_s_per_thread": cpu,
        "cpu_s_total": round(sum(cpu.values()), 1),
        "engine_overhead": round(overhead_cpu / wall, 4),
        "rss_mb": {"loaded": round(rss_loaded, 1), "warm_start": warm[0] if warm else None,
                   "max": max((s["rss_mb"] for s in samples), default=None),
                   "end": samples[-1]["rss_mb"] if samples else None},
        # median of the last tenth minus median of the first tenth after warm-up (60 s):
        # transient peaks of one decode are not growth
        "rss_growth_after_warmup_mb": growth(warm),
        "wer": wers,
        "stability": stability(records),
        # per final word: when it first stood on screen for good (partial or final, as it
        # finally reads) minus when it was played (its end, interpolated as above)
        "word_shown_latency_s": summary(shown_latency(records, word_ends)),
        "partials_shed": getattr(budget, "shed", None),
        "partials_granted": getattr(budget, "granted", None),
        "readings": reader_counts(backend),
        "timeline": samples,
    }
    if args.events_out:
        opener = gzip.open if args.events_out.endswith(".gz") else open  # gzip: ~7x smaller
        with opener(args.events_out, "wt", encoding="utf-8") as f:
            for now, ev in records:
                if isinstance(ev, TextDelta) and ev.source in t0s:
                    f.write(json.dumps({"t": round(now - t0s[ev.source], 3), "source": ev.source, "final": ev.final,
                                        "start": round(ev.start, 3), "end": round(ev.end, 3), "text": ev.text}) + "\n")
    print(json.dumps(result))


def run_gui(backend, files, labels, on_event, live_ref) -> None:
    """Play the files through the GUI engine (EngineController on a QThread, offscreen)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QCoreApplication, QTimer

    from captioner.engine import qt_controller as qc
    from captioner.engine import qt_worker as qw
    from captioner.engine.live import LiveCaptioner

    app = QCoreApplication.instance() or QCoreApplication([])

    def pipeline_factory(be, sources, emit):
        live = LiveCaptioner(be, sources, emit)
        live_ref["live"] = live
        live_ref["sources"] = sources
        return live

    worker = qw.EngineWorker(backend_factory=lambda cfg: backend, pipeline_factory=pipeline_factory)
    ctl = qc.EngineController(worker)
    ctl.event.connect(on_event)  # delivered in the GUI thread, as the window receives them
    ctl.stopped.connect(app.quit)
    specs = tuple(qw.SourceSpec("file", lab, path=f) for f, lab in zip(files, labels))
    QTimer.singleShot(0, lambda: ctl.start(qw.EngineConfig(sources=specs)))
    app.exec()
    ctl.shutdown()


def sf_seconds(path: str) -> float:
    import soundfile as sf

    info = sf.info(path)
    return info.frames / info.samplerate


# -- parent -----------------------------------------------------------------------------------------
def export_rev(rev: str, dest: Path) -> Path:
    """Export git revision ``rev`` of this repository into ``dest``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)
    return dest


def one_pass_wer(code: str, wav: str, ref: str) -> dict:
    """WER of ``captioner transcribe`` (the file path: every line read in full, no partials) of
    ``wav`` with the code in ``code``, against ``ref``: what a live run's WER is compared with."""
    import re

    import jiwer

    from tests.speech import normalize_words

    env = dict(os.environ, PYTHONPATH=code)
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "captioner", "transcribe", wav, "--format", "txt", "--speakers", "off"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=code)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:]}
    hyp = " ".join(re.sub(r"^\[[0-9:.]+\]\s*", "", line) for line in proc.stdout.splitlines())
    return {"wer": round(jiwer.wer(normalize_words(ref), normalize_words(hyp)), 4),
            "wall_s": round(time.monotonic() - t0, 1)}


def cpu_busy_s() -> tuple[float, float] | None:
    """``(busy CPU seconds of the whole machine so far, CPU seconds of this process's waited-for
    children so far)`` (Linux ``/proc/stat``; None elsewhere): over a run, their differences
    give how many cores other programs took meanwhile (``other_cores``)."""
    import resource

    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(ticks[:3]) + sum(ticks[5:8])  # user nice system, irq softirq steal (not idle, iowait)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return busy / os.sysconf("SC_CLK_TCK"), kids.ru_utime + kids.ru_stime


#: The other program of a ``busy`` run: a pure-Python loop at normal priority, pinned to one core
#: (as a video call takes a core; the captioner's own threads stay free to use both).
SPIN = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def start_busy_core(nice: int = 0) -> tuple[subprocess.Popen, int]:
    """Start the other program of a ``busy`` run (:data:`SPIN`) on the last core this process
    may use, at niceness ``nice`` (that of the captioner: :func:`reniced`); returns the process
    and that core's number."""
    cpu = max(os.sched_getaffinity(0))
    return subprocess.Popen([sys.executable, "-c", SPIN, str(cpu)], start_new_session=True,
                            preexec_fn=reniced(nice)), cpu


def reniced(nice: int):
    """A ``preexec_fn`` for a child started in a session of its own (``start_new_session``): its
    niceness and, where Linux groups the CPU time by session (``sched_autogroup``: then the nice
    value counts only within a session), its session's, plus ``nice``; None for 0.

    A run's captioner and its spinning process each get a session, as two programs of a desktop
    do; with ``--nice -10`` (root) both run above the other sessions of a shared machine (a
    session at niceness 0 then gets about a tenth of a core it shares), so that a run measures
    "2 cores, one taken by another program" rather than whatever else the machine runs."""
    if not nice:
        return None

    def apply() -> None:
        os.nice(nice)
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(nice))
        except OSError:  # no autogroup here (or no right): the nice value alone
            pass

    return apply


def stop_busy_core(proc: subprocess.Popen) -> float | None:
    """End the spinning process; returns the CPU seconds it used (None where /proc cannot say)."""
    try:
        with open(f"/proc/{proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu_s = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        cpu_s = None
    proc.kill()
    proc.wait()
    return cpu_s


def plot(results: list[dict], path: Path, title: str) -> None:
    """Backlog and RSS over time, latency distributions: one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for r in results:
        t = [s["t"] for s in r["timeline"]]
        axes[0].plot(t, [s["backlog_s"] for s in r["timeline"]], label=r["config"])
        axes[1].plot(t, [s["rss_mb"] for s in r["timeline"]], label=r["config"])
    axes[0].axhline(2.0, color="grey", ls="--", lw=0.8)
    axes[0].set(title="backlog (s behind)", xlabel="wall time (s)", ylabel="s")
    axes[1].set(title="resident memory", xlabel="wall time (s)", ylabel="MB")
    names = [r["config"] for r in results]
    x = range(len(results))
    for i, key in enumerate(("p50", "p95", "max")):
        axes[2].bar([xi + i * 0.13 for xi in x], [r["final_word_latency_s"][key] or 0 for r in results], 0.13,
                    label=f"final {key}")
        axes[2].bar([xi + (i + 3) * 0.13 for xi in x], [r["partial_latency_s"][key] or 0 for r in results], 0.13,
                    label=f"partial {key}", hatch="//")
    axes[2].axhline(1.5, color="grey", ls="--", lw=0.8)
    axes[2].set_xticks([xi + 0.33 for xi in x], names)
    axes[2].set(title="latency after the words were played", ylabel="s")
    axes[2].set_yscale("log")
    shown = [(r.get("stability") or {}).get("erasure") or 0 for r in results]
    plain = [(r.get("stability") or {}).get("erasure_normalised") or 0 for r in results]
    axes[3].bar([xi - 0.2 for xi in x], shown, 0.4, label="words as shown")
    axes[3].bar([xi + 0.2 for xi in x], plain, 0.4, label="normalised", hatch="//")
    for xi, v in zip(x, shown):
        axes[3].annotate(f"{v:.2f}", (xi - 0.2, v), ha="center", va="bottom", fontsize=8)
    axes[3].axhline(0.3, color="grey", ls="--", lw=0.8)
    axes[3].set_xticks(list(x), names)
    axes[3].set(title="erasure: erased words per final word", ylabel="words / final word")
    for ax in axes:
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=2.0, help="length of the meeting")
    ap.add_argument("--runs", default="before,after", help="comma list of: before, after, gui, dual")
    ap.add_argument("--before-rev", default="3e6d95f", help="git revision for the 'before' run")
    ap.add_argument("--out", default="bench/results/latency", help="output path without suffix")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(ROOT), help=argparse.SUPPRESS)
    ap.add_argument("--files", help=argparse.SUPPRESS)
    ap.add_argument("--refs", help=argparse.SUPPRESS)
    ap.add_argument("--name", default="", help=argparse.SUPPRESS)
    ap.add_argument("--gui", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--events", action="store_true",
                    help="also write each run's text events (wall s after the file started, source, final, "
                         "start, end, text) to OUT.RUN.events.jsonl.gz (gzip; read_events reads it), "
                         "for reading where erasure comes from")
    ap.add_argument("--events-out", help=argparse.SUPPRESS)
    ap.add_argument("--hotwords", type=int, default=500,
                    help="words in the list of a 'words' run (default 500; the child: 0 = no list)")
    ap.add_argument("--speakers", default="off", help=argparse.SUPPRESS)  # the child: speaker attribution
    ap.add_argument("--sounds", default="off", help=argparse.SUPPRESS)  # the child: sound captions (issue 49)
    ap.add_argument("--one-pass", action="store_true",
                    help="also give the one-pass WER (captioner transcribe) of the meeting with each code run "
                         "(before, working tree): what live WER is held against")
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness added to each run's captioner and spinning process (root may give -10: "
                         "they then run above other people's jobs on a shared machine)")
    ap.add_argument("--no-reading-budget", action="store_true", help=argparse.SUPPRESS)  # the child
    ap.add_argument("--busy-core", action="store_true",
                    help="every run with another process spinning on one core (as the 'busy' part of a run "
                         "name does for that run: --runs before,after,before-busy,busy)")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sys.path.insert(0, str(ROOT))
    from bench.meeting_audio import make_meeting

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        a, b = tmp / "meeting_a.wav", tmp / "meeting_b.wav"
        refs = {str(a): " ".join(u.text for u in make_meeting(a, args.minutes, seed=10))}
        runs = args.runs.split(",")
        if any("dual" in run.split("-") for run in runs):
            refs[str(b)] = " ".join(u.text for u in make_meeting(b, args.minutes, seed=11))
        (tmp / "refs.json").write_text(json.dumps(refs))
        before_dir = None
        for run in runs:
            code = str(ROOT)
            parts = run.split("-")  # e.g. "before-dual": the dual run on the before code
            if "before" in parts:
                before_dir = before_dir or export_rev(args.before_rev, Path(tempfile.mkdtemp(dir=tmp)))
                code = str(before_dir)
            files = f"{a},{b}" if "dual" in parts else str(a)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--code", code, "--files", files,
                   "--refs", str(tmp / "refs.json"), "--name", run] + (["--gui"] if "gui" in parts else [])
            cmd += ["--hotwords", str(args.hotwords if "words" in parts else 0)]
            if "nobudget" in parts:  # the working tree with its line reader's budget off (issue 48.3)
                cmd += ["--no-reading-budget"]
            if "speakers" in parts:  # the file source attributed to speakers, as system audio is (issue 38)
                cmd += ["--speakers", "auto"]
            if "sounds" in parts:  # the working tree with sound captions on, as the app runs (issue 49)
                cmd += ["--sounds", "on"]
            if args.events:
                cmd += ["--events-out", str(out.with_name(f"{out.name}.{run}.events.jsonl.gz").resolve())]
            env = dict(os.environ, PYTHONPATH=code, QT_QPA_PLATFORM="offscreen")
            busy = "busy" in parts or args.busy_core
            spinner, spin_cpu = start_busy_core(args.nice) if busy else (None, None)
            load_before = os.getloadavg()
            cpu_before = cpu_busy_s()
            t_run = time.monotonic()
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=code,
                                      start_new_session=True, preexec_fn=reniced(args.nice))
            finally:
                spin_s = stop_busy_core(spinner) if spinner is not None else None
            run_wall = time.monotonic() - t_run
            cpu_after = cpu_busy_s()
            try:
                r = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):
                r = None
            if r is None:
                print(proc.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"run {run} failed")
            if proc.returncode != 0:  # measured in full, then the process died at exit (issue 30.2)
                r["exit_status"] = proc.returncode
                r["exit_stderr"] = proc.stderr.strip()[-300:]
            r["loadavg_before"] = [round(x, 2) for x in load_before]
            r["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
            r["nice"] = args.nice  # of the captioner and its spinning process, relative to this script
            # cores the rest of the machine took during the run (not this run's captioner nor its
            # spinning process): the other developers' work on a shared machine
            r["other_cores"] = None if cpu_before is None or cpu_after is None else round(
                ((cpu_after[0] - cpu_before[0]) - (cpu_after[1] - cpu_before[1])) / run_wall, 2)
            # the other program of a busy run: which core it was pinned to, and how much of that
            # core it really took over the run (its CPU seconds per wall second)
            r["busy_core"] = None if spinner is None else {
                "what": "a pure-Python spin loop in its own process, nice 0, pinned to one core "
                        "(os.sched_setaffinity); the captioner unpinned",
                "cpu": spin_cpu, "cpu_s": spin_s,
                "share_of_core": None if spin_s is None else round(spin_s / run_wall, 3)}
            if "before" in parts:
                r["code"] = f"git {args.before_rev}"
            elif r.get("code") == str(ROOT):
                r["code"] = "working tree"
            results.append(r)
            brief = {k: r.get(k) for k in ("config", "final_line_latency_s", "final_word_latency_s", "partial_latency_s",
                                            "partial_update_latency_s", "word_shown_latency_s",
                                        "backlog_max_s", "waiting_audio_s", "partials_shed", "other_cores",
                                        "dropped_s", "rtf", "wer", "stability", "engine_overhead",
                                        "rss_growth_after_warmup_mb")}
            brief["readings"] = {k: v for k, v in (r.get("readings") or {}).items() if k != "lines"}
            print(json.dumps(brief), file=sys.stderr)
        one_pass = {}
        if args.one_pass:  # after the live runs, with nothing spinning
            for run_code, name in sorted({(r["code"], "before" if r["code"].startswith("git") else "after")
                                          for r in results}):
                path = str(before_dir) if name == "before" else str(ROOT)
                one_pass[name] = dict(one_pass_wer(path, str(a), refs[str(a)]), code=run_code)
                print(json.dumps({"one_pass": name, **one_pass[name]}), file=sys.stderr)
    report = {
        "command": "python bench/latency.py " + " ".join(sys.argv[1:]),
        "one_pass_wer": one_pass or None,
        "minutes": args.minutes,
        "cpu_count": os.cpu_count(),
        "note": "2-core development machine shared with other work: see loadavg per run",
        "runs": results,
    }
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    plot(results, out.with_suffix(".png"), f"{args.minutes:g}-minute meeting played live, {os.cpu_count()} cores")
    print(json.dumps({r["config"]: {"final_word_p95": r["final_word_latency_s"]["p95"],
                                    "partial_p95": r["partial_latency_s"]["p95"],
                                    "partial_update_p95": (r.get("partial_update_latency_s") or {}).get("p95"),
                                    "final_line_p95": r["final_line_latency_s"]["p95"],
                                    "erasure": r["stability"]["erasure"], "wer": r["wer"],
                                    "backlog_max_s": r["backlog_max_s"], "dropped_s": r["dropped_s"],
                                    "waiting_audio_p95_max": [(r.get("waiting_audio_s") or {}).get(k)
                                                              for k in ("p95", "max")]}
                      for r in results}))


if __name__ == "__main__":
    main()
