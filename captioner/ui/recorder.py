"""TranscriptRecorder: the GUI's handle on the session transcript, journal and autosave.

Widgets never write files (DESIGN section 7). This QObject owns the
:class:`~captioner.transcript.LiveTranscript` of the current run (in-memory
transcript + fsynced journal), keeps the last run's transcript after Stop or an
error so it can still be saved, rewrites a TXT copy into the user's autosave folder
at most every :attr:`AUTOSAVE_MS` (when that option is on), and finds and recovers
journals left by a crash. All formatting and file writing is
:mod:`captioner.transcript`'s.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from captioner.engine.qt_emit import emit
from captioner.events import Event, Notice
from captioner.transcript import (
    LiveTranscript,
    Transcript,
    TranscriptWriteError,
    find_unfinished,
    mark_closed,
    recover,
    write_transcript,
)

#: Formats offered by Save as: name -> file suffix (writers in captioner.transcript).
SAVE_FORMATS = {"txt": ".txt", "srt": ".srt", "vtt": ".vtt", "json": ".json"}


class TranscriptRecorder(QObject):
    """Session transcript, journal and continuous autosave for the main window.

    Args:
        journal_dir: folder of the crash-recovery journals (default
            ``captioner.paths.journal_dir()``, which honours ``CAPTIONER_DATA_DIR``).

    Signals:
        segment_closed(object): a :class:`~captioner.transcript.Segment` was closed.
        notice(object): a :class:`~captioner.events.Notice` to show (journal or
            autosave trouble); text is kept in memory whatever happens.
        autosaved(str): path of the autosave file just written.
    """

    segment_closed = Signal(object)
    notice = Signal(object)
    autosaved = Signal(str)

    #: Least time between two autosave writes (ms); Stop always writes.
    AUTOSAVE_MS = 3000

    def __init__(self, journal_dir: str | os.PathLike | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.journal_dir = journal_dir
        self.live: LiveTranscript | None = None
        self.transcript: Transcript = Transcript()
        self.autosave_path: Path | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(self.AUTOSAVE_MS)
        self._timer.timeout.connect(self.write_autosave)
        self._autosave_failed = False
        #: text mask for the files written (the profanity filter), or None; the journal stays raw
        self.mask = None

    # -- a run -----------------------------------------------------------------------------------
    def begin(self, backend: str, sources: list[str], autosave_dir: str | None = None) -> None:
        """Start a new transcript (and journal) for a run.

        Args:
            backend: backend description for the journal header.
            sources: source labels of the run.
            autosave_dir: folder for a continuously rewritten TXT copy, or ``None``.
        """
        if self.live is not None:
            self.end()
        self.live, problem = LiveTranscript.start(self.journal_dir, backend=backend, sources=sources)
        self.transcript = self.live.transcript
        if problem is not None:
            emit(self.notice, problem)
        self.autosave_path = None
        self._autosave_failed = False
        if autosave_dir:
            stamp = _dt.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
            self.autosave_path = Path(autosave_dir) / f"captions_{stamp}.txt"

    def add(self, event: Event) -> None:
        """Record one event (GUI thread); closed segments are announced."""
        if self.live is None:
            return
        problem = self.live.add(event)
        if problem is not None:
            emit(self.notice, problem)
        for seg in self.live.closed_segments:
            emit(self.segment_closed, seg)
        if self.live.closed_segments and self.autosave_path is not None and not self._timer.isActive():
            self._timer.start()

    def end(self) -> None:
        """Close the run: open segments close, the journal is closed, autosave written."""
        live, self.live = self.live, None
        if live is None:
            return
        for seg in self.transcript.close_all():
            emit(self.segment_closed, seg)
        problem = live.close()
        if problem is not None:
            emit(self.notice, problem)
        if not self.transcript.segments:
            # a Start that failed, or a run that heard nothing: no journal to recover, no empty file
            self._remove_journal(live)
            self.autosave_path = None
            return
        self.write_autosave()

    def _remove_journal(self, live: LiveTranscript) -> None:
        path = live.journal.path if live.journal is not None else None
        if path is None:
            return
        try:
            os.remove(path)
        except OSError:
            return  # kept: a closed journal is never offered for recovery and is pruned later
        self.transcript.metadata.pop("journal", None)

    @property
    def journal_path(self) -> Path | None:
        """The crash-recovery journal of the current (or last) run, if one was written."""
        path = self.transcript.metadata.get("journal") if hasattr(self.transcript, "metadata") else None
        return Path(path) if path else None

    @property
    def running(self) -> bool:
        """True between :meth:`begin` and :meth:`end`."""
        return self.live is not None

    # -- files -----------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, fmt: str | None = None) -> Path:
        """Write the current run's transcript to ``path`` (format from ``fmt`` or the suffix).

        The window saves every run it shows through
        :meth:`captioner.ui.session_model.SessionModel.save`.

        Raises:
            TranscriptWriteError: the file cannot be written (message says why).
            ValueError: unknown format.
        """
        return write_transcript(self.transcript, path, fmt, mask=self.mask)

    def write_autosave(self) -> None:
        """Rewrite the autosave TXT now (no-op when autosave is off)."""
        self._timer.stop()
        if self.autosave_path is None:
            return
        try:
            write_transcript(self.transcript, self.autosave_path, "txt", mask=self.mask)
        except (TranscriptWriteError, OSError) as exc:
            if not self._autosave_failed:
                self._autosave_failed = True
                emit(self.notice, Notice(f"{exc} The transcript is kept in memory and in the journal.",
                                        "error", "autosave_failed"))
            return
        self._autosave_failed = False
        emit(self.autosaved, str(self.autosave_path))

    # -- crash recovery --------------------------------------------------------------------------
    def unfinished(self) -> list[Path]:
        """Journals a crash left open, newest first."""
        return find_unfinished(self.journal_dir)

    def recover(self, path: str | os.PathLike) -> Transcript:
        """Load a crashed session's journal (it stays unfinished until :meth:`mark_handled`).

        Raises:
            JournalError: the file cannot be read.
        """
        return recover(path)

    def mark_handled(self, path: str | os.PathLike, reason: str = "recovered") -> None:
        """Mark a crashed session's journal as handled, so it is not offered again (the file stays).

        Call it once the recovered text is on disk ("recovered") or the user threw it away
        ("discarded"); never raises (a journal that cannot be marked is offered again).
        """
        try:
            mark_closed(path, reason)
        except Exception:  # noqa: BLE001 - JournalError, OSError: offered again next time, harmless
            pass

    def discard(self, path: str | os.PathLike) -> None:
        """Mark a crashed session's journal as handled without loading it (the file stays)."""
        self.mark_handled(path, "discarded")
