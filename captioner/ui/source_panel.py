"""SourcePanel: what to caption -- microphone, system audio, both, or a file played as if live.

Owns the "Audio" group of the main window: the mode picker, the two device pickers
(filled from :mod:`captioner.audio.devices`), the file field, and one
:class:`~captioner.ui.level_meter.LevelMeter` per source kind. It turns the choices
into :class:`~captioner.engine.run_setup.SourceSpec` objects and says what is
missing before a Start would fail.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QGridLayout, QGroupBox, QLabel, QLineEdit, QPushButton, QWidget

from captioner.engine.qt_emit import emit
from captioner.engine.run_setup import SourceSpec
from captioner.ui.level_meter import LevelMeter
from captioner.ui.qt_helpers import select_data
from captioner.ui.settings import Keys, Settings

#: (mode key, what the picker shows).
MODES = [
    ("microphone", "Microphone"),
    ("system", "System audio (what you hear)"),
    ("both", "Microphone and system audio"),
    ("file", "Audio file, played as if live"),
]


#: Longest label a file source gets from its name (a label starts every caption turn).
FILE_LABEL_CHARS = 20


def file_label(path: str, custom: str = "") -> str:
    """The caption label of a file source: ``custom`` if set, else the file's name without its
    suffix, cut to :data:`FILE_LABEL_CHARS` characters."""
    if custom.strip():
        return custom.strip()
    stem = Path(path).stem.strip() if path else ""
    if not stem:
        return "File"
    return stem if len(stem) <= FILE_LABEL_CHARS else stem[: FILE_LABEL_CHARS - 1].rstrip() + "…"


def audio_file_problem(path: str) -> str:
    """Why ``path`` cannot be played as a source, or ``""`` (reads the header only)."""
    import soundfile

    try:
        soundfile.info(path)
    except Exception:  # noqa: BLE001 - libsndfile says "Format not recognised" and the like
        name = Path(path).name
        return (f"{name} is not an audio file that can be read. Choose a WAV, FLAC, OGG or MP3 file with "
                f"Browse…, or convert it first, for example: ffmpeg -i \"{name}\" \"{Path(name).stem}.flac\"")
    return ""


#: What a device list shows when the listing found nothing of its kind.
NO_DEVICE_TEXT = {"microphone": "No microphone found", "system": "No system-audio source found"}


class SourcePanel(QGroupBox):
    """The "Audio" group: mode, devices, file and their level meters.

    Args:
        settings: typed settings (read by :meth:`load_settings`, written by :meth:`save_settings`).

    Signals:
        mode_changed(str): the mode picker changed (``"microphone"``, ``"system"``, ``"both"``, ``"file"``).
        changed(): any choice changed (mode, a device, the file).
    """

    mode_changed = Signal(str)
    changed = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Audio", parent)
        self.settings = settings
        self._busy = False
        #: whether the last listing found any microphone / system-audio source
        self.found = {"microphone": True, "system": True}
        self._system_help = ""
        grid = QGridLayout(self)
        self.mode_combo = QComboBox()
        for key, text in MODES:
            self.mode_combo.addItem(text, key)
        self.mode_label = QLabel("Ca&ption:")
        grid.addWidget(self.mode_label, 0, 0)
        grid.addWidget(self.mode_combo, 0, 1, 1, 3)
        self.mic_combo = QComboBox()
        self.mic_meter = LevelMeter(name="Microphone input level")
        self.mic_label = QLabel("&Microphone:")
        grid.addWidget(self.mic_label, 1, 0)
        grid.addWidget(self.mic_combo, 1, 1)
        grid.addWidget(self.mic_meter, 1, 2)
        self.system_combo = QComboBox()
        self.system_meter = LevelMeter(name="System audio input level")
        self.system_label = QLabel("S&ystem audio:")
        grid.addWidget(self.system_label, 2, 0)
        grid.addWidget(self.system_combo, 2, 1)
        grid.addWidget(self.system_meter, 2, 2)
        self.refresh_button = QPushButton("Refresh devices")
        grid.addWidget(self.refresh_button, 1, 3)
        self.file_edit = QLineEdit()
        self.file_edit.setPlaceholderText("WAV, FLAC or OGG file")
        self.file_button = QPushButton("Browse…")
        self.file_meter = LevelMeter(name="File input level")
        self.file_label = QLabel("Fil&e:")
        grid.addWidget(self.file_label, 3, 0)
        grid.addWidget(self.file_edit, 3, 1)
        grid.addWidget(self.file_meter, 3, 2)
        grid.addWidget(self.file_button, 3, 3)
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(2, 1)
        self.grid = grid
        for label, field in ((self.mode_label, self.mode_combo), (self.mic_label, self.mic_combo),
                             (self.system_label, self.system_combo), (self.file_label, self.file_edit)):
            label.setBuddy(field)  # screen readers read the label with the list; Alt+letter moves there
        self.mode_combo.currentIndexChanged.connect(self._on_mode)
        for combo in (self.mic_combo, self.system_combo):
            combo.currentIndexChanged.connect(lambda _i: emit(self.changed))
        self.file_edit.textChanged.connect(lambda _t: emit(self.changed))
        self.file_button.clicked.connect(self._browse_file)
        self.refresh_button.clicked.connect(lambda: self.refresh_devices(rescan=True))

    # -- settings ----------------------------------------------------------------------------
    def load_settings(self) -> None:
        """Show the stored choices (and list the devices)."""
        s = self.settings
        select_data(self.mode_combo, s.get(Keys.SOURCE_MODE))
        self.file_edit.setText(s.get(Keys.FILE))
        self.refresh_devices()
        self.update_controls()

    def save_settings(self) -> None:
        """Store the current choices."""
        s = self.settings
        s.set(Keys.SOURCE_MODE, self.mode())
        s.set(Keys.FILE, self.file_edit.text().strip())
        s.set(Keys.MICROPHONE, self.mic_combo.currentData() or "")
        s.set(Keys.SYSTEM_AUDIO, self.system_combo.currentData() or "")

    # -- state -------------------------------------------------------------------------------
    def mode(self) -> str:
        """The chosen mode key."""
        return self.mode_combo.currentData()

    def set_busy(self, busy: bool) -> None:
        """Lock the choices while the engine runs."""
        self._busy = bool(busy)
        self.update_controls()

    def update_controls(self) -> None:
        """Enable what the mode uses (nothing while busy)."""
        mode, busy = self.mode(), self._busy
        self.mode_combo.setEnabled(not busy)
        self.refresh_button.setEnabled(not busy)
        self.mic_combo.setEnabled(mode in ("microphone", "both") and not busy)
        self.system_combo.setEnabled(mode in ("system", "both") and not busy)
        self.file_edit.setEnabled(mode == "file" and not busy)
        self.file_button.setEnabled(mode == "file" and not busy)

    def _on_mode(self) -> None:
        self.update_controls()
        emit(self.mode_changed, self.mode())
        emit(self.changed)

    # -- devices -----------------------------------------------------------------------------
    def refresh_devices(self, rescan: bool = False) -> None:
        """Fill the microphone and system-audio pickers from ``captioner.audio.devices``.

        Args:
            rescan: make PortAudio enumerate its devices again first (the Refresh button):
                a sound server started or a headset plugged in after the app started is
                only seen by PortAudio after it re-initialises. Never while capturing.
        """
        mics, systems, help_text = [], [], ""
        try:
            from captioner.audio import devices

            if rescan and not self._busy:
                devices.rescan()

            mics = [(d.label(), d.name) for d in devices.list_microphones()]
            systems = [(d.label(), d.name) for d in devices.list_system_sources()]
            if not systems:
                help_text = devices.system_audio_help()
        except Exception as exc:  # noqa: BLE001 - device listing must never stop the window
            help_text = f"Audio devices could not be listed ({exc})."
        for kind, combo, items, key in (("microphone", self.mic_combo, mics, Keys.MICROPHONE),
                                        ("system", self.system_combo, systems, Keys.SYSTEM_AUDIO)):
            combo.blockSignals(True)
            combo.clear()
            if items:
                combo.addItem("Default device", "")
                for label, name in items:
                    combo.addItem(label, name)
                select_data(combo, self.settings.get(key))
            else:  # "Default device" would promise a device that does not exist
                combo.addItem(NO_DEVICE_TEXT[kind], "")
            combo.blockSignals(False)
            self.found[kind] = bool(items)
        self._system_help = help_text
        self.system_combo.setToolTip(help_text)
        emit(self.changed)

    # -- specs -------------------------------------------------------------------------------
    def specs(self) -> list[SourceSpec]:
        """The sources to open for the current choices (labels from the settings)."""
        s = self.settings
        mode = self.mode()
        specs = []
        if mode in ("microphone", "both"):
            specs.append(SourceSpec("microphone", s.get(Keys.MIC_LABEL) or "You", self.mic_combo.currentData() or None))
        if mode in ("system", "both"):
            specs.append(SourceSpec("system", s.get(Keys.SYSTEM_LABEL) or "Meeting",
                                    self.system_combo.currentData() or None))
        if mode == "file":
            path = self.file_edit.text().strip()
            specs.append(SourceSpec("file", file_label(path, s.get(Keys.FILE_LABEL)), path=path or None))
        return specs

    def problem(self, specs: list[SourceSpec]) -> str:
        """What must be fixed before these sources can start, or ``""``."""
        if not specs:
            return "Choose what to caption: a microphone, system audio or a file."
        kinds = {spec.kind for spec in specs}
        if "microphone" in kinds and not self.found["microphone"]:
            return ("No microphone was found. Connect one (or start the sound server) and press Refresh devices, "
                    "or caption system audio or a file instead.")
        if "system" in kinds and not self.found["system"]:
            help_text = f" {self._system_help}" if self._system_help else ""
            return (f"No system-audio source was found.{help_text} Then press Refresh devices, or caption the "
                    "microphone or a file instead.")
        for spec in specs:
            if spec.kind == "file" and (not spec.path or not os.path.isfile(spec.path)):
                return "The audio file was not found. Choose a WAV, FLAC or OGG file with Browse…"
            if spec.kind == "file":
                problem = audio_file_problem(spec.path)
                if problem:
                    return problem
        return ""

    def meter_for(self, kind: str) -> LevelMeter:
        """The level meter of a source kind (``"microphone"``, ``"system"``, ``"file"``)."""
        return {"microphone": self.mic_meter, "system": self.system_meter}.get(kind, self.file_meter)

    def reset_meters(self) -> None:
        """Empty every meter (after Stop)."""
        for meter in (self.mic_meter, self.system_meter, self.file_meter):
            meter.reset()

    def _browse_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Audio file", self.file_edit.text(),
                                              "Audio (*.wav *.flac *.ogg *.mp3 *.opus);;All files (*)")
        if path:
            self.file_edit.setText(path)
