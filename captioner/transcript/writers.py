"""Saving a transcript as TXT, SRT, WebVTT or JSON.

Every file is UTF-8 (never the OS code page) with ``\\n`` line ends, written
atomically: the bytes go to a temporary file in the target folder, are fsynced, and
then replace the target with ``os.replace``, so a full disk or a crash never leaves
half a file over a good one.

Cue times are stream time relative to the session start (never wall-clock), strictly
increasing, ``start < end`` (see ``cues.make_cues``). SRT is composed by the ``srt``
library (``HH:MM:SS,mmm``), WebVTT by ``webvtt-py`` (``WEBVTT`` header,
``HH:MM:SS.mmm``); in WebVTT cue text ``&``, ``<`` and ``>`` are escaped as the
WebVTT spec requires (so ``-->`` can never appear in a cue's text).
"""

from __future__ import annotations

import errno
import json
import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable

import srt
import webvtt

from captioner import __version__
from captioner.transcript.cues import Cue, make_cues
from captioner.transcript.model import Segment, Transcript

#: Formats and their file suffixes.
FORMATS = ("txt", "srt", "vtt", "json")
JSON_FORMAT_NAME = "captioner-transcript"
JSON_VERSION = 1


class TranscriptWriteError(RuntimeError):
    """A transcript file could not be written. The message names the file and the fix.

    Attributes:
        path: the target file.
        errno: the OS error number or None.
    """

    def __init__(self, message: str, path: str | os.PathLike, err: int | None = None):
        super().__init__(message)
        self.path = Path(path)
        self.errno = err


def _segments(transcript: Transcript | Iterable[Segment]) -> list[Segment]:
    segs = transcript.segments if isinstance(transcript, Transcript) else list(transcript)
    return sorted((s for s in segs if s.text.strip()), key=lambda s: s.start)


def _hms(seconds: float) -> str:
    total = max(0, int(seconds))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def format_txt(
    transcript: Transcript | Iterable[Segment], *, timestamps: bool = True, label_sources: bool | None = None
) -> str:
    """Plain text, one line per segment: ``[HH:MM:SS] Source: text``.

    Args:
        transcript: a ``Transcript`` or segments.
        timestamps: prefix each line with its start (stream time, whole seconds).
        label_sources: prefix the source label; default: only with several sources.

    Returns:
        The text, ending with ``"\\n"`` ("" when there is no text).
    """
    segs = _segments(transcript)
    if label_sources is None:
        label_sources = len({s.source for s in segs}) > 1
    lines = []
    for seg in segs:
        prefix = f"[{_hms(seg.start)}] " if timestamps else ""
        if label_sources and seg.source:
            prefix += f"{seg.source}: "
        lines.append(prefix + " ".join(seg.text.split()))
    return "".join(line + "\n" for line in lines)


def format_srt(transcript: Transcript | Iterable[Segment], **cue_options: Any) -> str:
    """SubRip text composed by ``srt.compose``: numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``.

    Args:
        transcript: a ``Transcript`` or segments.
        **cue_options: passed to ``cues.make_cues`` (label_sources, max_lines, ...).
    """
    cues = make_cues(_segments(transcript), **cue_options)
    subtitles = [
        srt.Subtitle(
            index=i,
            start=timedelta(milliseconds=cue.start_ms),
            end=timedelta(milliseconds=cue.end_ms),
            content=cue.text,
        )
        for i, cue in enumerate(cues, start=1)
    ]
    return srt.compose(subtitles, reindex=True)


def _vtt_text(line: str) -> str:
    return line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _vtt_time(ms: int) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def format_vtt(transcript: Transcript | Iterable[Segment], **cue_options: Any) -> str:
    """WebVTT text composed by ``webvtt-py``: ``WEBVTT`` header, ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` cues.

    Args:
        transcript: a ``Transcript`` or segments.
        **cue_options: passed to ``cues.make_cues``.
    """
    cues: list[Cue] = make_cues(_segments(transcript), **cue_options)
    captions = [
        webvtt.Caption(start=_vtt_time(c.start_ms), end=_vtt_time(c.end_ms), text=[_vtt_text(x) for x in c.lines])
        for c in cues
    ]
    return webvtt.WebVTT(captions=captions).content


def format_json(transcript: Transcript | Iterable[Segment], *, indent: int | None = 2) -> str:
    """JSON document: ``{"format", "version", "metadata", "sources", "segments": [...]}``.

    Each segment is ``{"source", "start", "end" (s, stream time), "text" (verbatim),
    "turn_end", "boundary"}``; ``"turns"`` lists every turn boundary as ``{"source", "time"
    (s), "kind", "probability"}`` (semantic-VAD end-of-turn probability, 1.0 when the
    backend gave none). Non-ASCII text is stored as is (UTF-8), not escaped.
    """
    segs = _segments(transcript)
    metadata: dict[str, Any] = {}
    turns: list[dict[str, Any]] = []
    if isinstance(transcript, Transcript):
        metadata = {k: v for k, v in transcript.metadata.items()}
        turns = [
            {"source": t.source, "time": round(float(t.time), 3), "kind": t.kind, "probability": float(t.probability)}
            for t in transcript.turns
        ]
    metadata.setdefault("app", f"captioner {__version__}")
    doc = {
        "format": JSON_FORMAT_NAME,
        "version": JSON_VERSION,
        "metadata": metadata,
        "sources": list(dict.fromkeys(s.source for s in segs)),
        "segments": [s.to_dict() for s in segs],
        "turns": turns,
    }
    return json.dumps(doc, ensure_ascii=False, indent=indent, default=str) + "\n"


def format_transcript(transcript: Transcript | Iterable[Segment], fmt: str, **options: Any) -> str:
    """Render ``transcript`` as ``fmt`` ("txt", "srt", "vtt" or "json").

    Raises:
        ValueError: unknown format (the message lists the known ones).
    """
    key = fmt.lower().lstrip(".")
    if key == "webvtt":
        key = "vtt"
    formatters = {"txt": format_txt, "srt": format_srt, "vtt": format_vtt, "json": format_json}
    if key not in formatters:
        raise ValueError(f"Unknown transcript format {fmt!r}: use one of {', '.join(FORMATS)}.")
    return formatters[key](transcript, **options)


def _explain(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC or exc.errno == getattr(errno, "EDQUOT", -1):
        return "the disk is full. Free some space or save to another drive"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (read-only, or the file is open in another program). Choose another folder or close that program"
    if exc.errno == errno.ENOTDIR:
        return "part of the path is a file, not a folder. Choose an existing folder"
    if exc.errno == errno.ENOENT:
        return "the folder does not exist. Choose an existing folder"
    if exc.errno == errno.EISDIR:
        return "that is a folder. Choose a file name"
    return f"{exc.strerror or exc}. Try another folder"


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path`` atomically (temp file + fsync + ``os.replace``).

    The new file gets the usual permissions (0o666 minus the umask); an existing file
    is replaced only after the new content is safely on disk.

    Returns:
        The path written.

    Raises:
        TranscriptWriteError: the folder is missing or read-only, the disk is full,
            or the target is a folder. The old file, if any, is untouched.
    """
    target = Path(path)
    data = text.encode("utf-8")
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = None
    try:
        if target.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = None
        os.replace(tmp, target)
    except OSError as exc:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise TranscriptWriteError(
            f"Could not save the transcript to {target}: {_explain(exc)}. "
            "Nothing was lost: the transcript is still open and in the autosave journal.",
            target,
            exc.errno,
        ) from exc
    return target


def format_from_path(path: str | os.PathLike) -> str:
    """The format named by ``path``'s suffix, lower-case (``.webvtt`` -> "vtt"); "" without one.

    The result may be a suffix that is not in ``FORMATS``; callers decide whether that
    is an error or falls back to a default.
    """
    suffix = Path(path).suffix.lower().lstrip(".")
    return "vtt" if suffix == "webvtt" else suffix


def write_transcript(
    transcript: Transcript | Iterable[Segment], path: str | os.PathLike, fmt: str | None = None, **options: Any
) -> Path:
    """Save ``transcript`` to ``path`` as ``fmt`` (default: from the suffix), atomically, UTF-8.

    Raises:
        ValueError: unknown format.
        TranscriptWriteError: the file cannot be written (message says why and what to do).
    """
    target = Path(path)
    return write_text_atomic(target, format_transcript(transcript, fmt or format_from_path(target), **options))


def write_txt(transcript: Transcript | Iterable[Segment], path: str | os.PathLike, **options: Any) -> Path:
    """Save as plain text (see ``format_txt``). Raises ``TranscriptWriteError``."""
    return write_transcript(transcript, path, "txt", **options)


def write_srt(transcript: Transcript | Iterable[Segment], path: str | os.PathLike, **options: Any) -> Path:
    """Save as SubRip (see ``format_srt``). Raises ``TranscriptWriteError``."""
    return write_transcript(transcript, path, "srt", **options)


def write_vtt(transcript: Transcript | Iterable[Segment], path: str | os.PathLike, **options: Any) -> Path:
    """Save as WebVTT (see ``format_vtt``). Raises ``TranscriptWriteError``."""
    return write_transcript(transcript, path, "vtt", **options)


def write_json(transcript: Transcript | Iterable[Segment], path: str | os.PathLike, **options: Any) -> Path:
    """Save as JSON (see ``format_json``). Raises ``TranscriptWriteError``."""
    return write_transcript(transcript, path, "json", **options)


__all__ = [
    "FORMATS",
    "TranscriptWriteError",
    "format_json",
    "format_srt",
    "format_transcript",
    "format_txt",
    "format_vtt",
    "write_json",
    "write_srt",
    "write_text_atomic",
    "write_transcript",
    "write_txt",
    "write_vtt",
]
