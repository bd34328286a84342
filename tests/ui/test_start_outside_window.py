"""Issue 13: a Start from the tray or a shortcut that fails says so outside the main window -- a
tray message where the desktop has a tray, else a notice on the caption overlay."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


@pytest.fixture
def gui(qtbot, settings, tmp_path):
    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings import Keys

    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(tmp_path / "gone.wav"))  # Start will refuse: the file is missing
    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    app.show()
    yield app
    app.shutdown()


def test_without_a_tray_the_overlay_shows_the_problem(gui, qtbot, monkeypatch):
    monkeypatch.setattr(gui.tray, "available", False)
    gui.window.hide()  # the user works in another program; Start comes from the shortcut
    gui.window.start_action.trigger()
    qtbot.waitUntil(lambda: gui.overlay.notice_text() != "", timeout=2000)
    assert "audio file was not found" in gui.overlay.notice_text()
    assert gui.overlay.notice.isVisible()


def test_with_a_tray_a_tray_message_says_it(gui, qtbot, monkeypatch):
    shown = []
    monkeypatch.setattr(gui.tray, "available", True)
    monkeypatch.setattr(gui.tray.icon, "supportsMessages", lambda: True)
    monkeypatch.setattr(gui.tray.icon, "showMessage", lambda title, text, *a: shown.append((title, text)))
    gui.window.hide()
    gui.tray.start_action.trigger()
    assert shown and "audio file was not found" in shown[0][1]


def test_an_engine_error_while_the_window_is_away_is_told_too(gui, qtbot, monkeypatch):
    monkeypatch.setattr(gui.tray, "available", False)
    gui.window.hide()
    gui.window._on_error("The audio device could not be used: gone.", "device_error")
    assert "could not be used" in gui.overlay.notice_text()


def test_the_window_in_front_needs_no_second_message(gui, qtbot, monkeypatch):
    monkeypatch.setattr(gui.tray, "available", False)
    monkeypatch.setattr(gui.window, "isActiveWindow", lambda: True)
    gui.window.start()
    assert gui.overlay.notice_text() == ""
