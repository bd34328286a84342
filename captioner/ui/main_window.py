"""MainWindow: sources, model, Start/Stop, the running transcript, stats, Save, messages.

The window is a view and a dispatcher: the engine runs on its QThread
(:class:`~captioner.engine.qt_worker.EngineController`), files are written by
:class:`~captioner.ui.recorder.TranscriptRecorder` (through ``captioner.transcript``),
captions are drawn by the :class:`~captioner.ui.overlay.CaptionOverlay`. Every event
arrives through one queued signal, in order, and goes to the recorder first (so no
word is lost whatever a view does), then to the views.
"""

from __future__ import annotations

import html
import math
import os
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from captioner.asr.geometry import AUDIO8_OPERATING_POINTS, allowed_delays, post_trained_delays
from captioner.engine.qt_emit import emit
from captioner.engine.qt_worker import EngineConfig, EngineController, SourceSpec
from captioner.events import Event, Level, Notice, Stats, TextDelta, TurnBoundary, VoiceActivity
from captioner.ui.level_meter import LevelMeter
from captioner.ui.messages import MessageBar
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.recorder import SAVE_FORMATS, TranscriptRecorder
from captioner.ui.settings import Keys, Settings, turn_backend_options, turn_settings

#: Backlog (s of audio waiting) above which the user is told the model is falling behind.
BACKLOG_WARN_S = 4.0
#: Backlog below which that warning is withdrawn.
BACKLOG_OK_S = 1.0
#: Window size (px): the smallest it can be made, and the first-run default.
MIN_WINDOW = (600, 520)
DEFAULT_WINDOW = (820, 720)
#: Height (px) the transcript pane always keeps (about five lines).
MIN_TRANSCRIPT_PX = 110
#: Message codes that stay when a run starts (they are not about the previous run).
PERSISTENT_MESSAGES = ("recovery", "recovered", "wayland", "save")

_BACKENDS = [
    ("default", "Built-in model (English, offline)"),
    ("audio8", "Audio8 ASR Infinite checkpoint (folder)"),
    ("tflite", "TensorFlowASR .tflite file"),
    ("remote", "Remote Audio8 server (URL)"),
]
_MODES = [
    ("microphone", "Microphone"),
    ("system", "System audio (what you hear)"),
    ("both", "Microphone and system audio"),
    ("file", "Audio file, played as if live"),
]
#: Backends whose model takes the Audio8 clock/delay and knows Chinese.
_CLOCKED = ("audio8", "remote")


def format_time(seconds: float) -> str:
    """Stream seconds as ``m:ss`` (``h:mm:ss`` past an hour)."""
    s = int(max(0.0, seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class MainWindow(QMainWindow):
    """The main window.

    Args:
        settings: typed settings (read on start, written on change).
        overlay: the caption overlay to drive.
        controller: the engine on its thread (a default one when ``None``).
        recorder: transcript/journal/autosave (a default one when ``None``).

    Signals:
        transcript_line(str): each line appended to the transcript pane.
        closed(): the window was closed (the app quits).
    """

    transcript_line = Signal(str)
    closed = Signal()

    def __init__(
        self,
        settings: Settings,
        overlay: CaptionOverlay,
        controller: EngineController | None = None,
        recorder: TranscriptRecorder | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.overlay = overlay
        self.controller = controller or EngineController(parent=self)
        self.recorder = recorder or TranscriptRecorder(parent=self)
        self.setWindowTitle("captioner")
        self.engine_state = "idle"
        self._open_text: dict[str, str] = {}
        self._partials: dict[str, str] = {}
        self._stats: dict[str, Stats] = {}
        self._meters: dict[str, LevelMeter] = {}
        #: (source, start, text) of each segment shown -> its block in the transcript pane.
        self._segment_blocks: dict[tuple, int] = {}
        self._separator_pending = False
        self._unsaved = False  # transcript text not yet written by Save as… (or autosave)
        self._quitting = False  # a close is waiting for the engine to drain
        self._close_choice: str | None = None  # "save" / "discard" once asked during a close
        self._user_quit = False  # the close in progress was asked for by the user (may ask questions)
        self._build()
        self._load_settings()
        self._wire()
        self._update_controls()

    # -- layout ------------------------------------------------------------------------------
    def _build(self) -> None:
        central = QWidget()
        root = QVBoxLayout(central)
        self.messages = MessageBar()
        root.addWidget(self.messages)

        # sources
        src_box = QGroupBox("Audio")
        grid = QGridLayout(src_box)
        self.mode_combo = QComboBox()
        for key, text in _MODES:
            self.mode_combo.addItem(text, key)
        grid.addWidget(QLabel("Caption:"), 0, 0)
        grid.addWidget(self.mode_combo, 0, 1, 1, 3)
        self.mic_combo = QComboBox()
        self.mic_meter = LevelMeter()
        grid.addWidget(QLabel("Microphone:"), 1, 0)
        grid.addWidget(self.mic_combo, 1, 1)
        grid.addWidget(self.mic_meter, 1, 2)
        self.system_combo = QComboBox()
        self.system_meter = LevelMeter()
        grid.addWidget(QLabel("System audio:"), 2, 0)
        grid.addWidget(self.system_combo, 2, 1)
        grid.addWidget(self.system_meter, 2, 2)
        self.refresh_button = QPushButton("Refresh devices")
        grid.addWidget(self.refresh_button, 1, 3)
        self.file_edit = QLineEdit()
        self.file_edit.setPlaceholderText("WAV, FLAC or OGG file")
        self.file_button = QPushButton("Browse…")
        self.file_meter = LevelMeter()
        grid.addWidget(QLabel("File:"), 3, 0)
        grid.addWidget(self.file_edit, 3, 1)
        grid.addWidget(self.file_meter, 3, 2)
        grid.addWidget(self.file_button, 3, 3)
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(2, 1)

        # model
        model_box = QGroupBox("Model")
        form = QFormLayout(model_box)
        self.backend_combo = QComboBox()
        for key, text in _BACKENDS:
            self.backend_combo.addItem(text, key)
        form.addRow("Model:", self.backend_combo)
        row = QHBoxLayout()
        self.model_edit = QLineEdit()
        self.model_button = QPushButton("Browse…")
        row.addWidget(self.model_edit, 1)
        row.addWidget(self.model_button)
        self.model_row_label = QLabel("Location:")
        form.addRow(self.model_row_label, row)
        timing = QHBoxLayout()
        self.clock_combo = QComboBox()
        for clock in sorted(AUDIO8_OPERATING_POINTS):
            self.clock_combo.addItem(f"{clock} ms", clock)
        self.delay_combo = QComboBox()
        self.delay_combo.setToolTip("Transcription delay: a multiple of the clock; ★ marks the post-trained points")
        self.language_combo = QComboBox()
        self.language_combo.addItem("English", "en")
        self.language_combo.addItem("Chinese", "zh")
        self.clock_label = QLabel("Clock:")
        self.delay_label = QLabel("Delay:")
        timing.addWidget(self.clock_label)
        timing.addWidget(self.clock_combo)
        timing.addWidget(self.delay_label)
        timing.addWidget(self.delay_combo)
        timing.addWidget(QLabel("Language:"))
        timing.addWidget(self.language_combo)
        timing.addStretch(1)
        form.addRow(timing)

        # run controls
        run = QHBoxLayout()
        self.start_button = QPushButton("Start")
        self.start_button.setDefault(True)
        self.start_button.setMinimumWidth(110)
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.setVisible(False)
        self.status_label = QLabel("Ready")
        self.stats_label = QLabel("")
        self.stats_label.setObjectName("stats")
        run.addWidget(self.start_button)
        run.addWidget(self.progress)
        run.addWidget(self.status_label, 1)
        run.addWidget(self.stats_label)

        # transcript
        self.transcript_view = QPlainTextEdit()
        self.transcript_view.setReadOnly(True)
        self.transcript_view.setPlaceholderText("The transcript appears here, with times and sources.")
        self.live_label = QLabel("")
        self.live_label.setWordWrap(True)
        self.live_label.setTextFormat(Qt.TextFormat.RichText)
        self.live_label.setObjectName("live")
        pane = QWidget()
        pl = QVBoxLayout(pane)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.transcript_view, 1)
        pl.addWidget(self.live_label)

        auto = QHBoxLayout()
        self.autosave_check = QCheckBox("Write the transcript continuously to:")
        self.autosave_edit = QLineEdit()
        self.autosave_edit.setPlaceholderText("choose a folder")
        self.autosave_button = QPushButton("Folder…")
        self.save_button = QPushButton("Save as…")
        auto.addWidget(self.autosave_check)
        auto.addWidget(self.autosave_edit, 1)
        auto.addWidget(self.autosave_button)
        auto.addSpacing(12)
        auto.addWidget(self.save_button)

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(src_box)
        tl.addWidget(model_box)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(pane)
        split.setStretchFactor(1, 1)
        root.addLayout(run)
        root.addWidget(split, 1)
        root.addLayout(auto)
        self.setCentralWidget(central)

        # actions and menus
        self.start_action = QAction("Start / Stop", self)
        self.overlay_action = QAction("Show captions overlay", self, checkable=True)
        self.click_through_action = QAction("Overlay click-through", self, checkable=True)
        self.save_action = QAction("Save transcript as…", self)
        self.save_action.setShortcut(QKeySequence.StandardKey.Save)
        self.settings_action = QAction("Settings…", self)
        self.quit_action = QAction("Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        for a in (self.start_action, self.overlay_action, self.click_through_action):
            a.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
            self.addAction(a)
        menu = self.menuBar().addMenu("&File")
        menu.addAction(self.save_action)
        menu.addAction(self.settings_action)
        menu.addSeparator()
        menu.addAction(self.quit_action)
        view = self.menuBar().addMenu("&Captions")
        view.addAction(self.start_action)
        view.addAction(self.overlay_action)
        view.addAction(self.click_through_action)
        # resizable: a sensible minimum, a default size that fits the screen; the transcript
        # pane keeps a minimum height so messages never squeeze it away
        self.transcript_view.setMinimumHeight(MIN_TRANSCRIPT_PX)
        self.setMinimumSize(*MIN_WINDOW)
        self.resize(*DEFAULT_WINDOW)

    def _wire(self) -> None:
        w = self.controller  # its signals arrive in the GUI thread, in order
        w.event.connect(self._on_event)
        w.state_changed.connect(self._on_state)
        w.progress.connect(self._on_progress)
        w.backend_ready.connect(lambda text: self.status_label.setText(f"Model: {text}"))
        w.error.connect(self._on_error)
        w.stopped.connect(self._on_stopped)
        w.started.connect(self._on_started)
        self.recorder.segment_closed.connect(self._on_segment)
        self.recorder.notice.connect(self._show_notice)
        self.start_button.clicked.connect(self.toggle_running)
        self.start_action.triggered.connect(self.toggle_running)
        self.overlay_action.toggled.connect(self.set_overlay_visible)
        self.click_through_action.toggled.connect(self.overlay.set_click_through)
        self.overlay.click_through_changed.connect(self.click_through_action.setChecked)
        self.save_action.triggered.connect(self.save_dialog)
        self.save_button.clicked.connect(self.save_dialog)
        self.backend_combo.currentIndexChanged.connect(self._on_backend_changed)
        self.clock_combo.currentIndexChanged.connect(self._fill_delays)
        self.mode_combo.currentIndexChanged.connect(self._update_controls)
        self.file_button.clicked.connect(self._browse_file)
        self.model_button.clicked.connect(self._browse_model)
        self.autosave_button.clicked.connect(self._browse_autosave)
        self.refresh_button.clicked.connect(self.refresh_devices)

    # -- settings ----------------------------------------------------------------------------
    def _load_settings(self) -> None:
        s = self.settings
        _select(self.mode_combo, s.get(Keys.SOURCE_MODE))
        _select(self.backend_combo, s.get(Keys.BACKEND))
        self._on_backend_changed()
        _select(self.clock_combo, s.get(Keys.CLOCK_MS))
        self._fill_delays()
        _select(self.delay_combo, s.get(Keys.DELAY_MS))
        _select(self.language_combo, s.get(Keys.LANGUAGE))
        self.file_edit.setText(s.get(Keys.FILE))
        self.autosave_check.setChecked(s.get(Keys.AUTOSAVE_ENABLED))
        self.autosave_edit.setText(s.get(Keys.AUTOSAVE_DIR))
        self.refresh_devices()
        self.overlay_action.setChecked(s.get(Keys.OVERLAY_VISIBLE))
        self.click_through_action.setChecked(self.overlay.click_through)
        self.apply_shortcuts()
        geom = s.get(Keys.MAIN_WINDOW_GEOMETRY)
        if geom:
            try:
                self.restoreGeometry(bytes.fromhex(geom))
            except ValueError:
                pass

    def apply_shortcuts(self) -> None:
        """(Re)bind the keyboard shortcuts from the settings (after the settings dialog)."""
        s = self.settings
        self.start_action.setShortcut(QKeySequence(s.get(Keys.SHORTCUT_START_STOP)))
        self.overlay_action.setShortcut(QKeySequence(s.get(Keys.SHORTCUT_TOGGLE_OVERLAY)))
        self.click_through_action.setShortcut(QKeySequence(s.get(Keys.SHORTCUT_CLICK_THROUGH)))

    def save_settings(self) -> None:
        """Store the current choices."""
        s = self.settings
        s.set(Keys.SOURCE_MODE, self.mode_combo.currentData())
        s.set(Keys.BACKEND, self.backend_combo.currentData())
        backend = self.backend_combo.currentData()
        path_key = {"audio8": Keys.AUDIO8_DIR, "tflite": Keys.TFLITE_FILE, "remote": Keys.REMOTE_URL}.get(backend)
        if path_key is not None:
            s.set(path_key, self.model_edit.text().strip())
        s.set(Keys.CLOCK_MS, int(self.clock_combo.currentData()))
        if self.delay_combo.currentData() is not None:
            s.set(Keys.DELAY_MS, int(self.delay_combo.currentData()))
        s.set(Keys.LANGUAGE, self.language_combo.currentData())
        s.set(Keys.FILE, self.file_edit.text().strip())
        s.set(Keys.MICROPHONE, self.mic_combo.currentData() or "")
        s.set(Keys.SYSTEM_AUDIO, self.system_combo.currentData() or "")
        s.set(Keys.AUTOSAVE_ENABLED, self.autosave_check.isChecked())
        s.set(Keys.AUTOSAVE_DIR, self.autosave_edit.text().strip())
        s.set(Keys.OVERLAY_VISIBLE, self.overlay_action.isChecked())
        s.set(Keys.MAIN_WINDOW_GEOMETRY, bytes(self.saveGeometry()).hex())
        s.sync()

    def _on_backend_changed(self) -> None:
        backend = self.backend_combo.currentData()
        path_key = {"audio8": Keys.AUDIO8_DIR, "tflite": Keys.TFLITE_FILE, "remote": Keys.REMOTE_URL}.get(backend)
        self.model_edit.setText(self.settings.get(path_key) if path_key else "")
        self.model_edit.setPlaceholderText(
            {"audio8": "checkpoint folder", "tflite": "model.tflite", "remote": "ws://host:18191/v1/realtime"}.get(
                backend, ""
            )
        )
        self._update_controls()

    def _fill_delays(self) -> None:
        clock = int(self.clock_combo.currentData() or 80)
        keep = self.delay_combo.currentData() or self.settings.get(Keys.DELAY_MS)
        trained = post_trained_delays(clock)
        self.delay_combo.blockSignals(True)
        self.delay_combo.clear()
        for d in allowed_delays(clock):
            self.delay_combo.addItem(f"{d} ms ★" if d in trained else f"{d} ms", d)
        self.delay_combo.blockSignals(False)
        if not _select(self.delay_combo, keep) and trained:
            _select(self.delay_combo, trained[len(trained) // 2])

    def _update_controls(self) -> None:
        backend = self.backend_combo.currentData()
        mode = self.mode_combo.currentData()
        busy = self.engine_state != "idle"
        clocked = backend in _CLOCKED
        for wdg in (self.clock_combo, self.delay_combo):
            wdg.setEnabled(clocked and not busy)
        # the built-in and TFLite models have no Audio8 clock/delay to choose: hide the pickers
        for wdg in (self.clock_label, self.clock_combo, self.delay_label, self.delay_combo):
            wdg.setVisible(clocked)
        self.language_combo.setEnabled(clocked and not busy)
        if not clocked:
            _select(self.language_combo, "en")
        has_location = backend != "default"
        self.model_edit.setVisible(has_location)
        self.model_row_label.setVisible(has_location)
        self.model_button.setVisible(backend in ("audio8", "tflite"))
        for wdg in (self.backend_combo, self.model_edit, self.model_button, self.mode_combo):
            wdg.setEnabled(not busy)
        self.mic_combo.setEnabled(mode in ("microphone", "both") and not busy)
        self.system_combo.setEnabled(mode in ("system", "both") and not busy)
        self.file_edit.setEnabled(mode == "file" and not busy)
        self.file_button.setEnabled(mode == "file" and not busy)
        self.start_button.setText({"idle": "Start", "loading": "Cancel", "stopping": "Stopping…"}.get(
            self.engine_state, "Stop"))
        self.start_button.setEnabled(self.engine_state != "stopping")

    # -- devices -----------------------------------------------------------------------------
    def refresh_devices(self) -> None:
        """Fill the microphone and system-audio pickers from ``captioner.audio.devices``."""
        mics, systems, help_text = [], [], ""
        try:
            from captioner.audio import devices

            mics = [(d.label(), d.name) for d in devices.list_microphones()]
            systems = [(d.label(), d.name) for d in devices.list_system_sources()]
            if not systems:
                help_text = devices.system_audio_help()
        except Exception as exc:  # noqa: BLE001 - device listing must never stop the window
            help_text = f"Audio devices could not be listed ({exc})."
        for combo, items, key in ((self.mic_combo, mics, Keys.MICROPHONE), (self.system_combo, systems,
                                                                             Keys.SYSTEM_AUDIO)):
            combo.clear()
            combo.addItem("Default device", "")
            for label, name in items:
                combo.addItem(label, name)
            _select(combo, self.settings.get(key))
        self.system_combo.setToolTip(help_text)

    # -- run control -------------------------------------------------------------------------
    def build_config(self) -> EngineConfig:
        """The engine configuration for the current choices (sources labelled from settings)."""
        s = self.settings
        mode = self.mode_combo.currentData()
        specs = []
        if mode in ("microphone", "both"):
            specs.append(SourceSpec("microphone", s.get(Keys.MIC_LABEL) or "You", self.mic_combo.currentData() or None))
        if mode in ("system", "both"):
            specs.append(SourceSpec("system", s.get(Keys.SYSTEM_LABEL) or "Meeting",
                                    self.system_combo.currentData() or None))
        if mode == "file":
            path = self.file_edit.text().strip()
            specs.append(SourceSpec("file", Path(path).name or "File", path=path or None))
        backend = self.backend_combo.currentData()
        model = self.model_edit.text().strip() or None if backend != "default" else None
        return EngineConfig(
            backend=backend,
            model=model,
            clock_ms=int(self.clock_combo.currentData()),
            delay_ms=int(self.delay_combo.currentData() or 480),
            language=self.language_combo.currentData(),
            sources=tuple(specs),
            options=turn_backend_options(s, backend),
            turns=turn_settings(s),
        )

    def toggle_running(self) -> None:
        """Start when idle, otherwise stop (or cancel a model load)."""
        if self.engine_state == "idle":
            self.start()
        else:
            self.stop()

    def start(self) -> None:
        """Validate the choices, open a new transcript and start the engine (non-blocking)."""
        config = self.build_config()
        problem = self._check_config(config)
        if problem:
            self.messages.show_message(problem, "warning", "config")
            return
        self.messages.clear("config")
        self.save_settings()
        autosave = self.autosave_edit.text().strip() if self.autosave_check.isChecked() else None
        self.recorder.begin(config.backend, [s.label for s in config.sources], autosave)
        self.overlay.clear()
        # "— new session —" goes in before this run's first line, so a Start that fails
        # (or a run that heard nothing) leaves no empty separator behind
        self._separator_pending = self.transcript_view.document().characterCount() > 1
        self._segment_blocks.clear()
        self._open_text.clear()
        self._partials.clear()
        self._stats.clear()
        self._meters = {}
        for spec in config.sources:
            self._meters[spec.label] = {"microphone": self.mic_meter, "system": self.system_meter}.get(
                spec.kind, self.file_meter)
        self.engine_state = "loading"
        self._update_controls()
        self.controller.start(config)

    def stop(self) -> None:
        """Stop the engine; queued audio is decoded and the model flushed first."""
        if self.engine_state == "idle":
            return
        self.status_label.setText("Stopping: finishing the last words…")
        self.controller.stop(True)

    def _check_config(self, config: EngineConfig) -> str:
        if not config.sources:
            return "Choose what to caption: a microphone, system audio or a file."
        for spec in config.sources:
            if spec.kind == "file" and (not spec.path or not os.path.isfile(spec.path)):
                return "The audio file was not found. Choose a WAV, FLAC or OGG file with Browse…"
        if config.backend in ("audio8", "tflite") and not config.model:
            what = "checkpoint folder" if config.backend == "audio8" else ".tflite file"
            return f"Choose the {what} for this model with Browse…, or use the built-in model."
        if config.backend == "remote" and not (config.model or "").startswith(("ws://", "wss://")):
            return "Enter the server address, e.g. ws://127.0.0.1:18191/v1/realtime."
        if self.autosave_check.isChecked() and not self.autosave_edit.text().strip():
            return "Choose a folder for the continuously written transcript, or untick that option."
        return ""

    # -- engine signals ----------------------------------------------------------------------
    def _on_state(self, state: str) -> None:
        if state == "idle":
            # "idle" is taken from stopped(), which comes after the run's last events: a Start
            # pressed between the two would otherwise have its new transcript ended by them
            return
        self.engine_state = state
        self.progress.setVisible(state == "loading" or self._quitting)
        if state == "running":
            self.status_label.setText("Captioning")
        self._update_controls()

    def _on_progress(self, message: str, percent: int) -> None:
        self.status_label.setText(message)
        self.progress.setVisible(0 <= percent < 100 or percent < 0)
        if percent >= 100:
            self.progress.setVisible(False)

    def _on_started(self) -> None:
        # a successful start settles the previous run's errors and warnings
        self.messages.clear_where(lambda row: row.severity in ("error", "warning")
                                  and row.code not in PERSISTENT_MESSAGES)
        self.engine_state = "running"
        self._update_controls()

    def _on_stopped(self) -> None:
        self.recorder.end()
        self.overlay.model.close_all()
        self.overlay.update()
        self._partials.clear()
        self._open_text.clear()
        self._render_live()
        self.engine_state = "idle"
        self.progress.setVisible(False)
        if self.status_label.text() != "Stopped after an error":
            self.status_label.setText("Stopped")
        for meter in (self.mic_meter, self.system_meter, self.file_meter):
            meter.reset()
        self.messages.clear("backlog")
        self._update_controls()
        if self._quitting:
            QTimer.singleShot(0, self.close)  # the drain is done: finish the close

    def _on_error(self, message: str, code: str) -> None:
        self.messages.show_message(message, "error", code)
        self.status_label.setText("Stopped after an error")

    def _on_event(self, ev: Event) -> None:
        self.recorder.add(ev)  # first: the transcript keeps every word whatever happens below
        if isinstance(ev, TextDelta):
            self.overlay.apply_event(ev)
            if ev.final:
                self._open_text[ev.source] = self._open_text.get(ev.source, "") + ev.text
                self._partials.pop(ev.source, None)
            else:
                self._partials[ev.source] = ev.text
            self._render_live()
        elif isinstance(ev, TurnBoundary):
            self.overlay.apply_event(ev)
            self._render_live()
        elif isinstance(ev, VoiceActivity):
            self.overlay.apply_event(ev)
        elif isinstance(ev, Level):
            meter = self._meters.get(ev.source)
            if meter is not None:
                meter.set_level(ev)
        elif isinstance(ev, Stats):
            self._on_stats(ev)
        elif isinstance(ev, Notice):
            self._show_notice(ev)

    def _on_segment(self, seg) -> None:
        """Show a closed segment once; a segment announced again (e.g. re-closed as the end of a
        turn after a sentence/length split) updates its line instead of adding a copy."""
        text = seg.text.strip()
        key = (seg.source, seg.start, seg.text)
        line = f"[{format_time(seg.start)}] {seg.source + ': ' if seg.source else ''}{text}"
        block = self._segment_blocks.get(key)
        if block is not None:
            self._replace_line(block, line)
            return
        rest = self._open_text.get(seg.source, "")
        self._open_text[seg.source] = rest[len(seg.text):] if rest.startswith(seg.text) else ""
        if text:
            if self._separator_pending:
                self._separator_pending = False
                self._append_line("— new session —")
            self._segment_blocks[key] = self._append_line(line)
            if self.recorder.autosave_path is None:  # an autosaved run is written as it goes
                self._unsaved = True
        self._render_live()

    def _append_line(self, line: str) -> int:
        """Append one line to the pane; returns its block number."""
        self.transcript_view.appendPlainText(line)
        emit(self.transcript_line, line)
        return self.transcript_view.document().blockCount() - 1

    def _replace_line(self, block_number: int, line: str) -> None:
        block = self.transcript_view.document().findBlockByNumber(block_number)
        if not block.isValid() or block.text() == line:
            return
        cursor = QTextCursor(block)
        cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(line)

    def _render_live(self) -> None:
        parts = []
        for source in dict.fromkeys(list(self._open_text) + list(self._partials)):
            final = self._open_text.get(source, "").strip()
            partial = self._partials.get(source, "").strip()
            if not final and not partial:
                continue
            label = f"<b>{html.escape(source)}:</b> " if source else ""
            tail = f" <i style='color:gray'>{html.escape(partial)}</i>" if partial else ""
            parts.append(f"{label}{html.escape(final)}{tail}")
        self.live_label.setText("<br>".join(parts))

    def live_text(self) -> str:
        """The not-yet-closed text shown under the transcript, as plain text."""
        return self.live_label.text()

    def _on_stats(self, st: Stats) -> None:
        self._stats[st.source] = st
        rtf = max((s.rtf for s in self._stats.values()), default=0.0)
        backlog = max((s.backlog_s for s in self._stats.values()), default=0.0)
        overflows = sum(s.overflows for s in self._stats.values())
        dropped = sum(s.dropped_s for s in self._stats.values())
        text = f"RTF {rtf:.2f} · backlog {backlog:.1f} s · overflows {overflows}"
        if dropped > 0:
            text += f" · dropped {dropped:.1f} s"
        self.stats_label.setText(text)
        if backlog > BACKLOG_WARN_S and math.isfinite(backlog):
            if not any(code == "backlog" for _, _, code in self.messages.messages()):
                self.messages.show_message(
                    f"Captions are falling behind: {backlog:.0f} s of audio are waiting for the model. Choose a "
                    "faster model (the built-in one, or a longer clock/delay), or close other busy programs.",
                    "warning",
                    "backlog",
                )
        elif backlog < BACKLOG_OK_S:
            self.messages.clear("backlog")

    def _show_notice(self, notice: Notice) -> None:
        if notice.code in ("stopped", "journal_ok"):
            return
        self.messages.show_message(notice.message, notice.severity, notice.code or "notice")

    # -- overlay -----------------------------------------------------------------------------
    def set_overlay_visible(self, on: bool) -> None:
        """Show or hide the caption overlay (without taking focus)."""
        if on:
            self.overlay.show()
        else:
            self.overlay.hide()
        if self.overlay_action.isChecked() != on:
            self.overlay_action.setChecked(on)
        self.settings.set(Keys.OVERLAY_VISIBLE, bool(on))

    # -- files ---------------------------------------------------------------------------------
    def save_transcript(self, path: str) -> Path | None:
        """Save the current transcript to ``path`` (format from the suffix); errors become messages."""
        try:
            written = self.recorder.save(path)
        except Exception as exc:  # noqa: BLE001 - TranscriptWriteError, ValueError: shown, never raised
            self.messages.show_message(f"The transcript was not saved: {exc}", "error", "save")
            return None
        self._unsaved = False
        self.messages.show_message(f"Transcript saved to {written}.", "info", "save")
        self.settings.set(Keys.LAST_SAVE_DIR, str(Path(written).parent))
        return Path(written)

    def save_dialog(self) -> Path | None:
        """Ask for a file name and format (TXT, SRT, VTT, JSON) and save.

        Returns:
            The file written, or ``None`` when the user cancelled or writing failed.
        """
        filters = {"txt": "Plain text (*.txt)", "srt": "SubRip subtitles (*.srt)", "vtt": "WebVTT subtitles (*.vtt)",
                   "json": "JSON with times (*.json)"}
        start = self.settings.get(Keys.LAST_SAVE_DIR) or str(Path.home())
        path, chosen = QFileDialog.getSaveFileName(self, "Save transcript", os.path.join(start, "transcript.txt"),
                                                   ";;".join(filters.values()))
        if not path:
            return None
        fmt = next((k for k, v in filters.items() if v == chosen), "txt")
        if Path(path).suffix.lower() not in SAVE_FORMATS.values():
            path += SAVE_FORMATS[fmt]
        return self.save_transcript(path)

    def _browse_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Audio file", self.file_edit.text(),
                                              "Audio (*.wav *.flac *.ogg *.mp3 *.opus);;All files (*)")
        if path:
            self.file_edit.setText(path)

    def _browse_model(self) -> None:
        if self.backend_combo.currentData() == "audio8":
            path = QFileDialog.getExistingDirectory(self, "Audio8 checkpoint folder", self.model_edit.text())
        else:
            path, _ = QFileDialog.getOpenFileName(self, "TFLite model", self.model_edit.text(), "TFLite (*.tflite)")
        if path:
            self.model_edit.setText(path)

    def _browse_autosave(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for the transcript", self.autosave_edit.text())
        if path:
            self.autosave_edit.setText(path)
            self.autosave_check.setChecked(True)

    # -- crash recovery ------------------------------------------------------------------------
    def check_recovery(self) -> bool:
        """Offer to recover the newest journal a crash left behind. Returns True if one was offered."""
        try:
            found = self.recorder.unfinished()
        except Exception:  # noqa: BLE001 - recovery is a convenience, never a blocker
            return False
        if not found:
            return False
        path = found[0]
        self.messages.show_message(
            f"captioner did not close cleanly last time. The transcript of that session was saved in {path}. "
            "Recover it to read and save it, or discard it.",
            "warning",
            "recovery",
            actions=[("Recover", lambda p=path: self.recover(p)), ("Discard", lambda p=path: self.recorder.discard(p))],
        )
        return True

    def recover(self, path) -> None:
        """Load a crashed session's transcript into the window (then Save as… works on it)."""
        try:
            transcript = self.recorder.recover(path)
        except Exception as exc:  # noqa: BLE001
            self.messages.show_message(f"The journal could not be read: {exc}", "error", "recovery")
            return
        self._append_line("— recovered session —")
        self._unsaved = True
        for seg in transcript.segments:
            if seg.text.strip():
                label = f"{seg.source}: " if seg.source else ""
                self._append_line(f"[{format_time(seg.start)}] {label}{seg.text.strip()}")
        self.messages.show_message("The previous session was recovered. Use Save as… to keep it.", "info", "recovered")

    # -- closing -------------------------------------------------------------------------------
    def has_unsaved_text(self) -> bool:
        """True when the window shows transcript text that no Save as… (or autosave) has written."""
        return self._unsaved or any(t.strip() for t in self._open_text.values())

    def ask_unsaved(self) -> str:
        """Ask what to do with the unsaved transcript on quit: ``"save"``, ``"discard"`` or ``"cancel"``."""
        journal = self.recorder.journal_path
        where = (f" Until then a copy is kept only in the session journal, {journal}, which is meant for "
                 "crash recovery, not for reading." if journal else "")
        box = QMessageBox(QMessageBox.Icon.Question, "Quit captioner",
                          "The transcript has text that has not been saved. Save it before quitting?" + where,
                          QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, self)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save",
                QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")

    def _begin_quitting(self) -> None:
        """Stop the engine (it drains: the last words are decoded) and close when it has stopped."""
        self._quitting = True
        self.stop()
        self.status_label.setText("Quitting: finishing the last words…")
        self.progress.setRange(0, 0)  # busy indicator while the model drains and files are flushed
        self.progress.setVisible(True)
        self.start_button.setEnabled(False)
        self.messages.show_message("Quitting: finishing the last words and closing the transcript… "
                                   "This can take a few seconds.", "info", "quitting")

    def request_quit(self) -> bool:
        """The user asked to quit (Quit / Ctrl+Q, the tray, the title bar's close button).

        Asks Save / Discard / Cancel when there is unsaved text, then closes (a running
        engine drains first, see :meth:`closeEvent`). Programmatic closes -- the app
        quitting on SIGINT/SIGTERM, scripts -- never ask: the journal keeps the text.

        Returns:
            False when the user cancelled.
        """
        if self._close_choice is None and self.has_unsaved_text():
            choice = self.ask_unsaved()
            if choice not in ("save", "discard"):
                self._close_choice = None
                return False
            self._close_choice = choice
        self._user_quit = True
        self.close()
        return True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Close: a running engine drains first (with feedback), a chosen Save happens after
        the drain, then the settings are saved and :attr:`closed` is emitted (the app quits)."""
        if event.spontaneous() and not self._user_quit:  # the window manager's close button
            event.ignore()
            QTimer.singleShot(0, self.request_quit)
            return
        if self.engine_state != "idle":
            event.ignore()
            if not self._quitting:
                self._begin_quitting()
            return
        if self._user_quit and self._close_choice is None and self.has_unsaved_text():
            choice = self.ask_unsaved()  # text that arrived only with the drain
            if choice not in ("save", "discard"):
                self._cancel_close(event)
                return
            self._close_choice = choice
        if self._close_choice == "save" and self.has_unsaved_text() and self.save_dialog() is None:
            self._cancel_close(event)  # the save was cancelled or failed: stay open
            return
        self._quitting = False
        self._user_quit = False
        self._close_choice = None
        self.messages.clear("quitting")
        self.save_settings()
        super().closeEvent(event)
        emit(self.closed)

    def _cancel_close(self, event: QCloseEvent) -> None:
        event.ignore()
        self._quitting = False
        self._user_quit = False
        self._close_choice = None
        self.messages.clear("quitting")
        self._update_controls()


def _select(combo: QComboBox, data) -> bool:
    """Select the item whose data equals ``data``; False when there is none."""
    for i in range(combo.count()):
        if combo.itemData(i) == data:
            combo.setCurrentIndex(i)
            return True
    return False
