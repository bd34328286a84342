"""The GUI-side handle of the caption engine: owns the engine's QThread and its worker.

:class:`EngineController` turns method calls (``start(config)``, ``stop()``) into queued slot
calls of the :class:`~captioner.engine.qt_worker.EngineWorker` on its own
:class:`~PySide6.QtCore.QThread`, so the GUI never blocks on the engine, and mirrors the
worker's signals in the GUI thread. Only QtCore is imported here.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QThread, Signal, Slot

from captioner.engine.qt_emit import emit
from captioner.engine.qt_worker import EngineWorker
from captioner.engine.run_setup import EngineConfig


class EngineController(QObject):
    """GUI-side handle: owns the worker thread; calls never block the GUI.

    The controller re-emits every :class:`EngineWorker` signal as its own signal of
    the same name and arguments. Those are queued from the worker (and pipeline)
    threads and emitted in the controller's (the GUI) thread, in the order they were
    produced, so any receiver -- a widget slot, a lambda, a test -- runs on the GUI
    thread. Connect to the controller, not to the worker.

    Args:
        worker: the worker (a new default one when ``None``); it is moved to the thread.

    Attributes:
        worker: the :class:`EngineWorker`.
        thread: the :class:`QThread` it runs on.
    """

    state_changed = Signal(str)
    progress = Signal(str, int)
    backend_ready = Signal(str)
    event = Signal(object)
    text_delta = Signal(object)
    turn_boundary = Signal(object)
    stats = Signal(object)
    level = Signal(object)
    notice = Signal(object)
    error = Signal(str, str)
    started = Signal()
    stopped = Signal()

    _start_requested = Signal(object)
    _stop_requested = Signal(bool)
    _unload_requested = Signal()
    _shutdown_requested = Signal()

    #: Worker signals mirrored in the GUI thread.
    MIRRORED = ("state_changed", "progress", "backend_ready", "event", "text_delta", "turn_boundary", "stats",
                "level", "notice", "error", "started", "stopped")

    def __init__(self, worker: EngineWorker | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker = worker or EngineWorker()
        self._state = self.worker.state
        self.state_changed.connect(self._track_state)  # first receiver: state is current for the others
        self.thread = QThread()
        self.thread.setObjectName("captioner-engine")
        self.worker.moveToThread(self.thread)
        for name in self.MIRRORED:
            getattr(self.worker, name).connect(getattr(self, name))  # receiver in this thread: queued
        self._start_requested.connect(self.worker.start)
        self._stop_requested.connect(self.worker.stop)
        self._unload_requested.connect(self.worker.unload)
        self._shutdown_requested.connect(self.worker.shutdown)
        self.thread.start()

    @Slot(str)
    def _track_state(self, state: str) -> None:
        self._state = state

    @property
    def state(self) -> str:
        """The engine state as last reported to the GUI thread."""
        return self._state

    def start(self, config: EngineConfig) -> None:
        """Queue a start (loading the model first when needed)."""
        emit(self._start_requested, config)

    def stop(self, drain: bool = True) -> None:
        """Queue a stop; cancels a start that is still loading its model."""
        self.worker.request_cancel()
        emit(self._stop_requested, drain)

    def unload(self) -> None:
        """Queue releasing the model (before switching backend)."""
        emit(self._unload_requested)

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Stop (draining), release the model and end the thread; blocks up to ``timeout_ms``.

        Returns:
            True when the thread finished in time.
        """
        if not self.thread.isRunning():
            return True
        self.worker.request_cancel()
        emit(self._shutdown_requested)  # the worker quits its own thread after unloading
        done = bool(self.thread.wait(timeout_ms))
        if not done:
            self.thread.quit()
        return done
