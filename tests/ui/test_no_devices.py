"""Issue 13: with no audio devices at all the lists say so (not "Default device"), and Start
says what to do before anything fails."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gui


@pytest.fixture
def no_devices(monkeypatch):
    from captioner.audio import devices

    monkeypatch.setattr(devices, "list_microphones", lambda *a, **k: [])
    monkeypatch.setattr(devices, "list_system_sources", lambda *a, **k: [])


def test_the_lists_say_there_are_no_devices(no_devices, make_window):
    win, _ = make_window()
    win.sources.refresh_devices()
    assert win.sources.mic_combo.currentText() == "No microphone found"
    assert win.sources.system_combo.currentText() == "No system-audio source found"
    assert "Default device" not in [win.sources.mic_combo.itemText(i) for i in range(win.sources.mic_combo.count())]


@pytest.mark.parametrize("mode, words", [("microphone", "No microphone was found"),
                                          ("system", "No system-audio source was found"),
                                          ("both", "No microphone was found")])
def test_start_without_devices_says_what_to_do(no_devices, make_window, mode, words):
    win, record = make_window()
    win.sources.refresh_devices()
    win.sources.mode_combo.setCurrentIndex(win.sources.mode_combo.findData(mode))
    win.start()
    text, severity, code = win.messages.messages()[-1]
    assert code == "config" and words in text and "Refresh devices" in text
    assert win.engine_state == "idle" and not record["pipelines"]


def test_a_file_still_starts_without_devices(no_devices, make_window, qtbot):
    from ui_fakes import run_and_stop

    win, record = make_window()
    win.sources.refresh_devices()
    run_and_stop(qtbot, win, record)
    assert "alpha" in win.transcript_view.toPlainText()


def test_refresh_button_rescans_portaudio_so_a_late_sound_server_is_found(monkeypatch, make_window, qtbot):
    """QA: a sound server started after the app was only seen after a restart (PortAudio
    enumerates devices once, when it initialises). Refresh devices re-initialises it."""
    from PySide6.QtCore import Qt

    from captioner.audio import devices
    from captioner.audio.devices import InputDevice

    server_up = {"now": False, "rescans": 0}

    def rescan(sd=None):
        server_up["rescans"] += 1
        server_up["now"] = True  # what re-initialising PortAudio makes visible

    def mics(*a, **k):
        return [InputDevice("microphone", "pulse", 3, "ALSA", 2, 44100.0, True)] \
            if server_up["now"] else []

    monkeypatch.setattr(devices, "rescan", rescan)
    monkeypatch.setattr(devices, "list_microphones", mics)
    monkeypatch.setattr(devices, "list_system_sources", lambda *a, **k: [])
    win, _ = make_window()
    win.sources.refresh_devices()  # start-up listing: no rescan, nothing there yet
    assert server_up["rescans"] == 0 and win.sources.mic_combo.currentText() == "No microphone found"
    qtbot.mouseClick(win.sources.refresh_button, Qt.MouseButton.LeftButton)
    assert server_up["rescans"] == 1
    assert win.sources.found["microphone"] and win.sources.mic_combo.findData("pulse") >= 0
    win.sources.set_busy(True)  # never while capturing
    assert not win.sources.refresh_button.isEnabled()
    win.sources.refresh_devices(rescan=True)
    assert server_up["rescans"] == 1
