"""The assembled app: settings dialog applies to the overlay, shortcuts rebind, shutdown is clean."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QKeySequence

from captioner.ui.app import CaptionerApp
from captioner.ui.settings import Keys
from captioner.ui.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui


@pytest.fixture
def gui(qtbot, settings, tmp_path, monkeypatch):
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    app.show()
    yield app
    app.shutdown()


def test_app_opens_window_and_overlay(gui):
    assert gui.window.isVisible() and gui.overlay.isVisible()
    assert gui.window.start_button.text() == "Start"
    assert gui.window.overlay_action.isChecked()
    gui.window.overlay_action.trigger()
    assert not gui.overlay.isVisible() and gui.settings.get(Keys.OVERLAY_VISIBLE) is False


def test_settings_dialog_applies_to_overlay_and_shortcuts(gui, qtbot):
    dialog = SettingsDialog(gui.settings, gui.window)
    qtbot.addWidget(dialog)
    dialog.applied.connect(gui.overlay.apply_settings)
    dialog.applied.connect(gui.window.apply_shortcuts)
    dialog.lines.setValue(4)
    dialog.font_size.setValue(40)
    dialog.click_through.setChecked(True)
    dialog.shortcut_start.setKeySequence(QKeySequence("Ctrl+Alt+C"))
    with qtbot.waitSignal(dialog.applied):
        dialog.apply()
    assert gui.settings.get(Keys.OVERLAY_LINES) == 4 and gui.overlay.max_lines == 4
    assert gui.overlay.caption_font.pointSize() == 40
    assert gui.overlay.click_through
    assert gui.window.start_action.shortcut().toString() == "Ctrl+Alt+C"


def test_run_gui_opens_the_window_and_returns_zero(qtbot, settings):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from captioner.ui.app import run_gui
    from captioner.ui.main_window import MainWindow

    seen = []

    def close_main_window():
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        seen.extend(windows)
        for w in windows:
            w.close()

    QTimer.singleShot(0, close_main_window)
    assert run_gui([], settings=settings) == 0
    assert len(seen) == 1 and seen[0].windowTitle() == "captioner"


def test_quitting_while_captioning_keeps_the_last_words(qtbot, settings, tmp_path):
    """Quit while captioning: the last words are kept and the journal is closed. In the full
    suite this test twice died with SIGSEGV inside Qt: the model loader's thread set off a garbage
    collection that freed widgets of earlier tests (issue 30; tests/ui/test_main_thread_gc.py)."""
    from ui_fakes import fake_factories, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.transcript import find_unfinished

    words = ["alpha", "bravo", "charlie", "delta"]
    wav = tmp_path / "talk.wav"
    write_wav(wav)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    bf, sf, pf, record = fake_factories({"talk.wav": speech(words, gap_chunks=0)})
    app = CaptionerApp(settings, EngineController(EngineWorker(bf, sf, pf)))
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    app.show()
    app.window.start()
    qtbot.waitUntil(lambda: bool(record["pipelines"]) and record["pipelines"][0].fed_all.is_set(), timeout=5000)
    qtbot.waitUntil(lambda: app.window.engine_state == "running", timeout=5000)
    app.shutdown()  # what quitting does: drain, deliver the last events, close the journal
    assert app.window.recorder.transcript.text().split() == words
    assert find_unfinished() == []  # the journal was closed cleanly


def test_run_gui_without_a_display_says_so_and_returns_1(monkeypatch, capsys, settings):
    import sys

    from captioner.ui.app import display_problem, run_gui

    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert run_gui([], settings=settings) == 1
    err = capsys.readouterr().err
    assert "no graphical display found" in err and "captioner transcribe FILE" in err and "captioner listen" in err
    assert "xcb" not in err
    assert display_problem({"WAYLAND_DISPLAY": "wayland-0"}, "linux") == ""
    assert display_problem({"QT_QPA_PLATFORM": "offscreen"}, "linux") == ""
    assert display_problem({}, "win32") == "" and display_problem({}, "darwin") == ""


def test_quit_action_asks_about_unsaved_text(gui, qtbot, monkeypatch):
    asked = []
    monkeypatch.setattr(gui.window, "ask_unsaved", lambda: asked.append(True) or "cancel")
    from captioner.transcript import Transcript
    from captioner.ui.session_model import Run

    gui.window.session.runs.append(Run(Transcript(), dirty=True, has_text=True))  # as after a captioned run
    gui.window.quit_action.trigger()
    assert asked == [True] and gui.window.isVisible()
    monkeypatch.setattr(gui.window, "ask_unsaved", lambda: "discard")
    with qtbot.waitSignal(gui.window.closed, timeout=2000):
        gui.window.quit_action.trigger()


def test_turn_settings_persist_and_reach_the_engine(gui, qtbot):
    from captioner.engine.turns import TurnSettings

    dialog = SettingsDialog(gui.settings, gui.window)
    qtbot.addWidget(dialog)
    dialog.turn_sensitivity.setValue(70)
    dialog.turn_silence.setValue(4.5)
    with qtbot.waitSignal(dialog.applied):
        dialog.apply()
    assert gui.settings.get(Keys.TURN_SENSITIVITY) == pytest.approx(0.7)
    assert gui.settings.get(Keys.TURN_SILENCE_S) == pytest.approx(4.5)
    again = SettingsDialog(gui.settings, gui.window)  # persisted: a new dialog shows them
    qtbot.addWidget(again)
    assert again.turn_sensitivity.value() == 70 and again.turn_silence.value() == pytest.approx(4.5)
    config = gui.window.build_config()
    assert config.turns == TurnSettings(threshold=0.3, silence_s=4.5)
    gui.settings.set(Keys.BACKEND, "audio8")
    from captioner.ui.settings import turn_backend_options

    assert dict(turn_backend_options(gui.settings, "audio8")) == {"vad_horizon_s": 1.0, "vad_threshold": 0.3,
                                                                     "vad_hysteresis": 0.2}
