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
    from captioner.engine.qt_worker import EngineController, EngineWorker
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

    from captioner.engine.qt_worker import EngineController, EngineWorker
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
