"""SpeakerLabels: who is speaking, in the main window -- naming a speaker (issue 38).

A line of the transcript pane said by an attributed voice starts with its speaker's display
name (:meth:`captioner.transcript.model.Transcript.display_label`: the name the user gave,
else the id "Speaker 2"). The user renames a speaker by

* double-clicking the speaker's label at the start of a line in the pane, or
* pressing :data:`RENAME_KEY` (F2) with the caret on the line (keyboard only: the pane takes
  the focus with Tab and its caret moves with the arrow keys), or
* Settings' "Speakers" section (:mod:`captioner.ui.speaker_settings`).

Every path ends in :meth:`SpeakerLabels.rename`: the run's transcript takes the name through
:meth:`~captioner.ui.session_model.SessionModel.rename_speaker` (the current run's through its
live transcript, so the journal records the rename and ``recover`` keeps it), every line of
that speaker still in the pane and on the overlay shows the new name, the run becomes unsaved
and Save as… writes the name (the writers use the transcript's names).

Speaker ids belong to one run (each Start numbers its voices from "Speaker 1"), so a rename
applies to the run the line belongs to.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QInputDialog, QLineEdit

from captioner.engine.qt_emit import emit
from captioner.transcript import Transcript
from captioner.ui.session_model import SessionModel
from captioner.ui.transcript_view import TranscriptView

#: The key that renames the speaker of the line under the pane's caret.
RENAME_KEY = "F2"
#: Tooltip of the pane that tells how to rename.
RENAME_HINT = (f"Double-click a speaker's name at the start of a line, or press {RENAME_KEY} on the line, "
               "to rename that speaker")


class SpeakerLabels(QObject):
    """Renames speakers from the transcript pane and keeps the pane and overlay labels current.

    Args:
        view: the transcript pane (its editor gets the double-click filter and the F2 key).
        session: the runs shown (:meth:`SessionModel.rename_speaker` does the rename).
        overlay: the caption overlay (its :meth:`set_speaker_names` / :meth:`relabel`), or None.

    Signals:
        renamed(str, str): a speaker id and the name now shown for it.
    """

    renamed = Signal(str, str)

    def __init__(self, view: TranscriptView, session: SessionModel, overlay=None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.view = view
        self.session = session
        self.overlay = overlay
        self._names_fn = None  # the overlay's current run's speaker_name
        view.editor.viewport().installEventFilter(self)
        if not view.editor.toolTip():
            view.editor.setToolTip(RENAME_HINT)
        # the caret moves with the keys in the read-only pane, so F2 reaches any line
        view.editor.setTextInteractionFlags(view.editor.textInteractionFlags()
                                            | Qt.TextInteractionFlag.TextSelectableByKeyboard)
        self.rename_key = QShortcut(QKeySequence(RENAME_KEY), view.editor)
        self.rename_key.setContext(Qt.ShortcutContext.WidgetShortcut)
        self.rename_key.activated.connect(lambda: self.request_rename(view.editor.textCursor().blockNumber()))

    # -- runs ----------------------------------------------------------------------------------
    def begin_run(self, transcript: Transcript) -> None:
        """A run starts (or a journal is recovered into the overlay's place): its lines show the
        names of ``transcript``."""
        self._names_fn = transcript.speaker_name
        self.view.speaker_name = transcript.speaker_name
        if self.overlay is not None:
            self.overlay.set_speaker_names(transcript.speaker_name)

    def speakers(self) -> list[tuple[Transcript, str]]:
        """``(transcript, speaker id)`` of every speaker heard in the runs the window shows."""
        return self.session.speakers()

    # -- renaming ------------------------------------------------------------------------------
    def request_rename(self, block_number: int) -> bool:
        """Ask for a new name of the speaker of the pane's line in block ``block_number`` (what
        the double-click and F2 call) and apply it.

        Returns:
            True when a speaker was renamed; False for a line without a speaker, or when the
            user cancelled.
        """
        who = self.view.speaker_at(block_number)
        transcript = self._transcript_of(who[0]) if who is not None else None
        if transcript is None:
            return False
        speaker = who[1]
        name = self.ask_name(speaker, transcript.speaker_name(speaker))
        if name is None:
            return False
        self.rename(transcript, speaker, name)
        return True

    def ask_name(self, speaker: str, current: str) -> str | None:
        """The new name the user types for ``speaker`` (a small dialog), or None when cancelled."""
        text, ok = QInputDialog.getText(self.view.window(), "Rename speaker",
                                        f"Name for {speaker} (empty: “{speaker}”):", QLineEdit.EchoMode.Normal,
                                        current if current != speaker else "")
        return text if ok else None

    def rename(self, transcript: Transcript, speaker: str, name: str) -> str:
        """Name ``speaker`` of the run of ``transcript``: the transcript (and journal), every line of
        that speaker in the pane and on the overlay, and Save as….

        Returns:
            The name now shown (the id when ``name`` is empty).
        """
        shown = self.session.rename_speaker(transcript, speaker, name)
        self.view.relabel_speaker(transcript.speaker_name, speaker)
        if self.overlay is not None and self._names_fn == transcript.speaker_name:
            self.overlay.relabel()
        emit(self.renamed, speaker, shown)
        return shown

    def _transcript_of(self, names_fn) -> Transcript | None:
        for run in self.session.runs:
            if run.transcript.speaker_name == names_fn:
                return run.transcript
        return None

    # -- the double-click ----------------------------------------------------------------------
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        """A double-click on a line's speaker label renames that speaker (elsewhere: Qt's own)."""
        if event.type() == QEvent.Type.MouseButtonDblClick and watched is self.view.editor.viewport():
            cursor = self.view.editor.cursorForPosition(event.position().toPoint())
            block = cursor.block()
            if self.on_label(block.blockNumber(), cursor.positionInBlock()):
                return self.request_rename(block.blockNumber()) or True
        return super().eventFilter(watched, event)

    def on_label(self, block_number: int, column: int) -> bool:
        """True when ``column`` of the pane's block ``block_number`` falls on the line's time or
        speaker label (``[1:05] Speaker 2:``) of an attributed line."""
        who = self.view.speaker_at(block_number)
        if who is None:
            return False
        text = self.view.editor.document().findBlockByNumber(block_number).text()
        name = (who[0](who[1]) if who[0] is not None else "") or who[1]
        start = text.find("] ") + 2 if text.startswith("[") else 0
        return text[start:start + len(name)] == name and column <= start + len(name) + 1
