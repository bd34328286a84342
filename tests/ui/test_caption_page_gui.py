"""Settings -> Caption page in the assembled app: off by default; on, it serves a run's captions
(the events the overlay gets), shows the address, Copy URL, a QR code in network mode and the
viewer count; a port in use is a message with a free port offered; the GUI never imports aiohttp
until the page is switched on."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import pytest

from captioner.ui.app import CaptionerApp
from captioner.ui.settings import Keys
from captioner.ui.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Viewer:
    def __init__(self, url):
        host, _, rest = url[len("http://"):].partition("/")
        self.sock = socket.create_connection(("127.0.0.1", int(host.rsplit(":", 1)[1])), timeout=30)
        self.sock.sendall(f"GET /{rest}events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.sock.makefile("rb"):
                if line.startswith(b"data: "):
                    self.events.append(json.loads(line[6:]))
        except OSError:
            pass

    def text(self):
        return "".join(e.get("text", "") for e in self.events if e.get("t") == "final")


def test_gui_imports_no_aiohttp_until_the_page_is_on():
    code = ("import sys, captioner.ui.app, captioner.ui.settings_dialog; "
            "print('aiohttp' in sys.modules); sys.exit(1 if 'aiohttp' in sys.modules else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"}, cwd=".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_caption_page_is_off_by_default_and_serves_a_run_when_on(qtbot, settings, tmp_path):
    from ui_fakes import fake_factories, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker

    words = ["alpha", "bravo", "charlie"]
    wav = tmp_path / "talk.wav"
    write_wav(wav)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    settings.set(Keys.PAGE_PORT, free_port())
    bf, sf, pf, record = fake_factories({"talk.wav": speech(words, gap_chunks=0)})
    app = CaptionerApp(settings, EngineController(EngineWorker(bf, sf, pf)))
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    try:
        assert app.caption_page.server is None and not settings.get(Keys.PAGE_ENABLED)
        dialog = SettingsDialog(settings, app.window, caption_page=app.caption_page)
        qtbot.addWidget(dialog)
        dialog.applied.connect(app.apply_caption_page)
        assert dialog.caption_page.status.text() == "Off." and not dialog.caption_page.copy.isEnabled()
        dialog.caption_page.enabled.setChecked(True)
        dialog.apply()
        qtbot.waitUntil(lambda: bool(app.caption_page.url), timeout=15000)
        box = dialog.caption_page
        assert box.address.text() == f"http://127.0.0.1:{settings.get(Keys.PAGE_PORT)}/"
        assert "this computer only" in box.status.text() and not box.qr.isVisible()
        box.copy.click()
        from PySide6.QtGui import QGuiApplication

        assert QGuiApplication.clipboard().text() == box.address.text()
        viewer = Viewer(app.caption_page.url)
        qtbot.waitUntil(lambda: "Viewers connected: 1" in box.status.text(), timeout=5000)
        app.window.start()
        partials = lambda: [e["text"] for e in viewer.events if e.get("t") == "partial"]  # noqa: E731
        qtbot.waitUntil(lambda: partials()[-1:] == [" ".join(words)], timeout=10000)
        app.window.toggle_running()  # Stop: the rest becomes final
        qtbot.waitUntil(lambda: viewer.text().split() == words, timeout=10000)
        assert viewer.events[0]["t"] == "reset"
        # network mode: a token in the address and a QR code for phones
        box.network.setChecked(True)
        dialog.apply()
        qtbot.waitUntil(lambda: app.caption_page.server is not None and bool(app.caption_page.server.token),
                        timeout=15000)
        token = app.caption_page.server.token
        assert box.address.text().endswith(f"/{token}/") and not box.qr.isHidden()
        assert not box.qr.pixmap().isNull() and box.qr.pixmap().width() > 60
    finally:
        app.shutdown()
    assert app.caption_page.server is None


def test_port_in_use_is_a_message_offering_another(qtbot, settings):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    settings.set(Keys.PAGE_PORT, busy.getsockname()[1])
    settings.set(Keys.PAGE_ENABLED, True)
    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    try:
        qtbot.waitUntil(lambda: bool(app.caption_page.error), timeout=15000)
        msgs = [text for text, _sev, code in app.window.messages.messages() if code == "caption_page"]
        assert msgs and "another program uses that port" in msgs[0] and "is free: use it" in msgs[0]
    finally:
        app.shutdown()
        busy.close()
