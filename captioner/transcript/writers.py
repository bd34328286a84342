"""Saving a transcript as TXT, SRT, WebVTT or JSON.

Every file is UTF-8 (never the OS code page) with ``\\n`` line ends, written
atomically (:func:`captioner.transcript.atomic_write.write_text_atomic`: the bytes go to a
temporary file beside the real target (symlinks are followed), are fsynced, and then replace
it with ``os.replace``, so a full disk or a crash never leaves half a file over a good one).
Named pipes, devices and ``/dev/stdout`` are written in place, as a shell redirection would.
A file that cannot be written raises
:class:`~captioner.transcript.atomic_write.TranscriptWriteError`.

Cue times are stream time relative to the session start (never wall-clock), strictly
increasing, ``start < end`` (see ``cues.make_cues``). SRT is composed by the ``srt``
library (``HH:MM:SS,mmm``), WebVTT by ``webvtt-py`` (``WEBVTT`` header,
``HH:MM:SS.mmm``); in WebVTT cue text ``&``, ``<`` and ``>`` are escaped as the
WebVTT spec requires (so ``-->`` can never appear in a cue's text).

Every formatter takes ``mask``: a length-preserving ``str -> str`` applied to each
segment's text before anything else (the profanity filter,
:class:`captioner.transcript.profanity.ProfanityFilter`). The transcript itself (and the
journal behind it) keeps what the model wrote, so each save can choose again. Speaker
names are not masked: the user typed them.

Speakers (issue 38; see ``cues.py``): TXT and SRT prefix the speaker's display name
(``Transcript.display_label``: the user's name, else the id) at each change of speaker,
``"Speaker 2: "``; WebVTT puts every cue of an attributed segment in a voice span,
``<v Speaker 2>text</v>`` (the name escaped like cue text); JSON gives every segment
``"speaker"`` (display label; the source label for unattributed text) and ``"speaker_id"``
plus a top-level ``"speakers"`` list of ``{"id", "name"}``. A transcript without speakers
is written byte for byte as before (no speaker fields).

Sounds (issue 49): a sound caption (``Segment.sound``) is its own line in TXT
(``[00:01:05] [music]``, with the source label where sources are labelled), its own bracketed
cue in SRT and WebVTT, and a segment with ``"sound": "music"`` (and ``"text": "[music]"``, no
speaker) in JSON. The mask never touches it (it is not speech).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from dataclasses import replace
from typing import Any, Callable, Iterable

import srt
import webvtt

from captioner import __version__
from captioner.transcript.atomic_write import write_text_atomic
from captioner.transcript.cues import Cue, make_cues
from captioner.transcript.model import Transcript
from captioner.transcript.segment import Segment

#: Formats and their file suffixes.
FORMATS = ("txt", "srt", "vtt", "json")
JSON_FORMAT_NAME = "captioner-transcript"
JSON_VERSION = 1
#: A text mask: ``str -> str`` of the same length (e.g. a ``ProfanityFilter``), or None.
Mask = Callable[[str], str] | None


def _segments(transcript: Transcript | Iterable[Segment], mask: Mask = None) -> list[Segment]:
    segs = transcript.segments if isinstance(transcript, Transcript) else list(transcript)
    segs = sorted((s for s in segs if s.text.strip()), key=lambda s: s.start)
    return segs if mask is None else [s if s.sound else replace(s, text=mask(s.text)) for s in segs]


def _names(transcript: Transcript | Iterable[Segment]) -> dict[str, str]:
    """``{speaker id: name}`` of a ``Transcript`` ({} for bare segments: ids are shown)."""
    return transcript.speaker_names if isinstance(transcript, Transcript) else {}


def _speaker_label(seg: Segment, names: dict[str, str]) -> str:
    """The display label of ``seg``: the speaker's name, else its id, else the source label."""
    return " ".join((names.get(seg.speaker) or seg.speaker).split()) or seg.source


def _hms(seconds: float) -> str:
    total = max(0, int(seconds))
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def format_txt(
    transcript: Transcript | Iterable[Segment], *, timestamps: bool = True, label_sources: bool | None = None,
    mask: Mask = None,
) -> str:
    """Plain text, one line per segment: ``[HH:MM:SS] Source: text``.

    An attributed segment's line is prefixed with its speaker's display name instead,
    ``[HH:MM:SS] Speaker 2: text``, and only where the speaker changes (the first line of
    each run of one speaker, lines in time order).

    Args:
        transcript: a ``Transcript`` or segments.
        timestamps: prefix each line with its start (stream time, whole seconds).
        label_sources: prefix the source label of unattributed lines; default: only with
            several sources.
        mask: applied to each segment's text (see the module docstring).

    Returns:
        The text, ending with ``"\\n"`` ("" when there is no text).
    """
    segs = _segments(transcript, mask)
    if label_sources is None:
        label_sources = len({s.source for s in segs}) > 1
    names = _names(transcript)
    lines = []
    shown_last = None  # who the previous line was said by, as shown
    for seg in segs:
        prefix = f"[{_hms(seg.start)}] " if timestamps else ""
        if seg.sound:  # a sound caption: never a speaker; the run of the speaker around it goes on
            if label_sources and seg.source:
                prefix += f"{seg.source}: "
        elif seg.speaker:
            label = _speaker_label(seg, names)
            if label != shown_last:
                prefix += f"{label}: "
            shown_last = label
        else:
            if label_sources and seg.source:
                prefix += f"{seg.source}: "
            shown_last = seg.source
        lines.append(prefix + " ".join(seg.text.split()))
    return "".join(line + "\n" for line in lines)


def format_srt(transcript: Transcript | Iterable[Segment], *, mask: Mask = None, **cue_options: Any) -> str:
    """SubRip text composed by ``srt.compose``: numbered cues, ``HH:MM:SS,mmm --> HH:MM:SS,mmm``.

    Args:
        transcript: a ``Transcript`` or segments.
        mask: applied to each segment's text (see the module docstring).
        **cue_options: passed to ``cues.make_cues`` (label_sources, max_lines, ...).

    A cue that starts a run of one speaker begins with ``"Speaker 2: "`` (the display name).
    """
    cue_options.setdefault("names", _names(transcript))
    cues = make_cues(_segments(transcript, mask), **cue_options)
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


def _vtt_lines(cue: Cue) -> list[str]:
    """The cue's lines escaped; a cue with a speaker wrapped in ``<v Name>...</v>`` (WebVTT
    voice span: the annotation is escaped as cue text, so a ``>`` in a name cannot end the tag)."""
    lines = [_vtt_text(x) for x in cue.lines]
    if cue.speaker and lines:
        lines[0] = f"<v {_vtt_text(cue.speaker)}>{lines[0]}"
        lines[-1] += "</v>"
    return lines


def _vtt_time(ms: int) -> str:
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}"


def format_vtt(transcript: Transcript | Iterable[Segment], *, mask: Mask = None, **cue_options: Any) -> str:
    """WebVTT text composed by ``webvtt-py``: ``WEBVTT`` header, ``HH:MM:SS.mmm --> HH:MM:SS.mmm`` cues.

    Args:
        transcript: a ``Transcript`` or segments.
        mask: applied to each segment's text (see the module docstring).
        **cue_options: passed to ``cues.make_cues``.

    Every cue of an attributed segment is one voice span, ``<v Speaker 2>text</v>``
    (``webvtt.Caption.voice`` reads the name back; it writes no spans itself).
    """
    cue_options.setdefault("names", _names(transcript))
    cue_options.setdefault("voices", True)
    cues: list[Cue] = make_cues(_segments(transcript, mask), **cue_options)
    captions = [
        webvtt.Caption(start=_vtt_time(c.start_ms), end=_vtt_time(c.end_ms), text=_vtt_lines(c))
        for c in cues
    ]
    return webvtt.WebVTT(captions=captions).content


def format_json(transcript: Transcript | Iterable[Segment], *, indent: int | None = 2, mask: Mask = None) -> str:
    """JSON document: ``{"format", "version", "metadata", "sources", "segments": [...]}``.

    Each segment is ``{"source", "start", "end" (s, stream time), "text" (stripped),
    "turn_end", "boundary"}``; a sound caption's also has ``"sound"`` (``"music"``; its text is
    ``"[music]"``, its boundary ``"sound"``) and never a speaker; ``"turns"`` lists every turn boundary as ``{"source", "time"
    (s), "kind", "probability"}`` (semantic-VAD end-of-turn probability, 1.0 when the
    backend gave none). Non-ASCII text is stored as is (UTF-8), not escaped. ``mask`` is
    applied to each segment's text; a masked file says so (``metadata["masked"]`` true).

    When any segment is attributed, every segment also has ``"speaker"`` (its display
    label: the speaker's name, else its id, else the source label) and ``"speaker_id"``
    (``""`` when not attributed), and the document lists ``"speakers"``: ``[{"id", "name"}]``
    in order of first appearance (``name`` is the id when the user gave none).
    """
    segs = _segments(transcript, mask)
    names = _names(transcript)
    attributed = any(s.speaker for s in segs)
    metadata: dict[str, Any] = {}
    turns: list[dict[str, Any]] = []
    if isinstance(transcript, Transcript):
        metadata = {k: v for k, v in transcript.metadata.items()}
        turns = [
            {"source": t.source, "time": round(float(t.time), 3), "kind": t.kind, "probability": float(t.probability)}
            for t in transcript.turns
        ]
    metadata.setdefault("app", f"captioner {__version__}")
    if mask is not None:
        metadata["masked"] = True
    doc = {
        "format": JSON_FORMAT_NAME,
        "version": JSON_VERSION,
        "metadata": metadata,
        "sources": list(dict.fromkeys(s.source for s in segs)),
    }
    if attributed:
        ids = dict.fromkeys(s.speaker for s in segs if s.speaker)
        doc["speakers"] = [{"id": i, "name": names.get(i, i)} for i in ids]
    doc["segments"] = [s.to_dict(_speaker_label(s, names) if attributed else None) for s in segs]
    doc["turns"] = turns
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
    "format_json",
    "format_srt",
    "format_transcript",
    "format_txt",
    "format_vtt",
    "write_json",
    "write_srt",
    "write_transcript",
    "write_txt",
    "write_vtt",
]
