"""GUI tests run offscreen; every test gets its own settings file."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture
def settings(tmp_path):
    """Typed settings in a throw-away INI file (never the user's real config)."""
    from captioner.ui.settings import Settings

    return Settings.from_file(str(tmp_path / "captioner.ini"))


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path, monkeypatch):
    """Journals and autosaves of a test go to its own folder, never the user's data dir."""
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "captioner-data"))


@pytest.fixture(autouse=True)
def _no_modal_quit_question(monkeypatch):
    """Closing a window with unsaved text asks Save/Discard/Cancel in a modal box; tests that do not
    test that question answer "discard" (teardown closes every window)."""
    from captioner.ui.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "ask_unsaved", lambda self: "discard")


#: What the fake microphone-free "talk.wav" says in the window tests.
WINDOW_WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


@pytest.fixture
def make_window(qtbot, settings, tmp_path):
    """A MainWindow on a fake engine; ``make(audio=None, files=None, **fake_kw)`` -> (window, record).

    ``files`` maps file names to fake audio (default: "talk.wav" saying WINDOW_WORDS); each
    name becomes an (empty) file in ``tmp_path`` and the window's file source is the first.
    """
    from ui_fakes import fake_factories, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys

    made = []

    def make(audio=None, files=None, **kw):
        files = files or {"talk.wav": speech(WINDOW_WORDS) if audio is None else audio}
        for name in files:
            write_wav(tmp_path / name)  # a real (silent) WAV; the fake source factory never reads it
        bf, sf, pf, record = fake_factories(files, **kw)
        controller = EngineController(EngineWorker(bf, sf, pf))
        overlay = CaptionOverlay(settings)
        qtbot.addWidget(overlay)
        recorder = TranscriptRecorder(journal_dir=tmp_path / "journal")
        settings.set(Keys.SOURCE_MODE, "file")
        settings.set(Keys.FILE, str(tmp_path / next(iter(files))))
        win = MainWindow(settings, overlay, controller, recorder)
        qtbot.addWidget(win)
        win.show()
        overlay.show()
        made.append(win)
        return win, record

    yield make
    for w in made:
        assert w.controller.shutdown(10000)
