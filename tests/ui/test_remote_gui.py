"""The GUI on a remote Audio8 server: URL and key in the model panel, remembered; the
connection state shown; captions from the scripted loopback server (tests/remote_server.py)."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

pytestmark = pytest.mark.gui
pytest.importorskip("websockets")


def _choose_remote(win, url, key=""):
    panel = win.model_panel
    panel.backend_combo.setCurrentIndex(panel.backend_combo.findData("remote"))
    panel.model_edit.setText(url)
    panel.key_edit.setText(key)


def test_url_and_key_are_remembered_and_the_key_is_hidden(make_window, settings):
    from PySide6.QtWidgets import QLineEdit

    from captioner.ui.settings import Keys

    win, _ = make_window()
    panel = win.model_panel
    assert not panel.key_edit.isVisible()  # built-in model: no key row
    _choose_remote(win, "ws://gpu-box:18191/v1/realtime", "k3y")
    assert panel.key_edit.isVisible() and panel.key_edit.echoMode() == QLineEdit.EchoMode.Password
    fields = panel.config_fields()
    assert fields["backend"] == "remote" and fields["model"] == "ws://gpu-box:18191/v1/realtime"
    assert fields["options"] == (("token", "k3y"),)
    panel.save_settings()
    assert settings.get(Keys.REMOTE_URL) == "ws://gpu-box:18191/v1/realtime" and settings.get(Keys.REMOTE_KEY) == "k3y"
    panel.key_edit.setText("")
    panel.load_settings()
    assert panel.key_edit.text() == "k3y" and panel.model_edit.text() == "ws://gpu-box:18191/v1/realtime"


@pytest.mark.parametrize("url, sources, needle", [
    ("http://h:18191/v1/realtime", 1, "did you mean ws://"),
    ("ws://h:18191/v1/realtime", 2, "2 sources need 2 caption servers"),
    ("ws://a:18191/v1/realtime,ws://a:18193/v1/realtime", 2, ""),
    ("", 1, "Enter the server address"),
])
def test_remote_problems_are_said_before_start(make_window, url, sources, needle):
    win, _ = make_window()
    problem = win.model_panel.problem("remote", url, sources)
    assert (needle in problem) if needle else problem == ""


def test_gui_captions_through_the_server_and_shows_the_connection(qtbot, settings, tmp_path):
    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys
    from tests.remote_server import Script, ScriptedServer

    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, np.float32), 16000)  # 1 s, played in real time
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    with ScriptedServer(Script(text={3: " remote", 4: " captions"})) as srv:
        controller = EngineController(EngineWorker())
        overlay = CaptionOverlay(settings)
        qtbot.addWidget(overlay)
        win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp_path / "journal"))
        qtbot.addWidget(win)
        win.show()
        _choose_remote(win, srv.url)
        win.start()
        qtbot.waitUntil(lambda: any(code == "remote_connection" and "Connected" in text
                                    for text, _, code in win.messages.messages()), timeout=15000)
        qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=15000)  # the file ended by itself
        text = "".join(seg.text for seg in win.recorder.transcript.segments)
        assert text.strip() == "remote captions"
        assert srv.connections[0].commits == [False, True]  # the file ended: the stream was finished
        assert controller.shutdown(10000)


def test_gui_says_which_server_refused(qtbot, settings, tmp_path):
    import socket

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"ws://127.0.0.1:{s.getsockname()[1]}/v1/realtime"
    s.close()
    wav = tmp_path / "talk.wav"
    sf.write(wav, np.zeros(16000, np.float32), 16000)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    controller = EngineController(EngineWorker())
    overlay = CaptionOverlay(settings)
    qtbot.addWidget(overlay)
    win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp_path / "journal"))
    qtbot.addWidget(win)
    win.show()
    _choose_remote(win, url)
    win.start()
    qtbot.waitUntil(lambda: any(url in text and "connection refused" in text and severity == "error"
                                for text, severity, _ in win.messages.messages()), timeout=15000)
    qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=15000)
    assert controller.shutdown(10000)


def test_remote_offers_only_what_the_server_serves(make_window):
    from captioner.asr.remote.protocol import SERVER_DELAYS_MS

    win, _ = make_window()
    panel = win.model_panel
    _choose_remote(win, "ws://h:18191/v1/realtime")
    delays = [panel.delay_combo.itemData(i) for i in range(panel.delay_combo.count())]
    assert delays and all(d in SERVER_DELAYS_MS for d in delays) and 1280 not in delays and 1600 in delays
    assert panel.clock_combo.currentData() == 80 and not panel.clock_combo.isEnabled()
    panel.backend_combo.setCurrentIndex(panel.backend_combo.findData("audio8"))
    assert panel.clock_combo.isEnabled()
    assert 1280 in [panel.delay_combo.itemData(i) for i in range(panel.delay_combo.count())]


@pytest.mark.parametrize("how", ["stop", "quit"])
def test_gui_stop_and_quit_during_a_stall_are_quick_and_final(qtbot, settings, tmp_path, how):
    """Issue 21: the server's path goes half-open (nothing arrives, nothing closes); Stop and
    Quit still finish within 2 s, keep the text so far and open no new server session."""
    import time

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys
    from tests.remote_server import Relay, Script, ScriptedServer, word_audio

    wav = tmp_path / "talk.wav"
    sf.write(wav, word_audio([0, 1, 2, 3, 0] * 100), 16000)  # 40 s in real time: Stop comes first
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    with ScriptedServer(Script(words_from_audio=True)) as srv, Relay(srv.port) as relay:
        controller = EngineController(EngineWorker())
        overlay = CaptionOverlay(settings)
        qtbot.addWidget(overlay)
        win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp_path / "journal"))
        qtbot.addWidget(win)
        win.show()
        _choose_remote(win, relay.url)
        win.start()
        qtbot.waitUntil(lambda: bool(srv.connections) and srv.connections[0].steps >= 15, timeout=15000)
        qtbot.waitUntil(lambda: "w3" in "".join(seg.text for seg in win.recorder.transcript.segments),
                        timeout=15000)
        relay.stall()
        t0 = time.monotonic()
        if how == "stop":
            win.stop()
            qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=10000)
        else:
            assert controller.shutdown(10000)
        took = time.monotonic() - t0
        sessions = relay.accepted
        assert not srv.wait_for(lambda: len(srv.connections) > 1, timeout=1.0)  # no new session after Stop
        assert relay.accepted == sessions == 1
        text = "".join(seg.text for seg in win.recorder.transcript.segments)
        if how == "stop":
            assert controller.shutdown(10000)
    assert took < 2.0, f"{how} took {took:.2f} s during a stall"
    assert text.split()[:3] == ["w1", "w2", "w3"]
