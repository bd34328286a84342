"""Autosave journal: every final text and turn end on disk as it happens, for crash recovery.

A journal is a JSON Lines file (UTF-8, one JSON object per line) in
``captioner.paths.journal_dir()``:

- ``{"type": "header", "version": 1, "created": ISO wall-clock time, "backend": ...,
  "sources": [...]}`` first;
- ``{"type": "text", "source", "start", "end", "text"}`` per *final* ``TextDelta``
  (partials are never journaled: they are not final), plus ``"speaker"`` (the id,
  "Speaker 2") when the delta is attributed (issue 38; journals without it still recover);
- ``{"type": "turn", "source", "time", "kind", "probability"}`` per ``TurnBoundary``;
- ``{"type": "speaker_name", "speaker", "name"}`` per ``SpeakerRename`` (the user named a
  speaker; ``name`` "" cleared it);
- ``{"type": "speaker_fix", "source", "start", "end", "speaker"}`` per ``SpeakerFix`` (the
  speakers' second pass corrected a label, issue 51);
- ``{"type": "sound", "source", "start", "end", "label", "score"}`` per ``SoundEvent`` (a sound
  that is not speech started, issue 49: ``label`` "music", ``score`` its probability 0-1);
- ``{"type": "close", "closed": ISO time, "reason": ...}`` when the session ends cleanly.

Reading them back (recovery, the unfinished ones to offer) is :mod:`captioner.transcript.journal_recovery`,
which builds on this module.

Records are queued in memory (``enqueue``, no I/O) and written by ``flush``: one
``os.write`` of every queued record on an ``O_APPEND`` descriptor, then one ``os.fsync``,
so a crash or a power cut loses at most the records not yet flushed. ``append`` is both at
once. A live session flushes on a writer thread of its own
(:class:`~captioner.transcript.journal_writer.JournalWriter`), never on the thread that
shows captions: an fsync takes 22-59 ms on a loaded machine (issue 30). The reader skips a
torn last line and any garbage line. Recording every final delta (not
every closed segment) means nothing decoded is lost even inside a turn that never
ended. ``recover`` replays the records through the same ``Transcript`` builder, so
the rebuilt transcript equals the live one.

A write that fails (disk full, read-only medium, unplugged drive) raises
``JournalError`` with a clear message; the records stay queued in memory and are
retried with the next flush, so the journal catches up once space is freed.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import threading
from collections import deque
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from captioner import paths
from captioner.events import Event, SoundEvent, SpeakerFix, TextDelta, TurnBoundary
from captioner.transcript.model import SpeakerRename, clean_name

JOURNAL_VERSION = 1
JOURNAL_SUFFIX = ".jsonl"
JOURNAL_PREFIX = "session-"


class JournalError(RuntimeError):
    """The journal could not be created, written or read. The message names the file and the fix.

    Attributes:
        path: the journal file (or directory) concerned.
        errno: the OS error number (``errno.ENOSPC``, ...) or None.
    """

    def __init__(self, message: str, path: str | os.PathLike | None = None, err: int | None = None):
        super().__init__(message)
        self.path = Path(path) if path is not None else None
        self.errno = err


def _explain(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC or exc.errno == getattr(errno, "EDQUOT", -1):
        return "the disk is full. Free some disk space"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied or read-only. Choose a writable data folder (CAPTIONER_DATA_DIR)"
    if exc.errno in (errno.ENOTDIR, errno.ENOENT):
        return "the folder does not exist or a file is in the way. Choose another data folder (CAPTIONER_DATA_DIR)"
    return f"{exc.strerror or exc}. Check the drive and the data folder (CAPTIONER_DATA_DIR)"


def _now_iso() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _record_for(event: Event) -> dict[str, Any] | None:
    if isinstance(event, TextDelta):
        if not event.final or not event.text:
            return None
        record = {"type": "text", "source": event.source, "start": event.start, "end": event.end, "text": event.text}
        if event.speaker:
            record["speaker"] = event.speaker
        return record
    if isinstance(event, TurnBoundary):
        return {
            "type": "turn",
            "source": event.source,
            "time": event.time,
            "kind": event.kind,
            "probability": event.probability,
        }
    if isinstance(event, SpeakerRename):
        if not isinstance(event.speaker, str) or not event.speaker:
            return None
        return {"type": "speaker_name", "speaker": event.speaker, "name": clean_name(event.name)}
    if isinstance(event, SpeakerFix):
        if not isinstance(event.speaker, str) or not event.speaker:
            return None
        return {"type": "speaker_fix", "source": event.source, "start": event.start, "end": event.end,
                "speaker": event.speaker}
    if isinstance(event, SoundEvent):
        if not isinstance(event.label, str) or not event.label.strip():
            return None
        return {"type": "sound", "source": event.source, "start": event.start, "end": event.end,
                "label": event.label, "score": event.score}
    return None


def _encode(record: dict[str, Any]) -> bytes:
    # allow_nan=False: NaN/inf are not JSON; the builder clamps them anyway, so store null.
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    return (json.dumps(clean, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


class Journal:
    """Append-only, fsynced JSON Lines journal of one session.

    Thread-safe: ``enqueue`` (no I/O, microseconds) may be called on one thread while
    another one runs ``flush``/``close`` (which hold the I/O for tens of ms); flushes
    never overlap and records reach the file in ``enqueue`` order.

    Args:
        path: journal file; created (with its folder) if missing, appended to if
            it exists. An empty file gets a header record, written with the first flush.
        backend: description of the ASR backend, stored in the header.
        sources: source labels of the session, stored in the header.

    Raises:
        JournalError: the folder or file cannot be created or opened.
    """

    def __init__(self, path: str | os.PathLike, *, backend: str = "", sources: Iterable[str] = ()) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # guards _pending, _fd, _closing: held for microseconds
        self._io = threading.Lock()  # one flush at a time: held during write + fsync
        self._pending: deque[bytes] = deque()
        self._torn = False  # the file ends in a torn line: start the next record with "\n"
        self._fd: int | None = None
        self.error: JournalError | None = None  # last write error, None once writes succeed again
        self._closing = False
        self.created: str | None = None  # ISO wall-clock time in the header this object wrote
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # 0o600: transcripts are private; O_APPEND: every write lands at the end.
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o600)
            size = os.fstat(self._fd).st_size
            empty = size == 0
            if not empty:
                # A crash may have left a torn last line: start our first record on a new line.
                with open(self.path, "rb") as existing:
                    existing.seek(size - 1)
                    self._torn = existing.read(1) != b"\n"
        except OSError as exc:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            raise JournalError(
                f"Cannot create the autosave journal {self.path}: {_explain(exc)}. "
                "Captions still work, but a crash would lose this session.",
                self.path,
                exc.errno,
            ) from exc
        if empty:
            self.created = _now_iso()
            self._pending.append(_encode({
                "type": "header",
                "version": JOURNAL_VERSION,
                "created": self.created,
                "backend": backend,
                "sources": list(sources),
            }))

    @classmethod
    def create(
        cls, directory: str | os.PathLike | None = None, *, backend: str = "", sources: Iterable[str] = ()
    ) -> "Journal":
        """Start a new journal file ``session-YYYYmmdd-HHMMSS-<random>.jsonl`` in ``directory``.

        Args:
            directory: folder of the journals; default ``captioner.paths.journal_dir()``.

        Raises:
            JournalError: as for ``Journal(...)``.
        """
        folder = Path(directory) if directory is not None else paths.journal_dir()
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        name = f"{JOURNAL_PREFIX}{stamp}-{secrets.token_hex(3)}{JOURNAL_SUFFIX}"
        return cls(folder / name, backend=backend, sources=sources)

    # ------------------------------------------------------------- writing
    def enqueue(self, event: Event) -> bool:
        """Queue the record of a final ``TextDelta``, a ``TurnBoundary``, a ``SpeakerRename``, a ``SpeakerFix``
        or a ``SoundEvent`` in memory (no I/O).

        Returns:
            True if a record was queued, False if the event is not journaled
            (partials, stats...).

        Raises:
            JournalError: the journal is closed (or closing).
        """
        record = _record_for(event)
        if record is None:
            return False
        data = _encode(record)
        with self._lock:
            if self._fd is None or self._closing:
                raise JournalError(f"The autosave journal {self.path} is already closed.", self.path)
            self._pending.append(data)
        return True

    def append(self, event: Event) -> bool:
        """``enqueue`` then ``flush``: the record is on disk when this returns.

        Returns:
            As ``enqueue``.

        Raises:
            JournalError: the journal is closed, or the write or fsync failed. The record
                stays queued and is retried by the next ``flush``/``append``/``close``;
                the caller's transcript is unaffected.
        """
        if not self.enqueue(event):
            return False
        self.flush()
        return True

    def flush(self) -> None:
        """Write every queued record (one write, one fsync). Blocks for the I/O.

        Raises:
            JournalError: the write or fsync failed (disk full...); what was not written
                stays queued for the next flush. Also raised when the journal is closed.
        """
        with self._io:
            if self._fd is None:
                raise JournalError(f"The autosave journal {self.path} is already closed.", self.path)
            self._drain()

    def _drain(self) -> None:
        """Write the queued records and fsync; the caller holds ``_io`` and the file is open."""
        fd = self._fd
        assert fd is not None
        try:
            if self._torn:
                os.write(fd, b"\n")
                self._torn = False
            with self._lock:
                batch = b"".join(self._pending)
            data = memoryview(batch)
            written = 0
            try:
                while written < len(data):
                    written += os.write(fd, data[written:])
            finally:
                self._forget(written)
            os.fsync(fd)
        except OSError as exc:
            self.error = JournalError(
                f"Cannot write the autosave journal {self.path}: {_explain(exc)}. "
                f"Captions continue and stay in memory; {self.pending} record(s) will be "
                "written when the disk accepts them again. Save the transcript elsewhere to be safe.",
                self.path,
                exc.errno,
            )
            raise self.error from exc
        self.error = None

    def _forget(self, written: int) -> None:
        """Drop the first ``written`` bytes of the queue: whole records, and the written part of
        a record cut by a short write (writing its rest later completes the line: O_APPEND, one
        flush at a time). Records queued meanwhile were appended behind the batch."""
        with self._lock:
            while written and self._pending:
                head = self._pending[0]
                if written >= len(head):
                    self._pending.popleft()
                    written -= len(head)
                else:
                    self._pending[0] = head[written:]
                    written = 0

    @property
    def pending(self) -> int:
        """Number of records queued in memory and not yet written (waiting, or writing failed)."""
        with self._lock:
            return len(self._pending)

    @property
    def closed(self) -> bool:
        """True once ``close`` succeeded."""
        return self._fd is None

    def close(self, reason: str = "finished") -> None:
        """Write the queued records and the clean-close record, then close the file. Idempotent.

        Raises:
            JournalError: the close record (or earlier queued records) could not be
                written; the file stays open so ``close`` can be retried.
        """
        with self._io:
            with self._lock:
                if self._fd is None:
                    return
                if not self._closing:  # a retried close does not queue a second close record
                    self._pending.append(_encode({"type": "close", "closed": _now_iso(), "reason": reason}))
                    self._closing = True
            self._drain()
            with self._lock:
                fd, self._fd = self._fd, None
        try:
            os.close(fd)
        except OSError:
            pass

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


__all__ = ["JOURNAL_VERSION", "Journal", "JournalError"]
