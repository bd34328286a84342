"""SessionModel: what this window's transcript holds and whether it is on disk yet.

The one home of the "unsaved" rule: the window asks :meth:`SessionModel.has_unsaved`
before quitting and saves through :meth:`SessionModel.save`. Files are written by
:class:`~captioner.ui.recorder.TranscriptRecorder` through :mod:`captioner.transcript`.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from captioner.engine.qt_emit import emit
from captioner.ui.recorder import TranscriptRecorder


class SessionModel(QObject):
    """The window's transcript state.

    Args:
        recorder: the transcript/journal/autosave of the runs.

    Signals:
        unsaved_changed(bool): :meth:`has_unsaved` may have changed.
    """

    unsaved_changed = Signal(bool)

    def __init__(self, recorder: TranscriptRecorder, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.recorder = recorder
        self._unsaved = False

    def has_unsaved(self) -> bool:
        """True when the window shows text that no Save as… (or autosave) has written."""
        return self._unsaved

    def segment_shown(self) -> None:
        """A line of the current run was added to the pane."""
        if self.recorder.autosave_path is None:  # an autosaved run is written as it goes
            self._set_unsaved(True)

    def recover(self, path: str | os.PathLike):
        """Load a crashed session's journal; returns its transcript."""
        transcript = self.recorder.recover(path)
        self._set_unsaved(True)
        return transcript

    def save(self, path: str | os.PathLike) -> Path:
        """Write the transcript to ``path`` (format from the suffix).

        Raises:
            TranscriptWriteError, ValueError: as :meth:`TranscriptRecorder.save`.
        """
        written = self.recorder.save(path)
        self._set_unsaved(False)
        return Path(written)

    def _set_unsaved(self, on: bool) -> None:
        if on != self._unsaved:
            self._unsaved = on
            emit(self.unsaved_changed, on)
