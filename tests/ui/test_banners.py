"""Issue 13, stale banners: a message goes when its cause goes away, and messages never move the
form's click targets."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint

pytestmark = pytest.mark.gui


def test_a_device_error_goes_when_the_source_changes(make_window, qtbot):
    win, _ = make_window()
    win.sources.mode_combo.setCurrentIndex(win.sources.mode_combo.findData("microphone"))
    win._on_error("The audio device could not be used: no microphone.", "device_error")
    assert [m[2] for m in win.messages.messages()] == ["device_error"]
    win.sources.mode_combo.setCurrentIndex(win.sources.mode_combo.findData("file"))
    assert win.messages.messages() == []


def test_a_model_error_goes_when_the_model_changes(make_window):
    win, _ = make_window()
    win._on_error("The model was not found: /nowhere.", "model_missing")
    win.sources.file_edit.setText(win.sources.file_edit.text() + "")  # unrelated: stays
    assert [m[2] for m in win.messages.messages()] == ["model_missing"]
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData("tflite"))
    assert win.messages.messages() == []


def test_a_usage_warning_goes_once_it_is_fixed(make_window, tmp_path):
    win, _ = make_window()
    good = win.sources.file_edit.text()
    win.sources.file_edit.setText(str(tmp_path / "missing.wav"))
    win.start()
    assert [m[2] for m in win.messages.messages()] == ["config"]
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData("default"))
    assert [m[2] for m in win.messages.messages()] == ["config"]  # still true: the file is still missing
    win.sources.file_edit.setText(good)
    assert win.messages.messages() == []


def test_messages_do_not_move_the_form(make_window, qtbot):
    win, _ = make_window()
    win.resize(820, 720)
    qtbot.waitUntil(lambda: win.height() == 720, timeout=2000)

    def spots():
        return [w.mapTo(win, QPoint(0, 0)) for w in (win.start_button, win.sources.mode_combo,
                                                      win.model_panel.backend_combo, win.sources.file_button)]

    before = spots()
    for i in range(3):
        win.messages.show_message(f"Message {i}: something happened, and here is what to do about it.", "warning",
                                  f"m{i}")
    qtbot.waitUntil(lambda: win.messages.isVisible() and win.messages.height() > 40, timeout=2000)
    win.centralWidget().layout().activate()
    assert spots() == before
