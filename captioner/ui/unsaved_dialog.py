"""The question asked when the user quits with transcript text that is not on disk yet."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox, QWidget


def unsaved_box(parent: QWidget | None, journal: Path | None) -> QMessageBox:
    """The Save / Discard / Cancel box (not shown yet)."""
    where = (f" Until then a copy is kept only in the session journal, {journal}, which is meant for "
             "crash recovery, not for reading." if journal else "")
    box = QMessageBox(QMessageBox.Icon.Question, "Quit captioner",
                      "The transcript has text that has not been saved. Save it before quitting?" + where,
                      QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                      | QMessageBox.StandardButton.Cancel, parent)
    box.setDefaultButton(QMessageBox.StandardButton.Save)
    # Alt+S saves, Alt+D discards, Esc cancels
    box.button(QMessageBox.StandardButton.Save).setText("&Save…")
    box.button(QMessageBox.StandardButton.Discard).setText("&Discard")
    box.setEscapeButton(QMessageBox.StandardButton.Cancel)
    return box


def ask_unsaved(parent: QWidget | None, journal: Path | None) -> str:
    """Ask what to do with the unsaved transcript: ``"save"``, ``"discard"`` or ``"cancel"``."""
    answer = unsaved_box(parent, journal).exec()
    return {QMessageBox.StandardButton.Save: "save",
            QMessageBox.StandardButton.Discard: "discard"}.get(QMessageBox.StandardButton(answer), "cancel")
