"""SavePanel: the continuous-autosave folder and the Save as… button under the transcript."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

from captioner.engine.qt_emit import emit
from captioner.ui.settings import Keys, Settings


class SavePanel(QWidget):
    """"Write the transcript continuously to: [folder] Folder…   Save as…".

    Args:
        settings: typed settings (read by :meth:`load_settings`, written by :meth:`save_settings`).

    Signals:
        changed(): the autosave choice or folder changed.
    """

    changed = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.autosave_check = QCheckBox("Write the transcript continuously to:")
        self.autosave_edit = QLineEdit()
        self.autosave_edit.setPlaceholderText("choose a folder")
        self.autosave_button = QPushButton("Folder…")
        self.save_button = QPushButton("Save as…")
        self.autosave_edit.setAccessibleName("Folder for the continuously written transcript")
        self.autosave_button.setAccessibleName("Choose folder for the continuously written transcript")
        self.save_button.setAccessibleDescription("Save the whole transcript as text, SubRip, WebVTT or JSON (Ctrl+S)")
        lay.addWidget(self.autosave_check)
        lay.addWidget(self.autosave_edit, 1)
        lay.addWidget(self.autosave_button)
        lay.addSpacing(12)
        lay.addWidget(self.save_button)
        self.autosave_button.clicked.connect(self._browse_autosave)
        self.autosave_check.toggled.connect(lambda _on: emit(self.changed))
        self.autosave_edit.textChanged.connect(lambda _t: emit(self.changed))

    def load_settings(self) -> None:
        """Show the stored choices."""
        self.autosave_check.setChecked(self.settings.get(Keys.AUTOSAVE_ENABLED))
        self.autosave_edit.setText(self.settings.get(Keys.AUTOSAVE_DIR))

    def save_settings(self) -> None:
        """Store the current choices."""
        self.settings.set(Keys.AUTOSAVE_ENABLED, self.autosave_check.isChecked())
        self.settings.set(Keys.AUTOSAVE_DIR, self.autosave_edit.text().strip())

    def autosave_dir(self) -> str | None:
        """The folder to write the transcript to continuously, or ``None`` when that is off."""
        return self.autosave_edit.text().strip() if self.autosave_check.isChecked() else None

    def problem(self) -> str:
        """What must be fixed before a Start, or ``""``."""
        if self.autosave_check.isChecked() and not self.autosave_edit.text().strip():
            return "Choose a folder for the continuously written transcript, or untick that option."
        return ""

    def _browse_autosave(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Folder for the transcript", self.autosave_edit.text())
        if path:
            self.autosave_edit.setText(path)
            self.autosave_check.setChecked(True)
