"""ModelPanel: which speech model captions, where it is, and its Audio8 clock/delay/language.

Owns the "Model" group of the main window. The backend picker chooses between the
built-in model, an Audio8 checkpoint folder, a TensorFlowASR ``.tflite`` file and a
remote Audio8 server; the location row is shown for all but the built-in model (a
Browse… button for the two local kinds); the clock and delay pickers are shown only
for the backends that have an Audio8 clock (DESIGN section 2). The panel turns the
choices into the model part of an :class:`~captioner.engine.run_setup.EngineConfig`
(:meth:`ModelPanel.config_fields`) and says what is missing before Start
(:meth:`ModelPanel.problem`).
"""

from __future__ import annotations

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from captioner.asr.geometry import AUDIO8_OPERATING_POINTS, allowed_delays, post_trained_delays
from captioner.asr.remote.protocol import SERVER_DELAYS_MS
from captioner.engine.qt_emit import emit
from captioner.ui.qt_helpers import select_data
from captioner.ui.settings import Keys, Settings

#: (backend key, what the picker shows).
BACKENDS = [
    ("default", "Built-in model (English, offline)"),
    ("audio8", "Audio8 ASR Infinite checkpoint (folder)"),
    ("tflite", "TensorFlowASR .tflite file"),
    ("remote", "Remote Audio8 server (URL)"),
]
#: Backends whose model takes the Audio8 clock/delay and knows Chinese.
CLOCKED = ("audio8", "remote")
#: The setting that remembers each backend's location.
LOCATION_KEYS = {"audio8": Keys.AUDIO8_DIR, "tflite": Keys.TFLITE_FILE, "remote": Keys.REMOTE_URL}
#: Placeholder text of the location field per backend.
PLACEHOLDERS = {"audio8": "checkpoint folder", "tflite": "model.tflite", "remote": "ws://host:18191/v1/realtime"}


#: Files an Audio8 ASR Infinite checkpoint folder must hold (DESIGN section 2).
AUDIO8_FILES = ("config.json", "model.safetensors")
#: A TFLite flatbuffer carries this identifier at bytes 4..8.
TFLITE_MAGIC = b"TFL3"


def audio8_folder_problem(folder: str) -> str:
    """Why ``folder`` is not an Audio8 checkpoint folder, or ``""`` (file names only)."""
    if not os.path.exists(folder):
        return f"The checkpoint folder {folder} was not found. Choose the Audio8 checkpoint folder with Browse…"
    if not os.path.isdir(folder):
        return (f"{folder} is a file. Choose the Audio8 checkpoint folder (the one holding config.json and "
                "model.safetensors) with Browse…")
    missing = [name for name in AUDIO8_FILES if not os.path.isfile(os.path.join(folder, name))]
    if missing:
        return (f"The folder {folder} has no {' and no '.join(missing)}, so it is not an Audio8 ASR Infinite "
                "checkpoint. Choose the folder that holds config.json and model.safetensors with Browse…")
    return ""


def tflite_file_problem(path: str) -> str:
    """Why ``path`` is not a TFLite model file, or ``""`` (reads 8 bytes)."""
    if not os.path.exists(path):
        return f"The model file {path} was not found. Choose a .tflite file with Browse…"
    if os.path.isdir(path):
        return f"{path} is a folder. Choose the .tflite file itself with Browse…"
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        return f"The model file {path} cannot be read ({exc.strerror or exc}). Check its permissions."
    if head[4:8] != TFLITE_MAGIC:
        return (f"{os.path.basename(path)} is not a TensorFlow Lite model (it does not start like a .tflite "
                "export). Choose a model exported with tensorflow_asr tflite, or use the built-in model.")
    return ""


def remote_problem(urls: str | None, sources: int = 1) -> str:
    """Why ``urls`` cannot caption ``sources`` sources on remote servers, or ``""`` (no network)."""
    from captioner.asr import model_problem

    if not (urls or "").strip():
        return "Enter the server address, e.g. ws://127.0.0.1:18191/v1/realtime."
    problem = model_problem("remote", urls)
    if problem:
        return problem[0].upper() + problem[1:] + ("" if problem.endswith((".", "?")) else ".")
    count = len([u for u in urls.replace(" ", ",").split(",") if u.strip()])
    if sources > count:
        return (f"{sources} sources need {sources} caption servers: an Audio8 server serves one stream, and only "
                f"{count} URL is entered. Give one URL per source, comma-separated (e.g. "
                "ws://HOST:18191/v1/realtime,ws://HOST:18193/v1/realtime), or caption one source.")
    return ""


class ModelPanel(QGroupBox):
    """The "Model" group: backend, location, clock, delay, language.

    Args:
        settings: typed settings (read by :meth:`load_settings`, written by :meth:`save_settings`).

    Signals:
        changed(): any choice changed (backend, location, clock, delay, language).
    """

    changed = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Model", parent)
        self.settings = settings
        self._busy = False
        form = QFormLayout(self)
        self.backend_combo = QComboBox()
        for key, text in BACKENDS:
            self.backend_combo.addItem(text, key)
        self.backend_label = QLabel("M&odel:")
        form.addRow(self.backend_label, self.backend_combo)
        row = QHBoxLayout()
        self.model_edit = QLineEdit()
        self.model_button = QPushButton("Browse…")
        row.addWidget(self.model_edit, 1)
        row.addWidget(self.model_button)
        self.model_row_label = QLabel("&Location:")
        form.addRow(self.model_row_label, row)
        self.key_edit = QLineEdit()  # remote server key: never shown, never logged
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("optional (server started with --api-key)")
        self.key_label = QLabel("Key:")
        form.addRow(self.key_label, self.key_edit)
        timing = QHBoxLayout()
        self.clock_combo = QComboBox()
        for clock in sorted(AUDIO8_OPERATING_POINTS):
            self.clock_combo.addItem(f"{clock} ms", clock)
        self.delay_combo = QComboBox()
        self.delay_combo.setToolTip("Transcription delay: a multiple of the clock; ★ marks the post-trained points")
        self.language_combo = QComboBox()
        self.language_combo.addItem("English", "en")
        self.language_combo.addItem("Chinese", "zh")
        self.clock_label = QLabel("Cloc&k:")
        self.delay_label = QLabel("&Delay:")
        self.language_label = QLabel("Lan&guage:")
        timing.addWidget(self.clock_label)
        timing.addWidget(self.clock_combo)
        timing.addWidget(self.delay_label)
        timing.addWidget(self.delay_combo)
        timing.addWidget(self.language_label)
        timing.addWidget(self.language_combo)
        timing.addStretch(1)
        form.addRow(timing)
        self.form = form
        for label, field in ((self.backend_label, self.backend_combo), (self.model_row_label, self.model_edit),
                             (self.clock_label, self.clock_combo), (self.delay_label, self.delay_combo),
                             (self.language_label, self.language_combo)):
            label.setBuddy(field)  # screen readers read the label with the field; Alt+letter moves there
        self.backend_combo.currentIndexChanged.connect(self._on_backend_changed)
        self.clock_combo.currentIndexChanged.connect(self._fill_delays)
        self.model_button.clicked.connect(self._browse_model)
        for combo in (self.backend_combo, self.clock_combo, self.delay_combo, self.language_combo):
            combo.currentIndexChanged.connect(lambda _i: emit(self.changed))
        self.model_edit.textChanged.connect(lambda _t: emit(self.changed))
        self.key_edit.textChanged.connect(lambda _t: emit(self.changed))

    # -- settings ----------------------------------------------------------------------------
    def load_settings(self) -> None:
        """Show the stored choices."""
        s = self.settings
        select_data(self.backend_combo, s.get(Keys.BACKEND))
        self._on_backend_changed()
        select_data(self.clock_combo, s.get(Keys.CLOCK_MS))
        self._fill_delays()
        select_data(self.delay_combo, s.get(Keys.DELAY_MS))
        select_data(self.language_combo, s.get(Keys.LANGUAGE))
        self.key_edit.setText(s.get(Keys.REMOTE_KEY))
        self.update_controls()

    def save_settings(self) -> None:
        """Store the current choices."""
        s = self.settings
        backend = self.backend()
        s.set(Keys.BACKEND, backend)
        if backend in LOCATION_KEYS:
            s.set(LOCATION_KEYS[backend], self.model_edit.text().strip())
        s.set(Keys.CLOCK_MS, int(self.clock_combo.currentData()))
        if self.delay_combo.currentData() is not None:
            s.set(Keys.DELAY_MS, int(self.delay_combo.currentData()))
        s.set(Keys.LANGUAGE, self.language_combo.currentData())
        s.set(Keys.REMOTE_KEY, self.key_edit.text().strip())

    # -- state -------------------------------------------------------------------------------
    def backend(self) -> str:
        """The chosen backend key."""
        return self.backend_combo.currentData()

    def set_busy(self, busy: bool) -> None:
        """Lock the choices while the engine runs."""
        self._busy = bool(busy)
        self.update_controls()

    def update_controls(self) -> None:
        """Show the rows the backend uses; enable them unless busy."""
        backend, busy = self.backend(), self._busy
        clocked = backend in CLOCKED
        for wdg in (self.clock_combo, self.delay_combo):
            wdg.setEnabled(clocked and not busy)
        if backend == "remote":  # the server runs the 80 ms clock only
            select_data(self.clock_combo, 80)
            self.clock_combo.setEnabled(False)
        # the built-in and TFLite models have no Audio8 clock/delay to choose: hide the pickers
        for wdg in (self.clock_label, self.clock_combo, self.delay_label, self.delay_combo):
            wdg.setVisible(clocked)
        self.language_combo.setEnabled(clocked and not busy)
        if not clocked:
            select_data(self.language_combo, "en")
        has_location = backend != "default"
        self.model_edit.setVisible(has_location)
        self.model_row_label.setVisible(has_location)
        self.form.setRowVisible(self.model_row_label, has_location)  # no empty gap where the row was
        self.model_button.setVisible(backend in ("audio8", "tflite"))
        self.key_edit.setVisible(backend == "remote")
        self.key_label.setVisible(backend == "remote")
        for wdg in (self.backend_combo, self.model_edit, self.model_button, self.key_edit):
            wdg.setEnabled(not busy)

    def _on_backend_changed(self) -> None:
        backend = self.backend()
        key = LOCATION_KEYS.get(backend)
        self.model_edit.setText(self.settings.get(key) if key else "")
        self.model_edit.setPlaceholderText(PLACEHOLDERS.get(backend, ""))
        self.model_edit.setToolTip("Server address; microphone and system audio at once need one server each: "
                                   "give two addresses, comma-separated" if backend == "remote" else "")
        self.update_controls()
        self._fill_delays()

    def _fill_delays(self) -> None:
        clock = int(self.clock_combo.currentData() or 80)
        keep = self.delay_combo.currentData() or self.settings.get(Keys.DELAY_MS)
        trained = post_trained_delays(clock)
        self.delay_combo.blockSignals(True)
        self.delay_combo.clear()
        served = SERVER_DELAYS_MS if self.backend() == "remote" else None
        for d in allowed_delays(clock):
            if served is not None and d not in served:
                continue  # the remote server refuses it
            self.delay_combo.addItem(f"{d} ms ★" if d in trained else f"{d} ms", d)
        self.delay_combo.blockSignals(False)
        if not select_data(self.delay_combo, keep) and trained:
            select_data(self.delay_combo, trained[len(trained) // 2])

    # -- config ------------------------------------------------------------------------------
    def config_fields(self) -> dict:
        """The model part of an ``EngineConfig``: backend, model, clock_ms, delay_ms, language
        (and the remote server key as the ``token`` option)."""
        backend = self.backend()
        model = (self.model_edit.text().strip() or None) if backend != "default" else None
        key = self.key_edit.text().strip()
        return {
            "options": (("token", key),) if backend == "remote" and key else (),
            "backend": backend,
            "model": model,
            "clock_ms": int(self.clock_combo.currentData()),
            "delay_ms": int(self.delay_combo.currentData() or 480),
            "language": self.language_combo.currentData(),
        }

    def problem(self, backend: str, model: str | None, sources: int = 1) -> str:
        """What must be fixed before this model can load, or ``""``.

        Cheap checks only (names and the first bytes of a file, no import): an empty or
        wrong Audio8 folder, a missing file or a file that is not a TFLite model are said
        at once instead of after a model load has started.
        """
        if backend in ("audio8", "tflite") and not model:
            what = "checkpoint folder" if backend == "audio8" else ".tflite file"
            return f"Choose the {what} for this model with Browse…, or use the built-in model."
        if backend == "audio8":
            return audio8_folder_problem(model)
        if backend == "tflite":
            return tflite_file_problem(model)
        if backend == "remote":
            return remote_problem(model, sources)
        return ""

    def _browse_model(self) -> None:
        if self.backend() == "audio8":
            path = QFileDialog.getExistingDirectory(self, "Audio8 checkpoint folder", self.model_edit.text())
        else:
            path, _ = QFileDialog.getOpenFileName(self, "TFLite model", self.model_edit.text(), "TFLite (*.tflite)")
        if path:
            self.model_edit.setText(path)
