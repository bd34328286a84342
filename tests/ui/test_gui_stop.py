"""GUI Stop and Quit return within 2 s whatever the model does (DESIGN), with the text kept.

The real live pipeline (``LiveCaptioner``) and file source run under the Qt worker with a fake
model that either hangs inside a call or falls far behind; the stop is bounded by
``captioner.engine.stopping`` (the rule ``captioner listen`` uses).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import soundfile as sf
from PySide6.QtCore import QCoreApplication

from captioner.engine.qt_controller import EngineController
from captioner.engine.qt_worker import (
    EngineConfig,
    EngineWorker,
    SourceSpec,
    default_pipeline_factory,
)
from captioner.engine.stopping import DRAIN_S, FLUSH_S
from captioner.events import Notice, Stats, TextDelta
from tests.audio_fakes import FakeBackend, tone

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]


class HangingBackend(FakeBackend):
    """Says w1, w2 (one per 100 ms chunk), then its next call blocks until :attr:`release` is set."""

    def __init__(self) -> None:
        super().__init__(batch_size=1)
        self.hung = threading.Event()
        self.release = threading.Event()

    def step(self, rows):
        if any(r.state is not None and r.state["k"] >= 2 for r in rows):
            self.hung.set()
            self.release.wait(30)
        return super().step(rows)


class SlowBackend(FakeBackend):
    """Decodes at half real time: each 100 ms chunk costs 50 ms of (simulated) compute."""

    def step(self, rows):
        time.sleep(0.05)  # the model's compute time, not a synchronisation
        return super().step(rows)


def _controller(tmp_path, backend, seconds: float, realtime: bool):
    from captioner.audio.filesource import FileSource

    wav = tmp_path / "talk.wav"
    sf.write(wav, tone(seconds, 16000), 16000)

    def sources(specs, be):
        return [FileSource(str(wav), label=s.label, realtime=realtime, target_rate=be.sample_rate) for s in specs]

    ctl = EngineController(EngineWorker(lambda config: backend, sources, default_pipeline_factory))
    events: list = []
    ctl.event.connect(events.append)
    return ctl, events


def _finals(events) -> list[str]:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.final).split()


def _timed_stop(qtbot, ctl) -> float:
    t0 = time.monotonic()
    with qtbot.waitSignal(ctl.stopped, timeout=5000):
        ctl.stop()
    return time.monotonic() - t0


def test_stop_with_a_hung_model_returns_within_2_s_and_keeps_the_text(qtbot, tmp_path):
    backend = HangingBackend()
    ctl, events = _controller(tmp_path, backend, 30.0, realtime=True)
    try:
        with qtbot.waitSignal(ctl.started, timeout=5000):
            ctl.start(EngineConfig(sources=(SourceSpec("file", "Meeting"),)))
        qtbot.waitUntil(backend.hung.is_set, timeout=5000)
        qtbot.waitUntil(lambda: _finals(events) == ["w1", "w2"], timeout=5000)
        took = _timed_stop(qtbot, ctl)
        assert took < 2.0, took
        assert _finals(events) == ["w1", "w2"]
        told = [e for e in events if isinstance(e, Notice) and e.code == "stop_skipped"]
        assert len(told) == 1 and "could not be captioned in time" in told[0].message
        assert "did not answer" in told[0].message
        n = len(events)
        backend.release.set()  # the abandoned call returns now: nothing of it may arrive after stopped()
        qtbot.waitUntil(lambda: not ctl.worker._model_busy(), timeout=5000)  # its thread has ended
        QCoreApplication.sendPostedEvents()  # anything it emitted would be queued by now
        assert len(events) == n
    finally:
        backend.release.set()
        assert ctl.shutdown(10000)


def test_stop_with_a_10_s_backlog_returns_within_2_s_and_says_what_was_skipped(qtbot, tmp_path):
    ctl, events = _controller(tmp_path, SlowBackend(batch_size=1), 20.0, realtime=False)
    try:
        with qtbot.waitSignal(ctl.started, timeout=5000):
            ctl.start(EngineConfig(sources=(SourceSpec("file", "Meeting"),)))
        # the file is read far faster than the model decodes: wait until 10 s are queued
        qtbot.waitUntil(lambda: any(isinstance(e, Stats) and e.backlog_s >= 10.0 for e in events), timeout=10000)
        took = _timed_stop(qtbot, ctl)
        assert took < 2.0, took
        words = _finals(events)
        assert words == [f"w{i}" for i in range(1, len(words) + 1)]  # every word decoded in time is kept
        assert 2 <= len(words) < 150  # 200 chunks would take 10 s
        (told,) = [e for e in events if isinstance(e, Notice) and e.code == "stop_skipped"]
        skipped = float(told.message.split("The last ")[1].split(" s ")[0])
        # >= 10 s queued, of which the 1 s drain decodes about 2 s
        assert 7.0 < skipped < 18.0, (skipped, words)
        # every 0.1 s chunk of the 20 s file is either captioned (one word) or told as skipped: the
        # audio inside the model call when the drain ran out is decoded in the flush, not skipped
        # (issue 30.1: it was counted as both, 0.1-0.4 s too many, on a slow machine and a fast one)
        assert abs(skipped + 0.1 * len(words) - 20.0) < 0.051, (skipped, len(words))
        assert "did not answer" not in told.message
    finally:
        assert ctl.shutdown(10000)


QUIT_SCRIPT = r"""
import os, signal, sys, threading
sys.path.insert(0, {root!r})
from tests.audio_fakes import FakeBackend
import captioner.asr

class Hanging(FakeBackend):  # w1, w2, then stuck inside a call for good (a deadlocked GPU)
    def step(self, rows):
        if any(r.state is not None and r.state["k"] >= 2 for r in rows):
            print("hung", flush=True)
            threading.Event().wait()
        return super().step(rows)

captioner.asr.load_backend = lambda *a, **k: Hanging(batch_size=1)
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from captioner.ui import app as gui_app
from captioner.ui.main_window import MainWindow
from captioner.ui.settings import Keys, Settings

MainWindow.ask_unsaved = lambda self: "discard"
settings = Settings.from_file({ini!r})
settings.set(Keys.SOURCE_MODE, "file")
settings.set(Keys.FILE, {wav!r})
if {mode!r} == "quit":  # the Quit action once the model hangs; SIGTERM otherwise (sent by the test)
    QTimer.singleShot(0, lambda: threading.Thread(target=lambda: (sys.stdin.readline(), QTimer.singleShot(
        0, QApplication.instance(), lambda: next(w for w in QApplication.topLevelWidgets()
                                            if isinstance(w, MainWindow)).quit_action.trigger())),
        daemon=True).start())
rc = gui_app.run_gui(["captioner"], settings=settings, autostart=True)
import time
print("returned", time.monotonic(), file=sys.stderr, flush=True)  # the stop is over, the journal written
sys.exit(rc)
"""


@pytest.mark.parametrize("how", ["quit", "SIGTERM"])
def test_quit_with_a_hung_model_exits_the_app_within_2_s(tmp_path, how):
    """The real GUI entry (offscreen) with a model stuck inside a call: Quit (or SIGTERM) ends the
    process at the stop bound, and the autosave journal holds what was decoded."""
    import signal

    wav = tmp_path / "talk.wav"
    sf.write(wav, tone(60.0, 16000), 16000)
    data = tmp_path / "data"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", CAPTIONER_DATA_DIR=str(data),
               CAPTIONER_CONFIG_DIR=str(tmp_path / "config"), XDG_RUNTIME_DIR=str(tmp_path),
               PYTHONPATH=str(ROOT))
    script = QUIT_SCRIPT.format(root=str(ROOT), ini=str(tmp_path / "captioner.ini"), wav=str(wav), mode=how)
    errors = tmp_path / "stderr.txt"
    with open(errors, "w", encoding="utf-8") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err_file, text=True, env=env)
        try:
            line = proc.stdout.readline()
            assert line == "hung\n", line + errors.read_text(encoding="utf-8")
            t0 = time.monotonic()
            if how == "quit":
                proc.stdin.write("quit\n")
                proc.stdin.flush()
            else:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            finally:
                took = time.monotonic() - t0
        finally:
            proc.kill()
            proc.wait()
    err = errors.read_text(encoding="utf-8")
    assert proc.returncode == 0, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("returned ")]  # monotonic: system-wide
    assert float(line.split()[1]) - t0 < DRAIN_S + FLUSH_S + 0.5, err  # the stop bound (2 s), journal written
    assert took < DRAIN_S + FLUSH_S + 3.0, (took, err)  # and the interpreter's exit after it (slow at load > 10)
    journals = [p for p in data.rglob("*") if p.is_file() and "w2" in p.read_text(encoding="utf-8", errors="replace")]
    assert journals, sorted(str(p) for p in data.rglob("*"))
