"""Reading autosave journals back: the records, the rebuilt transcript, and the unfinished ones to offer.

The writing side is :mod:`captioner.transcript.journal` (format in its docstring). A
session that ended without its close record (a crash, a power cut, a killed process) is
*unfinished*: :func:`find_unfinished` lists them for the recovery prompt and
``captioner recover``, :func:`recover` replays the records through the same
:class:`~captioner.transcript.model.Transcript` builder as the live session (so the rebuilt
transcript equals the live one), :func:`mark_closed` stops offering one, and
:func:`prune_closed` deletes closed journals after two weeks. The reader skips a torn last
line and any garbage line.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from captioner import paths
from captioner.events import Event, SoundEvent, SpeakerFix, TextDelta, TurnBoundary
from captioner.transcript.journal import JOURNAL_SUFFIX, Journal, JournalError, _explain
from captioner.transcript.model import SpeakerRename, Transcript


def read_journal(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read every intact record of a journal.

    A torn last line (crash mid-write), blank lines, lines that are not JSON objects
    with a ``"type"``, and invalid UTF-8 are skipped, never raised.

    Returns:
        The records in file order (header first when intact).

    Raises:
        JournalError: the file cannot be opened or read.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"Cannot read the autosave journal {path}: {_explain(exc)}.", path, exc.errno) from exc
    return _parse_lines(raw)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def events_from_records(records: Iterable[dict[str, Any]]) -> list[Event]:
    """Turn journal records back into events (``TextDelta(final=True)`` / ``TurnBoundary`` /
    ``SpeakerRename`` / ``SpeakerFix`` / ``SoundEvent``).

    Records with missing or wrongly typed fields are skipped; a text record with a speaker
    that is not a string keeps its text, unattributed.
    """
    events: list[Event] = []
    for rec in records:
        source = rec.get("source", "")
        if not isinstance(source, str):
            continue
        if rec["type"] == "text":
            text, start, end = rec.get("text"), _float(rec.get("start")), _float(rec.get("end"))
            speaker = rec.get("speaker", "")
            if isinstance(text, str) and text and start is not None:
                events.append(TextDelta(text, start, end if end is not None else start, True, source,
                                        speaker=speaker if isinstance(speaker, str) else ""))
        elif rec["type"] == "turn":
            time = _float(rec.get("time"))
            kind = rec.get("kind") if isinstance(rec.get("kind"), str) else "semantic_vad"
            prob = _float(rec.get("probability"))
            if time is not None:
                events.append(TurnBoundary(time, kind, 1.0 if prob is None else prob, source))
        elif rec["type"] == "speaker_name":
            speaker, name = rec.get("speaker"), rec.get("name", "")
            if isinstance(speaker, str) and speaker and isinstance(name, str):
                events.append(SpeakerRename(speaker, name))
        elif rec["type"] == "speaker_fix":
            speaker, start, end = rec.get("speaker"), _float(rec.get("start")), _float(rec.get("end"))
            if isinstance(speaker, str) and speaker and start is not None and end is not None:
                events.append(SpeakerFix(start, end, speaker, source))
        elif rec["type"] == "sound":
            label, start, end, score = rec.get("label"), _float(rec.get("start")), _float(rec.get("end")), \
                _float(rec.get("score"))
            if isinstance(label, str) and label.strip() and start is not None:
                events.append(SoundEvent(start, end if end is not None else start, label,
                                         1.0 if score is None else score, source))
    return events


def recover(path: str | os.PathLike) -> Transcript:
    """Rebuild the transcript of a journal (after a crash, or to reopen a session).

    The header's ``created``/``backend``/``sources`` go into ``Transcript.metadata``
    (plus ``journal``: the path). Segments that were open at a crash stay open; in a
    cleanly closed journal they are closed as ``"end_of_stream"`` turns.

    Raises:
        JournalError: the file cannot be read.
    """
    records = read_journal(path)
    header = next((r for r in records if r["type"] == "header"), {})
    metadata = {k: header[k] for k in ("created", "backend", "sources") if k in header}
    metadata["journal"] = str(path)
    transcript = Transcript(metadata)
    transcript.extend(events_from_records(records))
    if is_closed(records):
        transcript.close_all()
    return transcript


def is_closed(records: Iterable[dict[str, Any]]) -> bool:
    """True if the records contain a clean-close record."""
    return any(r["type"] == "close" for r in records)


def _parse_lines(raw: bytes) -> list[dict[str, Any]]:
    records = []
    for line in raw.split(b"\n"):
        try:
            record = json.loads(line.decode("utf-8")) if line.strip() else None
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("type"), str):
            records.append(record)
    return records


def _peek(path: Path, head: int = 65536, tail: int = 4096) -> tuple[bool, bool]:
    """(has a text record, ends with a close record) from the file's head and tail only.

    A close record is always the last record written, so the tail decides it; a day
    of 24/7 captioning makes a journal of tens of MB, which is never read whole here.
    """
    with open(path, "rb") as f:
        first = f.read(head)
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - tail))
        last = f.read(tail)
    tail_records = _parse_lines(last)
    closed = bool(tail_records) and tail_records[-1]["type"] == "close"
    has_text = any(r["type"] == "text" for r in _parse_lines(first) + tail_records)
    return has_text, closed


def _journals(directory: str | os.PathLike | None) -> list[Path]:
    folder = Path(directory) if directory is not None else paths.journal_dir()
    try:
        return [p for p in folder.glob(f"*{JOURNAL_SUFFIX}") if p.is_file()]
    except OSError:
        return []


def find_unfinished(directory: str | os.PathLike | None = None) -> list[Path]:
    """Journals that hold text but were never closed cleanly (the app crashed or was killed).

    Only the head and tail of each file are read, so this is cheap at start-up.

    Args:
        directory: folder of the journals; default ``captioner.paths.journal_dir()``.
            A missing folder gives an empty list.

    Returns:
        Paths, newest (by modification time) first. Unreadable files are skipped.
    """
    found: list[tuple[float, Path]] = []
    for path in _journals(directory):
        try:
            has_text, closed = _peek(path)
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if has_text and not closed:
            found.append((mtime, path))
    found.sort(key=lambda item: item[0], reverse=True)
    return [p for _, p in found]


def prune_closed(directory: str | os.PathLike | None = None, *, older_than_days: float = 14.0) -> list[Path]:
    """Delete cleanly closed journals last written more than ``older_than_days`` days ago.

    Journals hold private speech transcripts, so they are not kept forever; unfinished
    (recoverable) journals are never deleted.

    Returns:
        The deleted paths. Files that cannot be deleted are skipped.
    """
    cutoff = datetime.now().timestamp() - older_than_days * 86400.0
    deleted = []
    for path in _journals(directory):
        try:
            if path.stat().st_mtime < cutoff and _peek(path)[1]:
                path.unlink()
                deleted.append(path)
        except OSError:
            continue
    return deleted


def mark_closed(path: str | os.PathLike, reason: str = "recovered") -> None:
    """Append a close record to an unfinished journal so it is not offered again.

    Raises:
        JournalError: the file cannot be written.
    """
    journal = Journal(path)
    journal.close(reason)


def describe_unfinished(path: str | os.PathLike) -> dict[str, Any]:
    """A short description of a journal for a recovery prompt or ``captioner recover``.

    Returns:
        ``{"path", "created", "modified", "sources", "backend", "lines", "seconds", "preview"}``:
        ISO times (``created`` from the header, "" if torn), the number of final text
        records, the stream time of the last one (seconds) and the first ~60 characters.

    Raises:
        JournalError: the file cannot be read.
    """
    path = Path(path)
    records = read_journal(path)
    header = next((r for r in records if r["type"] == "header"), {})
    texts = [r for r in records if r["type"] == "text" and isinstance(r.get("text"), str)]
    preview = " ".join(r["text"] for r in texts[:8]).strip()
    ends = [v for v in (_float(r.get("end")) for r in texts) if v is not None]
    try:
        modified = datetime.fromtimestamp(path.stat().st_mtime).astimezone().isoformat(timespec="seconds")
    except OSError:
        modified = ""
    return {
        "path": str(path),
        "created": header.get("created", "") if isinstance(header.get("created", ""), str) else "",
        "modified": modified,
        "sources": [s for s in header.get("sources", []) if isinstance(s, str)],
        "backend": header.get("backend", "") if isinstance(header.get("backend", ""), str) else "",
        "lines": len(texts),
        "seconds": max(ends, default=0.0),
        "preview": preview if len(preview) <= 60 else preview[:59].rstrip() + "…",
    }
