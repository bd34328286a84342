"""One desktop app per user: a second start brings the running window to the front.

Two instances would draw two always-on-top overlays over each other and write two
journals of the same audio. The guard is Qt's own machinery: a :class:`QLockFile`
in the configuration directory (stale locks of a crashed instance are detected by
Qt through the PID and host name stored in the file) and a :class:`QLocalServer`
named after that lock file, through which a second start asks the first one to
show its window.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from captioner.engine.qt_emit import emit

#: What a second instance sends to the first one.
ACTIVATE = b"activate\n"
#: How long (ms) a second instance waits to reach the first one.
CONNECT_MS = 1000
#: How long (ms) the running instance waits for a request once a start has connected.
READ_MS = 500


class SingleInstance(QObject):
    """The per-user single-instance guard.

    Args:
        directory: where the lock file lives (default ``captioner.paths.config_dir()``).
        name: lock file name.

    Signals:
        activated(): another start of the app asked this one to show itself.
    """

    activated = Signal()

    def __init__(self, directory: str | os.PathLike | None = None, name: str = "captioner-gui.lock") -> None:
        super().__init__()
        if directory is None:
            from captioner.paths import config_dir

            directory = config_dir()
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.lock_path = Path(directory) / name
        digest = hashlib.sha1(str(self.lock_path.resolve()).encode("utf-8")).hexdigest()[:16]
        #: Local socket name, unique per lock file (so per user and per data directory).
        self.server_name = f"captioner-{digest}"
        self._lock = QLockFile(str(self.lock_path))
        self._lock.setStaleLockTime(0)  # only a dead owner (PID check) makes a lock stale, never age
        self._server: QLocalServer | None = None
        #: After a failed :meth:`acquire`: whether the running instance got the request.
        self.notified = False

    def acquire(self) -> bool:
        """Become the instance. False when another one runs (it has been asked to come to the front)."""
        if not self._lock.tryLock(100):
            self.notified = self._notify_running()
            return False
        QLocalServer.removeServer(self.server_name)  # a socket file left by a crashed instance
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if server.listen(self.server_name):
            server.newConnection.connect(self._on_connection)
            self._server = server
        return True

    def release(self) -> None:
        """Stop listening and remove the lock (on quit)."""
        if self._server is not None:
            self._server.close()
            self._server.deleteLater()
            self._server = None
        self._lock.unlock()

    def _notify_running(self) -> bool:
        sock = QLocalSocket()
        sock.connectToServer(self.server_name)
        if not sock.waitForConnected(CONNECT_MS):
            return False
        sock.write(ACTIVATE)
        sock.flush()  # usually writes everything at once; otherwise wait for it
        sent = sock.bytesToWrite() == 0 or sock.waitForBytesWritten(CONNECT_MS)
        sock.abort()
        return sent

    def _on_connection(self) -> None:
        while self._server is not None and self._server.hasPendingConnections():
            conn = self._server.nextPendingConnection()
            # the other start writes its request right after connecting: read it here (a short
            # wait at most), so no per-connection callbacks outlive the socket
            if conn.bytesAvailable() or conn.waitForReadyRead(READ_MS):
                if bytes(conn.readAll().data()).strip() == ACTIVATE.strip():
                    emit(self.activated)
            conn.abort()
            conn.deleteLater()
