"""MainWindow: assembles the panels, dispatches engine events, saves, recovers and quits.

The window is a view and a dispatcher. Each part has its own file (Buzz style):

- :class:`~captioner.ui.run_events.RunEvents`: the engine's signals (run state, events, stats, notices);
- :class:`~captioner.ui.transcript_files.TranscriptFiles`: Save as… and crash recovery;
- :class:`~captioner.ui.closing.Closing`: quitting (unsaved text, the engine's drain);

- :class:`~captioner.ui.source_panel.SourcePanel`: what to caption, devices, level meters;
- :class:`~captioner.ui.model_panel.ModelPanel`: which model, its location, clock/delay/language;
- :class:`~captioner.ui.run_bar.RunBar`: Start/Stop, progress, status and stats;
- :class:`~captioner.ui.transcript_view.TranscriptView`: the running transcript and live line;
- :class:`~captioner.ui.save_panel.SavePanel`: continuous autosave folder and Save as…;
- :class:`~captioner.ui.session_model.SessionModel`: what the transcript holds, what is unsaved, saving;
- :class:`~captioner.ui.messages.MessageBar`: non-modal messages.

The engine runs on its QThread (:class:`~captioner.engine.qt_controller.EngineController`),
files are written by :class:`~captioner.ui.recorder.TranscriptRecorder` (through
``captioner.transcript``), captions are drawn by the
:class:`~captioner.ui.overlay.CaptionOverlay`. Every event arrives through one queued
signal, in order, and goes to the recorder first (so no word is lost whatever a view
does), then to the views.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QMainWindow, QSplitter, QVBoxLayout, QWidget

from captioner.engine.qt_controller import EngineController
from captioner.engine.qt_emit import emit
from captioner.engine.run_setup import EngineConfig
from captioner.events import Stats
from captioner.ui.closing import Closing
from captioner.ui.focus_ring import install_focus_ring
from captioner.ui.global_shortcuts import GlobalShortcuts
from captioner.ui.level_meter import LevelMeter
from captioner.ui.messages import MessageBar
from captioner.ui.model_panel import ModelPanel
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.overlay_keys import key_mode_action
from captioner.ui.qt_helpers import format_time, standard_keys  # noqa: F401 - format_time for scripts
from captioner.ui.recorder import TranscriptRecorder
from captioner.ui.run_bar import RunBar
from captioner.ui.run_events import RunEvents
from captioner.ui.save_panel import SavePanel
from captioner.ui.session_model import SessionModel
from captioner.ui.settings import (Keys, Settings, hotword_backend_options, profanity_filter, turn_backend_options,
                                   sound_options, speaker_options, turn_settings)
from captioner.ui.shortcuts import ShortcutBinder
from captioner.ui.source_panel import SourcePanel
from captioner.ui.speaker_labels import SpeakerLabels
from captioner.ui.transcript_files import TranscriptFiles
from captioner.ui.transcript_view import MIN_TRANSCRIPT_PX, TranscriptView

#: Window size (px): the smallest it can be made, and the first-run default.
MIN_WINDOW = (600, 520)
DEFAULT_WINDOW = (820, 720)
#: Messages about the audio sources: they go when the user changes the sources.
SOURCE_MESSAGES = ("device_error", "device_lost", "file_error", "source_ended")
#: Messages about the model: they go when the user changes the model.
MODEL_MESSAGES = ("model_missing", "backend_missing", "model_error", "backend_error", "backend_slow")

__all__ = ["MIN_TRANSCRIPT_PX", "MIN_WINDOW", "MainWindow"]


class MainWindow(RunEvents, TranscriptFiles, Closing, QMainWindow):
    """The main window.

    Args:
        settings: typed settings (read on start, written on change).
        overlay: the caption overlay to drive.
        controller: the engine on its thread (a default one when ``None``).
        recorder: transcript/journal/autosave (a default one when ``None``).
        global_shortcuts: the desktop-wide shortcut mechanism (default: this platform's;
            none under the offscreen platform).

    Attributes:
        sources, model_panel, run_bar, transcript_view, save_panel, messages: the panels.
        session: the :class:`SessionModel` (what is unsaved; saving).
        speaker_labels: the :class:`~captioner.ui.speaker_labels.SpeakerLabels` (renaming speakers).
        shortcuts: the :class:`~captioner.ui.shortcuts.ShortcutBinder` of Start/Stop, overlay
            and click-through (in the app and desktop-wide).

    Signals:
        transcript_line(str): each line appended to the transcript pane.
        run_starting(): a new captioning run is about to start (views of the old one clear now).
        closed(): the window was closed (the app quits).
        attention(str): a problem the user must see although this window is not in front
            (a Start from the tray or a shortcut that failed): the app shows it in the tray or
            on the overlay.
    """

    transcript_line = Signal(str)
    run_starting = Signal()
    closed = Signal()
    attention = Signal(str)

    def __init__(
        self,
        settings: Settings,
        overlay: CaptionOverlay,
        controller: EngineController | None = None,
        recorder: TranscriptRecorder | None = None,
        global_shortcuts: GlobalShortcuts | None = None,
    ) -> None:
        super().__init__()
        install_focus_ring()  # the app's every window: the focused control is always visible
        self._global_shortcuts = global_shortcuts
        self.settings = settings
        self.overlay = overlay
        self.controller = controller or EngineController(parent=self)
        self.recorder = recorder or TranscriptRecorder(parent=self)
        self.session = SessionModel(self.recorder, parent=self)
        self.setWindowTitle("captioner")
        self.engine_state = "idle"
        self._stats: dict[str, Stats] = {}
        self._run_backend = ""  # the backend of the run in progress (for advice that fits it)
        self._meters: dict[str, LevelMeter] = {}
        self._stalled: set[str] = set()  # sources whose capture is stalled (waiting for audio)
        self._catching_up = False  # decoding what was said while the model loaded (not "falling behind")
        self._quitting = False  # a close is waiting for the engine to drain
        self._close_choice: str | None = None  # "save" / "discard" once asked during a close
        self._user_quit = False  # the close in progress was asked for by the user (may ask questions)
        self._build()
        self._load_settings()
        self._wire()
        self._update_controls()
        self._update_save_enabled()
        self._form_fitted = False

    def showEvent(self, event) -> None:  # noqa: N802
        """On the first show (laid out at last), give the form its height and the transcript the rest."""
        super().showEvent(event)
        if not self._form_fitted:
            self._form_fitted = True
            self.centralWidget().layout().activate()
            self._fit_form()

    def _fit_form(self) -> None:
        """The form (sources, model) as tall as it needs; the rest of the height for the transcript."""
        total = sum(self.splitter.sizes()) or self.splitter.height()
        form = self._form.sizeHint().height()
        self.splitter.setSizes([form, max(1, total - form) if total > form else 10_000])

    # -- layout ------------------------------------------------------------------------------
    def _build(self) -> None:
        central = QWidget()
        root = QVBoxLayout(central)
        # messages sit above the transcript, below the form: they take room from the transcript
        # pane, never move the buttons and lists the user is about to click
        self.messages = MessageBar()
        self.sources = SourcePanel(self.settings)
        self.model_panel = ModelPanel(self.settings)
        self.run_bar = RunBar()
        self.start_button = self.run_bar.start_button
        self.transcript_view = TranscriptView()
        self.save_panel = SavePanel(self.settings)
        #: who is speaking: renames from the pane (double-click, F2) and Settings (issue 38)
        self.speaker_labels = SpeakerLabels(self.transcript_view, self.session, self.overlay, parent=self)

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.sources)
        tl.addWidget(self.model_panel)
        bottom = QWidget()
        bl = QVBoxLayout(bottom)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.messages)
        bl.addWidget(self.transcript_view, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        self.splitter = split
        self._form = top
        root.addWidget(self.run_bar)
        root.addWidget(split, 1)
        root.addWidget(self.save_panel)
        self.setCentralWidget(central)

        # actions and menus
        self.start_action = QAction("Start / Stop", self)
        self.overlay_action = QAction("Show captions overlay", self, checkable=True)
        self.click_through_action = QAction("Overlay click-through", self, checkable=True)
        self.save_action = QAction("Save transcript as…", self)
        self.save_action.setShortcuts(standard_keys(QKeySequence.StandardKey.Save, "Ctrl+S"))
        self.settings_action = QAction("Settings…", self)
        self.settings_action.setShortcuts(standard_keys(QKeySequence.StandardKey.Preferences, "Ctrl+,"))
        self.quit_action = QAction("Quit", self)
        self.quit_action.setShortcuts(standard_keys(QKeySequence.StandardKey.Quit, "Ctrl+Q"))
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
        # the overlay never takes focus: arrows move/resize it in this key mode (issue 39)
        self.move_overlay_action, self.overlay_keys = key_mode_action(
            self, self.overlay, lambda text: self.messages.show_message(text, "info", "overlay_keys") if text
            else self.messages.clear("overlay_keys"))
        view.addAction(self.move_overlay_action)
        self.transcript_view.announcer.enabled = lambda: self.settings.get(Keys.ANNOUNCE_LINES)
        self.shortcuts = ShortcutBinder(
            self.settings,
            {"start_stop": self.start_action, "toggle_overlay": self.overlay_action,
             "toggle_click_through": self.click_through_action},
            [self.save_action, self.quit_action, self.settings_action, self.move_overlay_action], self.messages, self._global_shortcuts, parent=self)
        # resizable: a sensible minimum, a default size that fits the screen; the transcript
        # pane keeps a minimum height so messages never squeeze it away
        self.setMinimumSize(*MIN_WINDOW)
        self.resize(self.default_size())

    def default_size(self) -> QSize:
        """The first-run size: :data:`DEFAULT_WINDOW`, or as large as the layout asks for when a large
        system font or scale needs more (issue 39), at most 90 % of the screen."""
        hint = self.sizeHint()
        w, h = max(DEFAULT_WINDOW[0], hint.width()), max(DEFAULT_WINDOW[1], hint.height())
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            w, h = min(w, int(0.9 * free.width())), min(h, int(0.9 * free.height()))
        return QSize(max(w, MIN_WINDOW[0]), max(h, MIN_WINDOW[1]))

    def _wire(self) -> None:
        w = self.controller  # its signals arrive in the GUI thread, in order
        w.event.connect(self._on_event)
        w.state_changed.connect(self._on_state)
        w.progress.connect(self._on_progress)
        w.backend_ready.connect(lambda text: self.run_bar.set_status(f"Model: {text}"))
        w.error.connect(self._on_error)
        w.stopped.connect(self._on_stopped)
        w.started.connect(self._on_started)
        self.recorder.segment_closed.connect(self._on_segment)
        self.session.changed.connect(self._update_save_enabled)
        self.recorder.notice.connect(self._show_notice)
        self.transcript_view.line_added.connect(lambda line: emit(self.transcript_line, line))
        self.start_button.clicked.connect(self.toggle_running)
        self.start_action.triggered.connect(self.toggle_running)
        self.overlay_action.toggled.connect(self.set_overlay_visible)
        self.click_through_action.toggled.connect(self.overlay.set_click_through)
        self.overlay.click_through_changed.connect(self.click_through_action.setChecked)
        self.save_action.triggered.connect(self.save_dialog)
        self.save_panel.save_button.clicked.connect(self.save_dialog)
        self.sources.changed.connect(lambda: self._on_form_changed(SOURCE_MESSAGES))
        self.model_panel.changed.connect(lambda: self._on_form_changed(MODEL_MESSAGES))
        self.model_panel.backend_combo.currentIndexChanged.connect(lambda _i: self._fit_form())
        self.save_panel.changed.connect(lambda: self._on_form_changed(()))

    # -- settings ----------------------------------------------------------------------------
    def _load_settings(self) -> None:
        s = self.settings
        self.model_panel.load_settings()
        self.sources.load_settings()
        self.save_panel.load_settings()
        self.overlay_action.setChecked(s.get(Keys.OVERLAY_VISIBLE))
        self.click_through_action.setChecked(self.overlay.click_through)
        self.apply_shortcuts()
        self.apply_text_mask()
        geom = s.get(Keys.MAIN_WINDOW_GEOMETRY)
        if geom:
            try:
                self.restoreGeometry(bytes.fromhex(geom))
            except ValueError:
                pass

    def apply_shortcuts(self) -> None:
        """(Re)bind the keyboard shortcuts from the settings, in the app and desktop-wide (after
        the settings dialog); see :class:`~captioner.ui.shortcuts.ShortcutBinder`.

        A key already taken (by Save, Quit or an earlier action -- an old or hand-edited
        settings file) is not bound a second time: Qt would call it ambiguous and run neither.
        A key another program holds is reported.
        """
        self.shortcuts.apply()

    def apply_text_mask(self) -> None:
        """(Re)apply the profanity filter setting: the overlay, the transcript pane, Save as… and
        autosave mask from now on; the journal always keeps what the model wrote."""
        mask = profanity_filter(self.settings)
        self.overlay.model.set_mask(mask)
        self.overlay.update()
        self.transcript_view.set_mask(mask)
        self.session.mask = mask
        self.recorder.mask = mask

    def save_settings(self) -> None:
        """Store the current choices."""
        s = self.settings
        self.sources.save_settings()
        self.model_panel.save_settings()
        self.save_panel.save_settings()
        s.set(Keys.OVERLAY_VISIBLE, self.overlay_action.isChecked())
        s.set(Keys.MAIN_WINDOW_GEOMETRY, bytes(self.saveGeometry()).hex())
        s.sync()

    def _update_controls(self) -> None:
        busy = self.engine_state != "idle"
        self.sources.set_busy(busy)
        self.model_panel.set_busy(busy)
        self.run_bar.set_state(self.engine_state)

    def _on_form_changed(self, codes: tuple[str, ...]) -> None:
        """A choice changed: messages about what it was are stale; a usage warning goes once fixed."""
        if self.engine_state != "idle":
            return
        self.messages.clear_where(lambda row: row.code in codes)
        if any(code == "config" for _, _, code in self.messages.messages()):
            problem = self._check_config(self.build_config())
            if not problem:
                self.messages.clear("config")
            elif problem not in (text for text, _, code in self.messages.messages() if code == "config"):
                self.messages.show_message(problem, "warning", "config")

    def refresh_devices(self) -> None:
        """Re-list the audio devices."""
        self.sources.refresh_devices()

    # -- run control -------------------------------------------------------------------------
    def build_config(self) -> EngineConfig:
        """The engine configuration for the current choices (sources labelled from settings)."""
        fields = self.model_panel.config_fields()
        fields["options"] = (tuple(fields.get("options", ())) + turn_backend_options(self.settings, fields["backend"])
                             + hotword_backend_options(self.settings, fields["backend"]))
        return EngineConfig(sources=tuple(self.sources.specs()), **fields, turns=turn_settings(self.settings),
                            speakers=speaker_options(self.settings), sounds=sound_options(self.settings))

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
            self._tell_outside(problem)
            return
        self.messages.clear("config")
        self.save_settings()
        self.session.begin_run(config.backend, [s.label for s in config.sources], self.save_panel.autosave_dir())
        self.overlay.clear()
        emit(self.run_starting)
        # a file source named after its file starts no line with that name (read before every line)
        self.transcript_view.prefixes = {spec.label: "" for spec in config.sources
                                         if spec.kind == "file" and not self.settings.get(Keys.FILE_LABEL).strip()}
        self.transcript_view.begin_run()
        self.speaker_labels.begin_run(self.recorder.transcript)  # its speakers' names, in the pane and overlay
        self._stats.clear()
        self._run_backend = config.backend
        self._meters = {spec.label: self.sources.meter_for(spec.kind) for spec in config.sources}
        self.engine_state = "loading"
        self._update_controls()
        self.controller.start(config)

    def stop(self) -> None:
        """Stop the engine; queued audio is decoded and the model flushed first."""
        if self.engine_state == "idle":
            return
        self.run_bar.set_status("Stopping: finishing the last words…")
        self.controller.stop(True)

    def _check_config(self, config: EngineConfig) -> str:
        return (self.sources.problem(list(config.sources)) or self.model_panel.problem(config.backend, config.model,
                                                                                          len(config.sources))
                or self.save_panel.problem())

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
