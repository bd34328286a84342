"""TranscriptRecorder: the GUI's handle on the session transcript, journal and autosave.

Widgets never write files (DESIGN section 7). This QObject owns the
:class:`~captioner.transcript.LiveTranscript` of the current run (in-memory
transcript + fsynced journal, written on the journal's own thread), keeps the last run's transcript after Stop or an
error so it can still be saved, rewrites a TXT copy into the user's autosave folder
at most every :attr:`AUTOSAVE_MS` (when that option is on), and finds and recovers
journals left by a crash. All formatting and file writing is
:mod:`captioner.transcript`'s.

The timed autosave rewrites the whole transcript, so its cost grows with the session (an
eight-hour transcript is ~400 kB: tens of ms to format and fsync on a busy machine, issue 30).
It runs on a writer thread of its own, from a snapshot of the segments taken on the GUI
thread, so the event loop stays as responsive at hour 8 as at minute 1; writes never overlap
and never go back in time (a newer snapshot waits for the write in progress, an older one still
waiting is replaced). Stop writes once more, on the GUI thread, after any write in progress.
"""

from __future__ import annotations

import datetime as _dt
import os
import threading
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from captioner.engine.qt_emit import emit
from captioner.events import Event, Notice, SoundEvent, TextDelta
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
    _written = Signal(object, int, object)  # path, generation, error (from the writer thread)

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
        self._timer.timeout.connect(self.write_autosave_later)
        self._autosave_failed = False
        #: text mask for the files written (the profanity filter), or None; the journal stays raw
        self.mask = None
        self._generation = 0  # counts final text added; an autosave of an older one is not "saved"
        self._cond = threading.Condition()
        self._queued: tuple | None = None  # (segments, path, mask, generation) for the writer
        self._writer: threading.Thread | None = None
        self._busy = False
        self._written.connect(self._on_written)

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
        if isinstance(event, TextDelta) and event.final and event.text or isinstance(event, SoundEvent):
            self._generation += 1
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
        """Rewrite the autosave TXT now, on this thread, after any write in progress (no-op when
        autosave is off)."""
        self._timer.stop()
        if self.autosave_path is None:
            return
        self._wait_writer()
        self._on_written(self.autosave_path, self._generation, self._write(
            self._named_segments(), self.autosave_path, self.mask))

    def write_autosave_later(self) -> None:
        """Rewrite the autosave TXT on the writer thread (the timer's write); returns at once.

        The segments are taken now; :attr:`autosaved` (or an ``autosave_failed`` notice) follows
        on this thread once the file is on disk."""
        if self.autosave_path is None:
            return
        job = (self._named_segments(), self.autosave_path, self.mask, self._generation)
        with self._cond:
            self._queued = job  # an older snapshot still waiting is replaced
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._writer_loop, name="captioner-autosave", daemon=True)
                self._writer.start()
            self._cond.notify_all()

    def _named_segments(self) -> list:
        """The transcript's segments for the autosave TXT, each speaker id replaced by the name the
        user gave it (issue 38; the writer shows a segment's speaker as it finds it)."""
        segments = self.transcript.segments
        names = getattr(self.transcript, "speaker_names", None)
        if not names:
            return segments
        return [replace(seg, speaker=names.get(seg.speaker, seg.speaker)) if seg.speaker else seg
                for seg in segments]

    def _writer_loop(self) -> None:
        while True:
            with self._cond:
                if self._queued is None:
                    self._writer = None
                    self._cond.notify_all()
                    return
                (segments, path, mask, generation), self._queued = self._queued, None
                self._busy = True
            try:
                error = self._write(segments, path, mask)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            emit(self._written, path, generation, error)

    def _wait_writer(self) -> None:
        """Drop a queued background write and wait for the one in progress (one write at a time)."""
        with self._cond:
            self._queued = None
            self._cond.wait_for(lambda: not self._busy, timeout=10.0)

    @staticmethod
    def _write(segments, path: Path, mask) -> Exception | None:
        try:
            write_transcript(segments, path, "txt", mask=mask)
        except (TranscriptWriteError, OSError) as exc:
            return exc
        return None

    def _on_written(self, path, generation: int, error) -> None:
        if path != self.autosave_path:
            return  # a write of an earlier run
        if error is not None:
            if not self._autosave_failed:
                self._autosave_failed = True
                emit(self.notice, Notice(f"{error} The transcript is kept in memory and in the journal.",
                                        "error", "autosave_failed"))
            return
        self._autosave_failed = False
        if generation == self._generation:  # nothing arrived since the snapshot: all of it is on disk
            emit(self.autosaved, str(path))

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
