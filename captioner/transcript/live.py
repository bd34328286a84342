"""A live session's transcript with its autosave journal: the one object the engine/UI feeds.

``LiveTranscript.add(event)`` first updates the in-memory ``Transcript`` (so text is
never lost), then queues the event for the journal, which a
:class:`~captioner.transcript.journal_writer.JournalWriter` writes and fsyncs on a thread
of its own: ``add`` does no file I/O, so the GUI's event loop never waits for the disk. A
journal failure (disk full, drive unplugged) never raises: it becomes one ``Notice``
(code ``"journal_failed"``) telling the user what happened and what to do, returned by the
next ``add`` (or ``flush``), and when the journal catches up again one ``Notice`` (code
``"journal_ok"``) says so. Failed records stay queued in the journal and are retried with
every later event and every couple of seconds.
"""

from __future__ import annotations

import os
from typing import Iterable

from captioner.events import Event, Notice
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.journal_writer import JournalWriter
from captioner.transcript.model import SpeakerRename, Transcript
from captioner.transcript.segment import Segment


class LiveTranscript:
    """In-memory transcript plus optional journal, with failures turned into notices.

    Args:
        journal: the session's journal, or None to keep text in memory only.
        transcript: the transcript to fill; default a new empty one.

    Attributes:
        transcript: the ``Transcript`` (read segments/partials from it).
        journal: the ``Journal`` or None.
        closed_segments: segments closed by the latest ``add``.
    """

    def __init__(self, journal: Journal | None = None, transcript: Transcript | None = None) -> None:
        self.journal = journal
        self.transcript = transcript if transcript is not None else Transcript()
        self.closed_segments: list[Segment] = []
        self._writer = JournalWriter(journal) if journal is not None else None
        if journal is not None:
            self.transcript.metadata.setdefault("journal", str(journal.path))

    @classmethod
    def start(
        cls,
        directory: str | os.PathLike | None = None,
        *,
        backend: str = "",
        sources: Iterable[str] = (),
        metadata: dict | None = None,
    ) -> tuple["LiveTranscript", Notice | None]:
        """Open a new journal in ``directory`` (default ``paths.journal_dir()``) and a fresh transcript.

        Returns:
            ``(live, notice)``: ``notice`` is None, or a ``"journal_unavailable"``
            warning when the journal could not be created (the session still runs,
            in memory only).
        """
        sources = list(sources)
        transcript = Transcript(dict(metadata or {}, backend=backend, sources=sources))
        try:
            journal = Journal.create(directory, backend=backend, sources=sources)
        except JournalError as exc:
            return cls(None, transcript), Notice(str(exc), "warning", "journal_unavailable")
        if journal.created:
            transcript.metadata.setdefault("created", journal.created)
        return cls(journal, transcript), None

    def add(self, event: Event) -> Notice | None:
        """Add ``event`` to the transcript, then queue it for the journal (no file I/O).

        Returns:
            None normally; a ``Notice`` when the journal started failing
            (``"journal_failed"``, severity "error") or was written again
            (``"journal_ok"``) since the last call.
        """
        self.closed_segments = self.transcript.add(event)
        if self._writer is None:
            return None
        self._writer.put(event)
        return self._writer.take_notice()

    def rename_speaker(self, speaker_id: str, name: str) -> Notice | None:
        """Name a speaker in the transcript (past and future lines, and Save) and journal the
        rename, so ``recover`` rebuilds it: ``add(SpeakerRename(speaker_id, name))``.

        Args:
            speaker_id: the id ("Speaker 2"); ``name``: the new name, ``""`` back to the id.

        Returns:
            As :meth:`add`.
        """
        return self.add(SpeakerRename(speaker_id, name))

    def flush(self, timeout_s: float | None = 2.0) -> Notice | None:
        """Wait (at most ``timeout_s`` s) until the journal writer has tried every record added so far.

        Returns:
            As :meth:`add`: a journal notice not yet returned, or None.
        """
        if self._writer is None:
            return None
        self._writer.flush(timeout_s)
        return self._writer.take_notice()

    def close(self, timeout_s: float = 1.0) -> Notice | None:
        """Close open segments (end of stream) and close the journal cleanly.

        Waits at most ``timeout_s`` seconds for the journal's writer (Stop and Quit
        return within 2 s).

        Returns:
            None, or a ``"journal_failed"`` notice if the close record could not be
            written in time (the journal will then be offered for recovery next time).
        """
        self.transcript.close_all()
        if self._writer is None:
            return None
        return self._writer.close(timeout_s=timeout_s)


__all__ = ["LiveTranscript"]
