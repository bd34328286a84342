"""The GUI's caption page: :class:`CaptionPageService` runs the server while Settings -> "Caption page"
is on, and :class:`CaptionPageBox` is that section of the Settings dialog (URL, Copy URL, QR code for
phones, viewers connected).

The service gets every engine event where the overlay gets them (the controller's ``event``
signal, in the GUI thread) and only queues it (:meth:`CaptionHub.publish`); the server and its
asyncio loop run on their own thread (:mod:`captioner.caption_page.server`). Starting it (importing
aiohttp takes ~0.6-1 s on a busy 2-core machine) happens on a short-lived thread, so the GUI never
waits. No torch/onnxruntime here.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
)

from captioner.caption_page.address import DEFAULT_PORT, MAX_VIEWERS, Bind
from captioner.caption_page.hub import CaptionHub
from captioner.engine.qt_emit import emit
from captioner.ui.settings import Keys, Settings


class CaptionPageService(QObject):
    """The caption page of the GUI: one hub for the app's life, a server while the setting is on.

    Signals:
        changed(): the URL, the error or the viewer count changed (read the attributes).
        problem(str): the page could not start (port in use: another one is offered).

    Attributes:
        hub: the session's caption operations (a new session at each Start).
        server: the running :class:`~captioner.caption_page.server.CaptionServer`, or None.
        error: why the page is not running although it is switched on, or ``""``.
        viewers: viewers connected now.
    """

    changed = Signal()
    problem = Signal(str)
    _viewers_reported = Signal(int)
    _started = Signal(object, str)

    def __init__(self, settings: Settings, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.hub = CaptionHub()
        self.server = None
        self.error = ""
        self.viewers = 0
        self.starting = False
        self._wanted: tuple | None = None  # (bind, token) the settings ask for, None = off
        self._viewers_reported.connect(self._on_viewers)  # from the server's thread: queued
        self._started.connect(self._on_started)

    # -- events (GUI thread) -----------------------------------------------------------------
    def publish(self, event) -> None:
        """An engine event, as the overlay gets it. Queued for the server; while the page is off it
        is recorded at once, so a page switched on later still has the whole session."""
        self.hub.publish(event)
        if self.server is None and not self.starting:
            self.hub.drain()

    def new_run(self) -> None:
        """A captioning run starts: viewers clear their page (the transcript path starts anew)."""
        self.hub.reset()
        if self.server is None and not self.starting:
            self.hub.drain()

    def set_mask(self, mask) -> None:
        """The profanity filter for what viewers see (None: off)."""
        self.hub.set_mask(mask)

    # -- settings ---------------------------------------------------------------------------
    def apply_settings(self) -> None:
        """Start, restart or stop the server to match the settings (returns at once)."""
        s = self.settings
        wanted = None
        if s.get(Keys.PAGE_ENABLED):
            host = "0.0.0.0" if s.get(Keys.PAGE_NETWORK) else "127.0.0.1"
            wanted = (Bind(host, s.get(Keys.PAGE_PORT)), s.get(Keys.PAGE_TOKEN) or None)
        if wanted == self._wanted and (self.server is not None or self.starting):
            return
        self._wanted = wanted
        self.stop()
        if wanted is None:
            emit(self.changed)
            return
        self.starting = True
        bind, token = wanted
        threading.Thread(target=self._start, args=(bind, token), name="caption-page-start", daemon=True).start()
        emit(self.changed)

    def _start(self, bind: Bind, token: str | None) -> None:
        from captioner.caption_page.server import CaptionPageError, CaptionServer

        try:
            server = CaptionServer(self.hub, bind, token=token,
                                   on_viewers=lambda n: emit(self._viewers_reported, n)).start()
        except (CaptionPageError, ValueError, OSError) as exc:
            emit(self._started, None, f"The caption page could not start: {exc}")
            return
        emit(self._started, server, "")

    def _on_started(self, server, error: str) -> None:
        self.starting = False
        if server is not None and self._wanted is not None and server.bind == self._wanted[0]:
            self.server, self.error = server, ""
            if self.settings.get(Keys.PAGE_KEEP_TOKEN) and server.token:
                self.settings.set(Keys.PAGE_TOKEN, server.token)  # the same address next time
                self._wanted = (server.bind, server.token)
        elif server is not None:  # switched off (or changed) while it started
            server.stop()
        else:
            self.error = error
            emit(self.problem, error)
        emit(self.changed)

    def _on_viewers(self, n: int) -> None:
        self.viewers = n
        emit(self.changed)

    def stop(self) -> None:
        """Stop the server (viewers disconnected) within 2 s."""
        server, self.server = self.server, None
        self.error, self.viewers = "", 0
        if server is not None:
            server.stop(2.0)

    @property
    def url(self) -> str:
        """The caption page's address, or ``""`` while it is not running."""
        return self.server.url if self.server is not None else ""


def qr_pixmap(text: str, scale: int = 4) -> QPixmap:
    """A QR code of ``text`` (segno, error correction M) as a pixmap, for phones to scan."""
    import io

    import segno

    buf = io.BytesIO()
    segno.make(text, error="m", micro=False).save(buf, kind="png", scale=scale, border=2)
    pix = QPixmap()
    pix.loadFromData(buf.getvalue(), "PNG")
    return pix


class CaptionPageBox(QGroupBox):
    """Settings -> "Caption page": switch, network choice, port, address, Copy URL, QR code, viewers.

    Args:
        settings: read now, written by :meth:`apply`.
        service: the running page, for its address and viewers (None in tests of the form only).
    """

    def __init__(self, settings: Settings, service: CaptionPageService | None = None) -> None:
        super().__init__("Caption page (browsers, OBS browser source)")
        self.service = service
        s = settings
        form = QFormLayout(self)
        self.enabled = QCheckBox("Serve the live captions as a web page")
        self.enabled.setChecked(s.get(Keys.PAGE_ENABLED))
        self.enabled.setToolTip("For an OBS browser source or a second screen on this computer. Off by default.")
        form.addRow(self.enabled)
        self.network = QCheckBox("Also to phones and computers on this network")
        self.network.setChecked(s.get(Keys.PAGE_NETWORK))
        self.network.setToolTip("Anyone on the network who has the address (it contains a secret token) can "
                                "read the captions; without this only this computer can.")
        form.addRow(self.network)
        self.keep_token = QCheckBox("Keep the same network address next time")
        self.keep_token.setChecked(s.get(Keys.PAGE_KEEP_TOKEN))
        self.keep_token.setToolTip("Off: a new secret token each time the page starts, so old links stop working.")
        form.addRow(self.keep_token)
        self.port = QSpinBox()
        self.port.setRange(int(Keys.PAGE_PORT.minimum), int(Keys.PAGE_PORT.maximum))
        self.port.setValue(s.get(Keys.PAGE_PORT))
        form.addRow("Port:", self.port)
        self.address = QLineEdit()
        self.address.setReadOnly(True)
        self.copy = QPushButton("Copy URL")
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.address.text()))
        row = QHBoxLayout()
        row.addWidget(self.address, 1)
        row.addWidget(self.copy)
        form.addRow("Address:", row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.qr = QLabel()
        self.qr.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        self.qr.setToolTip("Scan with a phone's camera to open the captions")
        below = QHBoxLayout()  # the QR code beside the status: the dialog stays short enough for a laptop
        below.addWidget(self.status, 1)
        below.addWidget(self.qr)
        form.addRow(below)
        for box in (self.enabled, self.network):
            box.toggled.connect(self._enable_fields)
        if service is not None:
            service.changed.connect(self.refresh)
        self._enable_fields()
        self.refresh()

    def _enable_fields(self) -> None:
        on = self.enabled.isChecked()
        self.network.setEnabled(on)
        self.keep_token.setEnabled(on and self.network.isChecked())
        self.port.setEnabled(on)

    def refresh(self) -> None:
        """Show the service's address, QR code (network mode), viewers or error."""
        svc = self.service
        url = svc.url if svc is not None else ""
        self.address.setText(url)
        self.address.setCursorPosition(0)
        self.copy.setEnabled(bool(url))
        if svc is None or not self.enabled.isChecked():
            self.status.setText("Off." if not self.enabled.isChecked() else "")
        elif svc.error:
            self.status.setText(svc.error)
        elif svc.starting:
            self.status.setText("Starting…")
        elif url:
            where = "every device on this network that has the address" if svc.server.token else "this computer only"
            self.status.setText(f"Serving {where}. Viewers connected: {svc.viewers} (at most {MAX_VIEWERS}). "
                                f"The whole session: {url}transcript")
        else:
            self.status.setText("Press Apply to start it.")
        network = bool(url) and svc is not None and svc.server is not None and svc.server.token is not None
        self.qr.setVisible(network)
        if network and self.qr.property("url") != url:
            self.qr.setPixmap(qr_pixmap(url, scale=3))
            self.qr.setProperty("url", url)

    def apply(self, settings: Settings) -> None:
        """Write the fields (the service follows when the dialog's ``applied`` reaches it)."""
        settings.set(Keys.PAGE_ENABLED, self.enabled.isChecked())
        settings.set(Keys.PAGE_NETWORK, self.network.isChecked())
        settings.set(Keys.PAGE_PORT, self.port.value())
        settings.set(Keys.PAGE_KEEP_TOKEN, self.keep_token.isChecked())
        if not self.keep_token.isChecked():
            settings.set(Keys.PAGE_TOKEN, "")


__all__ = ["DEFAULT_PORT", "CaptionPageBox", "CaptionPageService", "qr_pixmap"]
