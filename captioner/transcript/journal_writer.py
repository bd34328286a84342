"""JournalWriter: a live session's journal written on a thread of its own.

An ``os.fsync`` of the journal takes 22-59 ms on a loaded 2-core machine (measured in
``bench/soak.py``, issue 30), more on a slow or network drive. A captioning app calls
``put`` for every event on the thread that shows the captions; ``put`` only queues the
record (``Journal.enqueue``: a ``json.dumps``, microseconds) and wakes the writer thread,
which flushes everything queued so far with one write and one fsync. Records reach the
file in ``put`` order; a burst of records shares one fsync.

A failing write (disk full, read-only medium, unplugged drive) leaves the records queued
in the journal; the writer retries with the next record and every :attr:`RETRY_S` seconds
meanwhile, so the journal catches up once space is freed, even in a silent room. Each
change between failing and writing becomes one :class:`~captioner.events.Notice` for the
owner to show (:meth:`take_notice`): ``"journal_failed"`` (severity "error") with the
journal's message, then ``"journal_ok"`` ("info").

:meth:`close` writes the rest and the clean-close record and ends the thread, waiting at
most ``timeout_s`` (Stop and Quit return within 2 s); a journal that could not be closed
in time is finished by the thread in the background, or else offered for recovery at the
next start, and the text is still in memory.
"""

from __future__ import annotations

import threading
from collections import deque

from captioner.events import Event, Notice
from captioner.transcript.journal import Journal, JournalError


class JournalWriter:
    """Flushes ``journal`` on a daemon thread named ``captioner-journal``.

    Args:
        journal: an open :class:`~captioner.transcript.journal.Journal` (its header, if
            any, is queued and written by the first flush, on the writer thread).

    Thread-safety: ``put``, ``flush``, ``take_notice`` and ``close`` may be called from
    any thread; the owner normally calls them from one.
    """

    #: Seconds between two retries of a failing journal while no new record arrives.
    RETRY_S = 2.0

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._cond = threading.Condition()
        self._queued = 0  # records put (and the header) so far
        self._done = 0  # of those, how many the writer has tried to write
        self._closing: str | None = None  # close reason once close() was called
        self._failing = False
        self._busy = False  # the thread is writing (a retry counts: flush waits for it)
        self._close_error: JournalError | None = None
        self._notices: deque[Notice] = deque()
        self._thread = threading.Thread(target=self._run, name="captioner-journal", daemon=True)
        with self._cond:
            self._queued = 1 if journal.pending else 0  # the header of a new journal
        self._thread.start()

    # -- the owner's side ------------------------------------------------------------------------
    def put(self, event: Event) -> bool:
        """Queue ``event``'s record (final ``TextDelta`` / ``TurnBoundary`` / ``SpeakerRename``) for the writer; no I/O.

        Returns:
            True if a record was queued; False for events that are not journaled, and
            after :meth:`close` (the session is over).
        """
        with self._cond:
            if self._closing is not None:
                return False
        try:
            if not self.journal.enqueue(event):
                return False
        except JournalError:  # closed meanwhile
            return False
        with self._cond:
            self._queued += 1
            self._cond.notify_all()
        return True

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until the writer has tried to write every record put before this call.

        Returns:
            True when it has (written, or failed: see :meth:`take_notice` and
            ``journal.error``), False after ``timeout_s`` seconds.
        """
        with self._cond:
            target = self._queued
            return self._cond.wait_for(
                lambda: (self._done >= target and not self._busy) or not self._thread.is_alive(), timeout_s)

    def take_notice(self) -> Notice | None:
        """The oldest notice (journal failing / written again) not yet taken, or None."""
        with self._cond:
            return self._notices.popleft() if self._notices else None

    def close(self, reason: str = "finished", timeout_s: float = 1.0) -> Notice | None:
        """Write what is queued and the clean-close record, close the file, end the thread.

        Waits at most ``timeout_s`` seconds. Idempotent.

        Returns:
            None when the journal is closed cleanly; else a ``"journal_failed"`` notice
            (severity "error"): the write failed (the journal will be offered for
            recovery at the next start), or the disk did not answer in time (the writer
            thread finishes in the background).
        """
        with self._cond:
            if self._closing is None:
                self._closing = reason
                self._cond.notify_all()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return Notice(
                f"The autosave journal {self.journal.path} is still being written (the disk is slow). "
                "The transcript is in memory: save it to be safe.",
                "error",
                "journal_failed",
            )
        if self._close_error is not None:
            return Notice(str(self._close_error), "error", "journal_failed")
        return None

    # -- the writer thread -----------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                if self._failing and self._queued == self._done and self._closing is None:
                    self._cond.wait(self.RETRY_S)  # retry the failed records even if none arrive
                else:
                    self._cond.wait_for(lambda: self._queued > self._done or self._closing is not None)
                target, closing = self._queued, self._closing
                self._busy = True
            error: JournalError | None = None
            try:
                if closing is not None:
                    self.journal.close(closing)
                else:
                    self.journal.flush()
            except JournalError as exc:
                error = exc
            with self._cond:
                self._done = target
                self._busy = False
                if error is not None and not self._failing:
                    self._failing = True
                    self._notices.append(Notice(str(error), "error", "journal_failed"))
                elif error is None and self._failing:
                    self._failing = False
                    self._notices.append(Notice(
                        f"The autosave journal {self.journal.path} is being written again.", "info", "journal_ok"))
                if closing is not None:
                    self._close_error = error
                    self._cond.notify_all()
                    return
                self._cond.notify_all()


__all__ = ["JournalWriter"]
