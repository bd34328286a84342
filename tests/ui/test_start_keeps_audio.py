"""The first Start keeps what is said from the click on while the model loads (issue 27.3).

A fake model whose load takes 3 s, a live fake microphone that hears a speaker who starts
talking at the click (0.3 s of silence, then five words), the real live pipeline and the real
window: every word is captioned, the first one included, and the run catches up. Before, the
sources were opened only once the model had loaded, 3 s later: every word was lost.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from ui_fakes import CHUNK, DelayedWordBackend, speech, write_wav

from captioner.engine.qt_controller import EngineController
from captioner.engine.qt_worker import EngineWorker, default_pipeline_factory
from captioner.events import Level, TextDelta
from tests.audio_fakes import Speaker, SpeakerSource

pytestmark = pytest.mark.gui

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]
LOAD_S = 3.0


def _window(qtbot, settings, tmp_path, speaker, record):
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys

    release = threading.Event()
    record["release"] = release

    def slow_load(config):  # a model load of LOAD_S seconds (a Stop's wait ends it early for the test)
        record["load_started"] = time.monotonic()
        release.wait(LOAD_S)
        record["loaded_at"] = time.monotonic()
        return DelayedWordBackend()

    def sources(specs, rate):
        made = [SpeakerSource(speaker, label=s.label, align=CHUNK) for s in specs]
        record.setdefault("sources", []).extend(made)
        return made

    write_wav(tmp_path / "talk.wav")
    settings.set(Keys.SOURCE_MODE, "file")  # the window's simplest source choice; the factory above
    settings.set(Keys.FILE, str(tmp_path / "talk.wav"))  # makes a live microphone of it instead
    controller = EngineController(EngineWorker(slow_load, sources, default_pipeline_factory))
    overlay = CaptionOverlay(settings)
    qtbot.addWidget(overlay)
    win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp_path / "journal"))
    qtbot.addWidget(win)
    win.show()
    return win


@pytest.fixture
def windows():
    made = []
    yield made
    for w in made:
        assert w.controller.shutdown(10000)


def test_first_start_captions_from_the_click_while_the_model_loads(qtbot, settings, tmp_path, windows):
    speaker = Speaker(np.concatenate([np.zeros(30 * CHUNK, np.float32), speech(WORDS)]))  # 0.3 s, then words
    record: dict = {}
    win = _window(qtbot, settings, tmp_path, speaker, record)
    windows.append(win)
    events = []
    win.controller.event.connect(events.append)
    notices = []
    win.controller.notice.connect(notices.append)

    speaker.play()
    win.start_button.click()  # the speaker starts talking at the click
    qtbot.waitUntil(lambda: bool(record.get("sources")) and record["sources"][0].opened_at is not None, timeout=5000)
    opened_after = record["sources"][0].opened_at - speaker.t0
    assert opened_after < 0.5, opened_after  # the capture opened at once, not after the model's load
    assert win.engine_state == "loading"
    # the level meter moves from the click on, while the model still loads
    qtbot.waitUntil(lambda: any(isinstance(e, Level) and e.source == "talk" for e in events), timeout=2000)
    assert "loaded_at" not in record

    def finals():
        return "".join(e.text for e in events if isinstance(e, TextDelta) and e.final).split()

    qtbot.waitUntil(lambda: len(finals()) >= len(WORDS), timeout=20000)
    assert record["loaded_at"] - record["load_started"] >= LOAD_S - 0.1  # the words were said during the load
    assert finals() == WORDS  # nothing said from the click on was lost, the first word included
    assert any(n.code == "catching_up" for n in notices)  # the run told it was catching up
    assert not any(n.code == "too_slow" for n in notices)  # ... and not that the model is too slow
    with qtbot.waitSignal(win.controller.stopped, timeout=5000):
        win.start_button.click()
    shown = win.transcript_view.toPlainText().lower()
    assert all(w in shown for w in WORDS), shown  # the window shows them too


def test_stop_during_the_load_closes_the_capture_at_once(qtbot, settings, tmp_path, windows):
    speaker = Speaker(np.zeros(CHUNK, np.float32))
    record: dict = {}
    win = _window(qtbot, settings, tmp_path, speaker, record)
    windows.append(win)
    speaker.play()
    win.start_button.click()
    qtbot.waitUntil(lambda: bool(record.get("sources")) and record["sources"][0].opened_at is not None, timeout=5000)
    assert win.engine_state == "loading"
    t0 = time.monotonic()
    with qtbot.waitSignal(win.controller.stopped, timeout=5000):
        win.start_button.click()  # "Cancel" while the model loads
    took = time.monotonic() - t0
    assert took < 2.0, took  # answered during the load, not after it
    assert "loaded_at" not in record  # the load was still running
    assert record["sources"][0].closed.is_set()  # the capture closed with the Stop
    assert win.engine_state == "idle"
    record["release"].set()


def test_a_load_failure_closes_the_capture_and_says_what_to_do(qtbot, tmp_path):
    from captioner.asr.base import BackendError
    from captioner.engine.qt_worker import EngineConfig, SourceSpec

    made = []

    def failing(config):
        raise BackendError("model not found: /nope (expected a checkpoint directory)")

    def sources(specs, backend):
        made.extend(SpeakerSource(Speaker(np.zeros(CHUNK, np.float32)), label=s.label) for s in specs)
        return made

    ctl = EngineController(EngineWorker(failing, sources, default_pipeline_factory))
    try:
        with qtbot.waitSignal(ctl.error, timeout=5000) as blocker:
            ctl.start(EngineConfig(sources=(SourceSpec("microphone", "You"),)))
        message, code = blocker.args
        assert code == "model_missing" and "Choose an existing model" in message
        qtbot.waitUntil(lambda: ctl.state == "idle", timeout=5000)
        assert made and made[0].closed.is_set() and not made[0].is_running
    finally:
        assert ctl.shutdown(10000)
