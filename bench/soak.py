"""Eight hours without growth: the whole GUI app captioning hours of audio at a faster pace.

Runs :class:`captioner.ui.app.CaptionerApp` (main window with its transcript pane, the caption
overlay, the crash-recovery journal and the continuous autosave on) offscreen, with the built-in
default model (or ``--backend fake``: the suite's fake one-word-per-chunk model, for a quick
check of everything but the model), on a synthetic meeting (``bench/meeting_audio.py``, rendered
once and looped) played by a file source as fast as the model keeps up: the source's clock runs
``--speed`` times real time, and stands still while more than ``--max-behind`` seconds of audio
wait for the model (so nothing is dropped and the run goes at the model's own pace).

Every ``--sample-s`` seconds of audio it records: resident memory (``/proc/self/status``: VmRSS,
RssAnon, RssFile; glibc's ``mallinfo2`` in-use and free heap), Python's allocated blocks, the
lateness of a 50 ms ``Qt.PreciseTimer`` on the GUI thread over the window (p50/p99/max: how
responsive the event loop stays), the transcript pane's size (blocks, characters), the overlay's
lines, the journal's bytes, the transcript's characters and the GUI thread's longest time in
the timed autosave (the whole write before the fix, taking the snapshot after it). With
``--tracemalloc`` it also takes a Python heap snapshot every ``--snap-s`` seconds of audio and
keeps the 12 lines that grew most between consecutive snapshots. Cycles are collected on the
GUI thread as in ``run_gui`` (:mod:`captioner.ui.main_thread_gc`); the summary counts those
collections per generation and gives the longest of each (what one held the GUI thread).

At the end (the audio has been played, the run stops as a file source ends) it times Save as…
(TXT and SRT) of the whole transcript and checks that the TXT has every segment.

Writes ``OUT.json`` and ``OUT.png`` (RSS and timer lateness over audio time). Run from the repo
root (load of a shared 2-core machine matters: ``loadavg`` is in the JSON)::

    QT_QPA_PLATFORM=offscreen python bench/soak.py --hours 8 --out bench/results/soak_8h
    QT_QPA_PLATFORM=offscreen python bench/soak.py --hours 1 --tree /tmp/before --out /tmp/soak_before

``--tree`` runs another checkout's ``captioner`` (e.g. ``git archive`` of the branch point) with
this script.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=8.0, help="hours of audio to play")
    ap.add_argument("--speed", type=float, default=30.0, help="most x real time the source plays")
    ap.add_argument("--max-behind", type=float, default=2.0, help="the source waits while this much audio (s) is queued")
    ap.add_argument("--meeting-minutes", type=float, default=20.0, help="length of the looped meeting")
    ap.add_argument("--sample-s", type=float, default=60.0, help="seconds of audio between samples")
    ap.add_argument("--backend", choices=("default", "fake"), default="default")
    ap.add_argument("--tree", default=None, help="run another checkout's captioner package")
    ap.add_argument("--tracemalloc", action="store_true", help="Python heap snapshots (slows the run)")
    ap.add_argument("--snap-s", type=float, default=3600.0, help="seconds of audio between heap snapshots")
    ap.add_argument("--max-wall-s", type=float, default=0.0,
                    help="press Stop after this many seconds of wall time (0: play all the audio)")
    ap.add_argument("--out", default="bench/results/soak_8h", help="output path without suffix")
    ap.add_argument("--compare", nargs="+", metavar="LABEL=JSON",
                    help="only plot earlier results on one figure (e.g. before=a.json after=b.json) to OUT.png")
    return ap.parse_args()


ARGS = _args() if __name__ == "__main__" else None
if ARGS is not None and ARGS.tree:
    sys.path.insert(0, str(Path(ARGS.tree).resolve()))
sys.path.insert(1 if ARGS is not None and ARGS.tree else 0, str(HERE))  # bench/, tests/ of this checkout

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


# -- measurements --------------------------------------------------------------------------------
def proc_status() -> dict:
    """VmRSS, RssAnon, RssFile of this process (MB)."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = round(int(rest.split()[0]) / 1024.0, 2)
    return out


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mallinfo():
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    return fn


MALLINFO = _mallinfo()


def malloc_mb() -> dict:
    """glibc heap: bytes in use (uordblks + mmapped hblkhd) and free inside the arenas (fordblks), MB."""
    if MALLINFO is None:
        return {}
    m = MALLINFO()
    return {"malloc_used": round((m.uordblks + m.hblkhd) / 2**20, 2), "malloc_free": round(m.fordblks / 2**20, 2)}


def pct(values, q: float) -> float:
    if not len(values):
        return 0.0
    s = sorted(values)
    return float(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))])


def slope_per_hour(xs_s, ys) -> float:
    """Least-squares slope of ``ys`` over ``xs_s`` (seconds), per hour."""
    n = len(xs_s)
    if n < 2:
        return 0.0
    mx, my = sum(xs_s) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs_s)
    return 3600.0 * sum((x - mx) * (y - my) for x, y in zip(xs_s, ys)) / sxx if sxx else 0.0


# -- the looped, paced file ------------------------------------------------------------------------
def make_source_class():
    from captioner.audio.filesource import FileSource

    class LoopedFile(FileSource):
        """A file looped up to ``total_s`` seconds, paced at ``speed`` x real time by a clock that
        stands still while ``behind()`` (seconds of audio queued for the model) exceeds ``max_behind``."""

        def __init__(self, path, total_s, speed, behind, max_behind, **kw):
            self._virt = 0.0
            self._last = time.monotonic()
            self._behind = behind
            self._max_behind = max_behind
            super().__init__(path, realtime=True, speed=speed, clock=self._clock, **kw)
            self.total_s = float(total_s)

        def _clock(self) -> float:
            return self._virt

        def _advance(self) -> None:
            now = time.monotonic()
            dt, self._last = min(now - self._last, 0.2), now
            if self._behind() <= self._max_behind:
                self._virt += dt

        def audio_s(self) -> float:
            f = self._file
            if f is not None:
                self._rate = f.samplerate
            rate = getattr(self, "_rate", None)
            return self._frames_read / rate if rate else 0.0

        def _pump(self) -> None:
            f = self._file
            if f is None or self.finished or not self.is_running:
                return
            self._advance()
            rate = f.samplerate
            total = int(self.total_s * rate)
            due = min(int((self._virt - self._t0) * self.speed * rate), total) - self._frames_read
            block = max(1, int(self.block_s * rate))
            if self._frames_read + due < total:
                due -= due % block
            while due > 0:
                data = f.read(due, dtype="float32", always_2d=True)
                if len(data) == 0:
                    f.seek(0)  # loop the meeting
                    continue
                self._frames_read += len(data)
                due -= len(data)
                for i in range(0, len(data), block):
                    self._push(data[i: i + block])
            if self._frames_read >= total:
                self.finished = True
                if self.wakeup is not None:
                    self.wakeup.set()

        def seconds_until_due(self) -> float:
            return 0.0 if self.finished else 0.02

    return LoopedFile


def make_fake():
    """A model-free backend for the rest of the app: in voiced 100 ms chunks it says the meeting's
    words in order, one final word every third chunk (~3 words a second, a fast speaker) with the
    next word as a partial in between; sentences end with their full stop."""
    import numpy as np

    from bench.meeting_audio import SENTENCES
    from captioner.asr.base import StepResult
    from captioner.events import TextDelta
    from tests.audio_fakes import FakeBackend

    words = " ".join(SENTENCES).split()

    class MeetingWords(FakeBackend):
        def step(self, rows):
            out = []
            for row in rows:
                state = row.state if row.state is not None else {"k": 0, "n": 0}
                events = []
                if row.audio is not None:
                    n_real = int(round((row.end - row.start) * 16000))
                    real = row.audio[:n_real]
                    if n_real and float(np.sqrt(np.mean(real.astype(np.float64) ** 2))) > self.threshold:
                        state["n"] += 1
                        word = words[state["k"] % len(words)]
                        if state["n"] % 3 == 0:
                            state["k"] += 1
                            events.append(TextDelta(word + " ", row.start, row.end))
                        else:
                            events.append(TextDelta(word, row.start, row.end, final=False))
                out.append(StepResult(state, events))
            return out

    return MeetingWords(batch_size=1)


# -- the run -----------------------------------------------------------------------------------------
def run(args, hold: dict | None = None) -> dict:
    """Play ``args.hours`` of the looped meeting through the whole app; returns the result dict.

    ``hold``, when given, receives the app as ``hold["app"]`` (the suite's version closes it)."""
    from PySide6.QtCore import QEventLoop, Qt, QTimer
    from PySide6.QtWidgets import QApplication

    import captioner
    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import (
        EngineWorker,
        default_backend_factory,
        default_pipeline_factory,
    )
    from captioner.events import Stats
    from captioner.ui.app import CaptionerApp

    try:
        from captioner.ui.main_thread_gc import MainThreadGC
    except ImportError:  # --tree of a checkout before it: automatic collection, as that app had
        MainThreadGC = None
    from captioner.ui.settings import Keys, Settings

    tmp = Path(tempfile.mkdtemp(prefix="soak-", dir=getattr(args, "workdir", None)))
    os.environ["CAPTIONER_DATA_DIR"] = str(tmp / "data")
    cache = Path(tempfile.gettempdir()) / f"soak_meeting_{args.meeting_minutes:g}min.wav"
    if not cache.exists():
        from bench.meeting_audio import make_meeting

        make_meeting(str(cache) + ".part.wav", args.meeting_minutes)
        os.replace(str(cache) + ".part.wav", cache)

    qapp = QApplication.instance() or QApplication([])
    total_s = args.hours * 3600.0
    holder: dict = {}
    LoopedFile = make_source_class()

    def behind() -> float:
        p = holder.get("pipeline")
        try:
            return p.backlog_s() if p is not None else 0.0
        except Exception:  # noqa: BLE001 - a pipeline between states
            return 0.0

    def source_factory(specs, backend):
        src = LoopedFile(str(cache), total_s, args.speed, behind, args.max_behind, label="Meeting",
                         target_rate=backend.sample_rate)
        holder["source"] = src
        return [src]

    def pipeline_factory(backend, sources, on_event, **kw):
        p = default_pipeline_factory(backend, sources, on_event, **kw)
        holder["pipeline"] = p
        return p

    if args.backend == "fake":
        def backend_factory(config):
            return make_fake()
    else:
        backend_factory = default_backend_factory

    settings = Settings.from_file(str(tmp / "captioner.ini"))
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(cache))
    (tmp / "autosave").mkdir()
    settings.set(Keys.AUTOSAVE_ENABLED, True)
    settings.set(Keys.AUTOSAVE_DIR, str(tmp / "autosave"))
    settings.set(Keys.OVERLAY_VISIBLE, True)
    controller = EngineController(EngineWorker(backend_factory, source_factory, pipeline_factory))
    app = CaptionerApp(settings, controller)
    # as run_gui does: cycles are collected on the GUI thread only
    collector = MainThreadGC() if MainThreadGC is not None else None
    if collector is not None:
        collector.start()
    app.show()
    if hold is not None:
        hold["app"] = app
    win = app.window
    rec = win.recorder

    # the slowest autosave write per sample window (it runs on the GUI thread)
    autosave_ms = array.array("f")
    orig_autosave = getattr(rec, "write_autosave_later", rec.write_autosave)  # the timer's slot

    def timed_autosave():
        t0 = time.perf_counter()
        orig_autosave()
        autosave_ms.append(1000.0 * (time.perf_counter() - t0))

    rec._timer.timeout.disconnect()
    rec._timer.timeout.connect(timed_autosave)

    # event-loop responsiveness: a precise 50 ms single-shot timer, re-armed each time
    late = array.array("f")
    tick = QTimer()
    tick.setSingleShot(True)
    tick.setTimerType(Qt.TimerType.PreciseTimer)
    expected = [0.0]

    def on_tick():
        now = time.perf_counter()
        late.append(1000.0 * max(0.0, now - expected[0]))
        expected[0] = now + 0.05
        tick.start(50)

    tick.timeout.connect(on_tick)

    stopped = []
    controller.stopped.connect(lambda: stopped.append(time.monotonic()))
    errors = []
    controller.error.connect(lambda m, c: errors.append((c, m)) or print("engine error:", c, m, file=sys.stderr))
    stats = {}
    controller.stats.connect(lambda st: stats.__setitem__("last", st) if isinstance(st, Stats) else None)

    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
    snaps = []
    last_snap = [None]
    samples = []
    load0 = os.getloadavg()
    t_start = time.monotonic()
    win.start()
    expected[0] = time.perf_counter() + 0.05
    tick.start(50)
    next_sample = [args.sample_s]
    next_snap = [args.snap_s]

    def journal_bytes() -> int:
        p = rec.journal_path
        try:
            return os.path.getsize(p) if p else 0
        except OSError:
            return 0

    def sample(audio_s: float) -> None:
        doc = win.transcript_view.editor.document()
        lat = list(late)
        del late[:]
        asv = list(autosave_ms)
        del autosave_ms[:]
        t = rec.transcript
        row = {
            "audio_s": round(audio_s, 1),
            "wall_s": round(time.monotonic() - t_start, 1),
            **proc_status(),
            **malloc_mb(),
            "py_blocks": sys.getallocatedblocks(),
            "late_p50_ms": round(pct(lat, 0.5), 2),
            "late_p99_ms": round(pct(lat, 0.99), 2),
            "late_max_ms": round(max(lat, default=0.0), 2),
            "ticks": len(lat),
            "autosave_max_ms": round(max(asv, default=0.0), 1),
            "pane_blocks": doc.blockCount(),
            "pane_chars": doc.characterCount(),
            "overlay_lines": len(app.overlay.model.lines),
            "segments": len(t.segments),
            "transcript_chars": sum(len(s.text) for s in t.segments),
            "journal_bytes": journal_bytes(),
            "rtf": round(getattr(stats.get("last"), "rtf", 0.0), 3),
            "load1": round(os.getloadavg()[0], 2),
        }
        samples.append(row)
        print(json.dumps(row), flush=True)

    def snapshot(audio_s: float) -> None:
        import tracemalloc

        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if last_snap[0] is not None:
            top = snap.compare_to(last_snap[0], "lineno")[:12]
            snaps.append({"audio_s": round(audio_s), "top_growth": [
                {"where": str(s.traceback[0]), "size_diff_kb": round(s.size_diff / 1024, 1), "count_diff": s.count_diff}
                for s in top]})
            print(json.dumps(snaps[-1]), flush=True)
        last_snap[0] = snap

    def poll():
        src = holder.get("source")
        if src is None:
            return
        a = src.audio_s()
        if a >= next_sample[0]:
            sample(a)
            next_sample[0] += args.sample_s
        if args.tracemalloc and a >= next_snap[0] - args.snap_s and (last_snap[0] is None or a >= next_snap[0]):
            snapshot(a)
            if a >= next_snap[0]:
                next_snap[0] += args.snap_s

    poller = QTimer()
    poller.timeout.connect(poll)
    poller.start(250)
    pressed_stop = False
    # Block for events as app.exec() does (the 250 ms poller wakes it): processEvents(flags, ms)
    # never waits, so a loop of it spins the GUI thread at 100 % of a core, racing the engine
    # threads for the GIL and the CPU -- not what a user's app does.
    wait = QEventLoop.ProcessEventsFlag.AllEvents | QEventLoop.ProcessEventsFlag.WaitForMoreEvents
    while not stopped:
        qapp.processEvents(wait)
        if errors:
            break
        if args.max_wall_s and not pressed_stop and time.monotonic() - t_start > args.max_wall_s:
            pressed_stop = True
            win.stop()  # out of time: Stop as a user would; what was captioned is measured
    poller.stop()
    tick.stop()
    wall = time.monotonic() - t_start
    src = holder.get("source")
    sample(src.audio_s() if src is not None else 0.0)

    # Save as… of everything the window shows
    if errors:
        raise SystemExit(f"the run failed: {errors}")
    t = rec.transcript
    segs = [s for s in t.segments if s.text.strip()]
    saves = {}
    for fmt in ("txt", "srt"):
        path = tmp / f"all.{fmt}"
        t0 = time.perf_counter()
        win.save_transcript(str(path))
        saves[fmt] = {"s": round(time.perf_counter() - t0, 3), "bytes": path.stat().st_size}
    txt_lines = [ln for ln in (tmp / "all.txt").read_text(encoding="utf-8").splitlines() if ln.strip()]
    transcript_chars = sum(len(s.text) for s in t.segments)
    jb = journal_bytes()
    doc = win.transcript_view.editor.document()

    def window(lo, hi, key="late_p99_ms"):
        return [r[key] for r in samples if lo <= r["audio_s"] < hi]

    warm = [r for r in samples if r["audio_s"] >= 600]
    rss_slope = slope_per_hour([r["audio_s"] for r in warm], [r["VmRSS"] for r in warm])
    last_hour = max(0.0, samples[-1]["audio_s"] - 3600) if samples else 0.0
    journal = rec.journal_path
    result = {
        "journal": str(journal) if journal else None,
        "saved_txt": str(tmp / "all.txt"),
        "tree": args.tree or "this checkout",
        "captioner": str(Path(captioner.__file__).parent),
        "backend": args.backend,
        "hours": args.hours,
        "stopped_at_max_wall": pressed_stop,
        "audio_s": samples[-1]["audio_s"] if samples else 0.0,
        "wall_s": round(wall, 1),
        "audio_per_wall": round((samples[-1]["audio_s"] if samples else 0.0) / max(wall, 1e-9), 2),
        "errors": errors,
        "loadavg_start": [round(x, 2) for x in load0],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "summary": {
            "rss_mb_at_10min": next((r["VmRSS"] for r in samples if r["audio_s"] >= 600), None),
            "rss_mb_end": samples[-1]["VmRSS"] if samples else None,
            "rss_slope_mb_per_h_after_10min": round(rss_slope, 2),
            "late_p99_ms_minute_1": window(0, 61)[0] if window(0, 61) else None,
            "late_p99_ms_last_hour_max_window": max(window(last_hour, 1e9), default=None),
            "late_p99_ms_last_hour_median_window": pct(window(last_hour, 1e9), 0.5) if samples else None,
            "autosave_ms_max_last_hour": max(window(last_hour, 1e9, "autosave_max_ms"), default=None),
            "pane_blocks_end": doc.blockCount(),
            # cycles are collected on the GUI thread (captioner.ui.main_thread_gc): how often, and
            # the longest hold of the GUI thread per generation
            "gc_collections": list(collector.collections) if collector else None,
            "gc_longest_ms": [round(x * 1000, 1) for x in collector.longest_s] if collector else None,
            "pane_chars_end": doc.characterCount(),
            "segments": len(segs),
            "transcript_chars": transcript_chars,
            "journal_bytes": jb,
            "journal_bytes_per_char": round(jb / max(1, transcript_chars), 2),
            "save": saves,
            "save_txt_has_every_segment": len(txt_lines) >= len(segs),
            "txt_lines": len(txt_lines),
        },
        "snapshots": snaps,
        "samples": samples,
    }
    app.shutdown()
    if collector is not None:
        collector.stop()
    return result


def plot(result: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = result["samples"]
    h = [r["audio_s"] / 3600 for r in s]
    fig, axes = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    axes[0].plot(h, [r["VmRSS"] for r in s], label="RSS")
    axes[0].plot(h, [r.get("RssAnon", 0) for r in s], label="RSS anonymous")
    if s and "malloc_used" in s[0]:
        axes[0].plot(h, [r["malloc_used"] for r in s], label="malloc in use")
    axes[0].set_ylabel("MB")
    sm = result["summary"]
    axes[0].set_title(f"{result['backend']} model, {result['audio_s'] / 3600:.1f} h of audio in "
                      f"{result['wall_s'] / 60:.0f} min; RSS slope after 10 min "
                      f"{sm['rss_slope_mb_per_h_after_10min']:+.1f} MB/h")
    axes[0].legend(loc="lower right")
    axes[1].plot(h, [r["late_p99_ms"] for r in s], label="p99")
    axes[1].plot(h, [r["late_p50_ms"] for r in s], label="p50")
    axes[1].axhline(50, color="red", lw=0.8, ls="--", label="50 ms target")
    axes[1].set_ylabel("GUI timer lateness, ms")
    axes[1].legend(loc="upper right")
    axes[2].plot(h, [r["pane_chars"] / 1000 for r in s], label="pane, k chars")
    axes[2].plot(h, [r["journal_bytes"] / 1e6 * 100 for r in s], label="journal, 10 kB")
    axes[2].plot(h, [r["transcript_chars"] / 1000 for r in s], label="transcript, k chars")
    axes[2].set_xlabel("audio played, hours")
    axes[2].legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def plot_compare(pairs: list[str], out: Path) -> None:
    """RSS and the p99 timer lateness of several runs over audio time, on one figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for pair in pairs:
        label, _, path = pair.partition("=")
        r = json.loads(Path(path).read_text())
        s = r["samples"]
        h = [x["audio_s"] / 3600 for x in s]
        sm = r["summary"]
        axes[0].plot(h, [x["VmRSS"] for x in s],
                     label=f"{label}: {sm['rss_slope_mb_per_h_after_10min']:+.1f} MB/h after 10 min")
        axes[1].plot(h, [x["late_p99_ms"] for x in s], label=label, lw=0.8)
    axes[0].set_ylabel("RSS, MB")
    axes[0].legend(loc="lower right")
    axes[1].axhline(50, color="red", lw=0.8, ls="--", label="50 ms target")
    axes[1].set_ylabel("GUI timer lateness p99 per minute of audio, ms")
    axes[1].set_xlabel("audio played, hours")
    axes[1].legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main() -> None:
    args = ARGS
    if args.compare:
        plot_compare(args.compare, Path(args.out).with_suffix(".png"))
        return
    result = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for key in ("journal", "saved_txt", "captioner"):  # this machine's temporary paths: not results
        result.pop(key, None)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    try:
        plot(result, out.with_suffix(".png"))
    except ImportError as exc:
        print(f"no plot: {exc}", file=sys.stderr)
    print(json.dumps(result["summary"], indent=1))
    sys.stdout.flush()
    os._exit(0)  # the engine thread and ONNX Runtime's pools are not the measurement


if __name__ == "__main__":
    main()
