"""A live session's transcript with its autosave journal: the one object the engine/UI feeds.

``LiveTranscript.add(event)`` first updates the in-memory ``Transcript`` (so text is
never lost), then journals the event. A journal failure (disk full, drive unplugged)
never raises: it becomes one ``Notice`` (code ``"journal_failed"``) telling the user
what happened and what to do, and when the journal catches up again one ``Notice``
(code ``"journal_ok"``) says so. Failed records stay queued in the journal and are
retried with every later event.
"""

from __future__ import annotations

import os
from typing import Iterable

from captioner.events import Event, Notice
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.model import Segment, Transcript


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
        self._failing = False
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
        """Add ``event`` to the transcript, then to the journal.

        Returns:
            None normally; a ``Notice`` when journaling starts failing
            (``"journal_failed"``, severity "error") or recovers (``"journal_ok"``).
        """
        self.closed_segments = self.transcript.add(event)
        if self.journal is None:
            return None
        try:
            self.journal.append(event)
        except JournalError as exc:
            if self._failing:
                return None
            self._failing = True
            return Notice(str(exc), "error", "journal_failed")
        if self._failing and self.journal.pending == 0:
            self._failing = False
            return Notice(f"The autosave journal {self.journal.path} is being written again.", "info", "journal_ok")
        return None

    def close(self) -> Notice | None:
        """Close open segments (end of stream) and close the journal cleanly.

        Returns:
            None, or a ``"journal_failed"`` notice if the close record could not be
            written (the journal will then be offered for recovery next time).
        """
        self.transcript.close_all()
        if self.journal is None:
            return None
        try:
            self.journal.close()
        except JournalError as exc:
            return Notice(str(exc), "error", "journal_failed")
        return None


__all__ = ["LiveTranscript"]
