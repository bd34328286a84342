"""The caption engine on a QThread: a QObject whose signals are its whole API.

:class:`EngineWorker` lives on its own :class:`~PySide6.QtCore.QThread` (Buzz style,
DESIGN section 7). At Start it opens the live audio sources first and loads the backend
(slow: seconds to a minute) on a thread of its own meanwhile
(:mod:`captioner.engine.capture_first`), so nothing said after Start is lost and Stop
is answered at once during the load; then it runs a
:class:`captioner.engine.live.LiveCaptioner` on the sources already capturing (the audio
queued during the load is a backlog it catches up on) and re-emits every event it
delivers as a Qt signal. Receivers in the GUI thread get
them through queued connections, in the order they were produced.

The GUI-side handle that owns the thread and the worker is
:class:`~captioner.engine.qt_controller.EngineController`.

Only QtCore is imported here (no widgets, no torch/tflite): the backend, the sources
and the live pipeline are created through the three factories of
:mod:`captioner.engine.run_setup` (with :class:`EngineConfig`, re-exported here), so
tests plug in fakes; failures are worded by :mod:`captioner.engine.error_text`.
"""

from __future__ import annotations

import threading
import traceback
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from captioner.engine.capture_first import (
    BackgroundLoad,
    captured_s,
    close_sources,
    open_before_load,
    preview_levels,
)
from captioner.engine.error_text import FILE_FORMATS, describe_error  # noqa: F401  (re-exported)
from captioner.engine.qt_emit import emit
from captioner.engine.run_setup import (  # noqa: F401  (re-exported: the GUI and tests import them from here)
    BackendFactory,
    EngineConfig,
    ModelRate,
    Pipeline,
    PipelineFactory,
    SourceFactory,
    SourceSpec,
    default_backend_factory,
    default_pipeline_factory,
    default_source_factory,
    takes_keyword,
)
from captioner.engine.stopping import FLUSH_S, EventGate, StopOutcome, stop_within
from captioner.events import Event, Level, Notice, Stats, TextDelta, TurnBoundary

#: Engine states, in the order a run goes through them.
IDLE, LOADING, RUNNING, STOPPING = "idle", "loading", "running", "stopping"


class EngineWorker(QObject):
    """Owns the backend, the sources and the live pipeline; lives on a worker QThread.

    Args:
        backend_factory: ``config -> Backend``; runs on a loading thread of its own.
        source_factory: ``(specs, backend) -> [source]``, not started; ``backend`` is a
            :class:`ModelRate` when the sources are made before the model loads (the live ones
            are then started at once, see :mod:`captioner.engine.capture_first`).
        pipeline_factory: ``(backend, sources, on_event[, turns=TurnSettings][, speakers=SpeakerOptions]
            [, sounds=SoundOptions]) -> Pipeline`` (``turns`` is passed only when the config has turn
            settings; ``speakers`` and ``sounds`` only when the config has them and the factory takes
            that keyword).

    Signals (every payload is a plain Python object; connect with the default
    (auto/queued) connection from the GUI thread):
        state_changed(str): ``"idle"``, ``"loading"`` (the live sources already capture),
            ``"running"``, ``"stopping"``.
        progress(str, int): model loading message and percent, -1 while unknown.
        backend_ready(str): ``Backend.describe()`` of the loaded model.
        event(object): every event, in order (for the transcript and journal).
        text_delta(object), turn_boundary(object), stats(object), level(object),
        notice(object): the same events split by type, for views.
        error(str, str): message and code of a failure; the worker stays usable.
        started(): captioning began.
        stopped(): captioning ended; every event of the run was emitted before this.
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
    _loaded = Signal(object)  # a BackgroundLoad ended (emitted on its thread, handled on the worker's)

    #: How often (ms) the worker checks that a running pipeline is still alive.
    WATCH_MS = 250

    def __init__(
        self,
        backend_factory: BackendFactory = default_backend_factory,
        source_factory: SourceFactory = default_source_factory,
        pipeline_factory: PipelineFactory = default_pipeline_factory,
    ) -> None:
        super().__init__()
        self.backend_factory = backend_factory
        self.source_factory = source_factory
        self.pipeline_factory = pipeline_factory
        self.state = IDLE
        self.backend: Any = None
        self._backend_key: tuple | None = None
        self._pipeline: Pipeline | None = None
        self._cancel = threading.Event()
        self._watch: QTimer | None = None
        self._kinds: tuple[str, ...] = ()  # source kinds of the current run, for error advice
        self._run = EventGate()  # the current run's events pass until its stop
        self._left_behind: Pipeline | None = None  # a run whose model call outlived its bounded stop
        self._load: BackgroundLoad | None = None  # the model load in flight, if any
        self._load_key: tuple | None = None  # its config's backend_key()
        self._pending: tuple | None = None  # (config, sources, started early) waiting for that load
        self._loaded.connect(self._on_loaded)
        self._preview: QTimer | None = None  # level meters of the sources capturing while the model loads
        self._preview_seen: dict = {}

    # -- thread-safe requests ------------------------------------------------------------------
    def request_cancel(self) -> None:
        """Ask a start in progress (model loading) not to begin captioning (the Stop that follows
        closes its sources). Any thread."""
        self._cancel.set()

    # -- slots (run on the worker thread) -------------------------------------------------------
    @Slot(object)
    def start(self, config: EngineConfig) -> None:
        """Load the backend if the config needs another one, open the sources, run.

        Never raises: failures become :attr:`error` and the state returns to idle.
        """
        try:
            self._start(config)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the GUI waiting forever
            traceback.print_exc()
            self._pipeline = None
            self._fail(exc, "start")

    def _start(self, config: EngineConfig) -> None:
        if self.state in (RUNNING, STOPPING, LOADING):
            self.stop(True)
        self._cancel.clear()
        self._kinds = tuple(spec.kind for spec in config.sources)
        if not config.sources:
            emit(self.error, "No audio source is selected. Choose a microphone, system audio or a file.", "no_source")
            self._set_state(IDLE)
            emit(self.stopped)
            return
        key = config.backend_key()
        if self._model_busy():  # still inside the call a Stop abandoned: load a fresh one
            self.backend, self._backend_key, self._left_behind = None, None, None
        ready = self.backend is not None and self._backend_key == key
        if not ready and self.backend is not None:
            self.unload()  # another model: release this one first
        from captioner.audio.block import MODEL_RATE

        try:
            sources = self.source_factory(config.sources, self.backend if ready else ModelRate(MODEL_RATE))
            early = [] if ready else open_before_load(sources)  # capture from the moment of Start
        except Exception as exc:  # noqa: BLE001 - reported to the user, transcript kept
            self._fail(exc, "sources")
            return
        if ready:
            self._begin(config, sources)
            return
        self._pending = (config, sources, early)
        self._set_state(LOADING)
        self._start_preview()
        what = "the built-in model" if config.backend == "default" else (config.model or config.backend)
        listening = " Listening already: captions catch up once it is ready." if early else ""
        emit(self.progress, f"Loading {what}…{listening}", -1)
        if self._load is not None and self._load_key == key:
            return  # a load of this model is in flight (Start, Stop, Start): wait for that one
        self._load_key = key
        self._load = BackgroundLoad(lambda: self._load_backend(config), on_done=lambda load: emit(self._loaded, load))

    def _start_preview(self) -> None:
        """Level meters from Start on: the sources' newest audio every 50 ms while the model loads."""
        if self._preview is None:
            self._preview = QTimer(self)
            self._preview.setInterval(50)
            self._preview.timeout.connect(self._emit_preview)
        self._preview_seen = {}
        self._preview.start()

    def _stop_preview(self) -> None:
        if self._preview is not None:
            self._preview.stop()

    def _emit_preview(self) -> None:
        if self._pending is None:
            self._stop_preview()
            return
        for level in preview_levels(self._pending[2], self._preview_seen):
            self._on_event(level)

    def _load_backend(self, config: EngineConfig) -> Any:
        """The backend factory, on the loading thread; the default model's one-time preparation
        reports to the model panel (no onnxruntime import here)."""
        from captioner.asr.moonshine.prepare import progress_to

        with progress_to(self._preparation_progress):
            return self.backend_factory(config)

    @Slot(object)
    def _on_loaded(self, load: BackgroundLoad) -> None:
        """A model load ended (worker thread): start the run that waits for it, if any."""
        if load is not self._load:  # given up (another model chosen, or unloaded): release it
            if load.backend is not None:
                _close_quietly(load.backend)
            return
        key, self._load, self._load_key = self._load_key, None, None
        pending, self._pending = self._pending, None
        self._stop_preview()
        if load.error is not None:
            self.backend = None
            if pending is not None:
                close_sources(pending[2])
                self._fail(load.error, "load")
            return
        self.backend, self._backend_key = load.backend, key
        if pending is not None:  # (after a Stop the status line keeps saying "Stopped")
            emit(self.progress, "Model ready", 100)
        describe = getattr(self.backend, "describe", None)
        emit(self.backend_ready, describe() if callable(describe) else str(key[0] if key else "model"))
        if pending is not None and self._cancel.is_set():  # a Stop is on its way: it ends this start
            close_sources(pending[2])
            pending = None
        if pending is None:  # stopped while loading: the model is kept for the next Start
            return
        config, sources, early = pending
        from captioner.audio.block import MODEL_RATE

        if early and self.backend.sample_rate != MODEL_RATE:  # this model takes another rate: reopen at it
            lost = captured_s(early)
            close_sources(early)
            try:
                sources = self.source_factory(config.sources, self.backend)
            except Exception as exc:  # noqa: BLE001
                self._fail(exc, "sources")
                return
            self._on_event(Notice(f"This model takes {self.backend.sample_rate} Hz audio, so the sources were "
                                  f"opened again; the {lost:.1f} s said while it loaded are not captioned.",
                                  "warning", "catching_up"))
        self._begin(config, sources)

    def _begin(self, config: EngineConfig, sources: list) -> None:
        """Run the pipeline on ``sources`` (those started early have queued audio since Start)."""
        backlog = captured_s(sources)  # said since Start while the model loaded
        try:
            extra = {"turns": config.turns} if config.turns is not None else {}
            if config.speakers is not None and takes_keyword(self.pipeline_factory, "speakers"):
                extra["speakers"] = config.speakers  # who is speaking (issue 38)
            if getattr(config, "sounds", None) is not None and takes_keyword(self.pipeline_factory, "sounds"):
                extra["sounds"] = config.sounds  # sounds that are not speech (issue 49)
            self._run = EventGate()
            self._pipeline = self.pipeline_factory(self.backend, sources, self._run.wrap(self._on_event), **extra)
            self._pipeline.start()
        except Exception as exc:  # noqa: BLE001
            self._pipeline = None
            close_sources(sources)
            self._fail(exc, "start")
            return
        self._set_state(RUNNING)
        emit(self.started)
        if backlog >= 1.0:
            self._on_event(Notice(f"Catching up: the {backlog:.0f} s said while the model loaded are being "
                                  "captioned now; nothing was lost.", "info", "catching_up"))
        if self._watch is None:
            self._watch = QTimer(self)
            self._watch.setInterval(self.WATCH_MS)
            self._watch.timeout.connect(self._check_alive)
        self._watch.start()

    @Slot(bool)
    def stop(self, drain: bool = True) -> None:
        """Stop captioning within 2 s; with ``drain`` the queued audio is decoded and the model
        flushed as far as :func:`captioner.engine.stopping.stop_within` allows.

        Every event the stop lets through is emitted before :attr:`stopped`; what was skipped
        is told once (a ``stop_skipped`` warning notice). A model call that outlived the bound
        is left on its daemon thread: its later events are dropped and its backend is not
        reused (the next Start loads the model again) nor closed.
        """
        if self._watch is not None:
            self._watch.stop()
        pending, self._pending = self._pending, None
        self._stop_preview()
        if pending is not None:  # Stop while the model loads: the capture closes now, the load goes on
            close_sources(pending[2])
        pipeline, self._pipeline = self._pipeline, None
        if pipeline is None:
            if self.state != IDLE:
                self._set_state(IDLE)
                emit(self.stopped)  # receivers that wait for stopped() are never left waiting
            return
        self._set_state(STOPPING)
        try:
            outcome = (stop_within(pipeline) if drain  # without drain: no queue to tell about
                       else StopOutcome(True, 0.0, pipeline.stop(drain=False, timeout=FLUSH_S)))
        except Exception as exc:  # noqa: BLE001
            self._run.close()
            msg, code = describe_error(exc, "stop")
            emit(self.error, msg, code)
        else:
            self._run.close()  # nothing of this run after stopped()
            if not outcome.ended:
                self._left_behind = pipeline
            if outcome.message():
                self._on_event(Notice(outcome.message(), "warning", "stop_skipped"))
        self._set_state(IDLE)
        emit(self.stopped)

    @Slot()
    def unload(self) -> None:
        """Stop and release the backend (switching models or quitting)."""
        self.stop(True)
        self._load, self._load_key = None, None  # a load in flight is released when it ends
        backend, self.backend, self._backend_key = self.backend, None, None
        if backend is not None and not self._model_busy():  # a hung call keeps it: leave it to its thread
            try:
                backend.close()
            except Exception:  # noqa: BLE001 - closing must not fail the app
                traceback.print_exc()

    @Slot()
    def shutdown(self) -> None:
        """Stop, release the model and end this worker's thread event loop."""
        self.unload()
        thread = self.thread()
        if thread is not None:
            thread.quit()

    # -- internals -------------------------------------------------------------------------------
    def _model_busy(self) -> bool:
        """A model call of a run stopped by the bound is still running on the backend."""
        if self._left_behind is not None and not self._left_behind.is_running:
            self._left_behind = None
        return self._left_behind is not None

    def _fail(self, exc: BaseException, during: str) -> None:
        msg, code = describe_error(exc, during, self._kinds)
        emit(self.error, msg, code)
        self._set_state(IDLE)
        emit(self.stopped)

    def _preparation_progress(self, message: str, percent: int) -> None:
        """The default model's one-time preparation (:mod:`captioner.asr.moonshine.prepare`): its
        steps go to the model panel; a warning (percent -1: the cache folder is read-only or full,
        the model is prepared in memory) is also a Notice, so the messages panel keeps it where
        the panel's next step would replace it within a second."""
        emit(self.progress, message, percent)
        if percent == -1:
            emit(self.notice, Notice(message, "warning", "model_cache"))

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            emit(self.state_changed, state)

    def _on_event(self, ev: Event) -> None:
        """Called from the pipeline's thread: re-emit as signals (queued to receivers)."""
        emit(self.event, ev)
        if isinstance(ev, TextDelta):
            emit(self.text_delta, ev)
        elif isinstance(ev, TurnBoundary):
            emit(self.turn_boundary, ev)
        elif isinstance(ev, Stats):
            emit(self.stats, ev)
        elif isinstance(ev, Level):
            emit(self.level, ev)
        elif isinstance(ev, Notice):
            emit(self.notice, ev)

    def _check_alive(self) -> None:
        p = self._pipeline
        if p is None or self.state != RUNNING:
            return
        if not p.is_running:
            err = getattr(p, "error", None)
            self._pipeline = None
            self._watch.stop()
            self._set_state(IDLE)
            if err is not None:
                msg, code = describe_error(err, "run", self._kinds)
                emit(self.error, msg, code)
            emit(self.stopped)


def _close_quietly(backend: Any) -> None:
    try:
        backend.close()
    except Exception:  # noqa: BLE001 - closing must not fail the app
        traceback.print_exc()
