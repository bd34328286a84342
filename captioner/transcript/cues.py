"""Turning transcript segments into readable subtitle cues (for SRT and WebVTT).

Readability rules (Netflix Timed Text Style Guides; BBC Subtitle Guidelines):

- at most ``MAX_LINES`` = 2 lines per cue;
- Latin-script text: at most ``LINE_COLUMNS`` = 42 characters per line, broken at spaces
  (a word longer than a line is split by characters);
- CJK text (no spaces between words): at most ``CJK_LINE_CHARS`` = 16 characters per
  line (the Simplified Chinese limit), broken between any two characters except
  before closing punctuation (``，。！？」`` ...), which stays on its line.

A segment that fits one line stays on one line. A longer one is balanced: it gets as many cues as full-width lines need, and the
text is spread evenly over them (never narrower than half a line), so no cue is a
one-word stub. Widths are display columns: East Asian Wide/Fullwidth characters (CJK, most emoji)
count 2, combining marks 0, everything else 1. A line of Latin text holds 42 columns;
a line of mostly-CJK text holds 2 x 16 = 32 columns.

Timing: a segment's duration is shared among its cues in proportion to their
character counts. Cue times are integer milliseconds of stream time (relative to the
session start, never wall-clock) and, across the whole file, cue starts are strictly
increasing (two sources speaking at once are ordered by start and nudged by 1 ms when
equal) and every cue has ``start < end``. A cue is held at least ``MIN_CUE_S`` so it
can be read, but never past the next cue of the same source.

Speakers (issue 38): the cues of an attributed segment (``Segment.speaker``) are labelled
with the speaker's display name instead of the source label, on the first cue of each
run of one speaker only (``"Speaker 2: "``; cues in time order, a run ends where another
speaker or an unattributed source speaks), or, for WebVTT (``voices=True``), not in the
text at all: every such cue carries ``Cue.speaker`` for a voice span. Unattributed
segments keep the source labels above, so a transcript without speakers gives the same
cues as before.

Sounds (issue 49): a sound caption's segment (``Segment.sound``) is a cue of its own with the
bracketed text (``"[music]"``, the captioning convention), labelled with its source like an
unattributed segment but never with a speaker, and it does not end a run of one speaker.
It lies on its own track: a speech cue is never cut short by a sound cue of its source (nor
the other way round), so ``[music]`` may show at the same time as the words spoken over it.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from captioner.transcript.segment import Segment

#: Lines per cue (Netflix / BBC: two lines).
MAX_LINES = 2
#: Columns per line for Latin-script text (Netflix: 42 characters).
LINE_COLUMNS = 42
#: Characters per line for CJK text (Netflix Simplified Chinese: 16 characters).
CJK_LINE_CHARS = 16
#: Shortest time a cue stays up when the next cue of its source allows (s).
MIN_CUE_S = 0.5

_ZWJ = "\u200d"
# No line may start with these (closing punctuation, Latin and CJK full-width).
_NO_LINE_START = set(",.!?;:)]}%»”’…、。，．！？；：）］｝」』】〉》〕〗〙〛ー・々ゝゞヽヾ")
# No line may end with these (opening brackets).
_NO_LINE_END = set("([{«“‘（［｛「『【〈《〔〖〘〚")


@functools.lru_cache(maxsize=8192)
def char_width(ch: str) -> int:
    """Display columns of one character: 2 for East Asian Wide/Fullwidth, 0 for combining marks, else 1."""
    if unicodedata.combining(ch) or ch in (_ZWJ, "\ufe0e", "\ufe0f"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Display columns of ``text`` (sum of ``char_width``)."""
    if text.isascii():  # every ASCII character is one column: the common case, without a call per character
        return len(text)
    return sum(char_width(ch) for ch in text)


def is_cjk_text(text: str) -> bool:
    """True when at least half of the visible characters of ``text`` are wide (CJK)."""
    if text.isascii():
        return False
    visible = [ch for ch in text if not ch.isspace() and char_width(ch) > 0]
    if not visible:
        return False
    wide = sum(1 for ch in visible if char_width(ch) == 2)
    return 2 * wide >= len(visible)


def line_columns_for(text: str, *, line_columns: int = LINE_COLUMNS, cjk_line_chars: int = CJK_LINE_CHARS) -> int:
    """Columns per line for ``text``: ``2 * cjk_line_chars`` for CJK text, else ``line_columns``."""
    return 2 * cjk_line_chars if is_cjk_text(text) else line_columns


def _atoms(text: str) -> list[tuple[str, bool, int]]:
    """Unbreakable pieces of ``text`` as (piece, preceded_by_space, display width).

    Latin words are one piece; every wide character is its own piece; combining
    marks, emoji joiners and closing punctuation stay with what they follow.
    """
    if text.isascii():  # one column per character, no wide ones: each word is one piece
        return [(word, i > 0, len(word)) for i, word in enumerate(text.split())]
    atoms: list[list] = []  # [text, space_before]
    for word_index, word in enumerate(text.split()):
        space = word_index > 0
        prev_wide = False
        glue_next = False
        for ch in word:
            width = char_width(ch)
            wide = width == 2
            if atoms and not space and (width == 0 or glue_next):
                atoms[-1][0] += ch  # combining mark, ZWJ, or the char after a ZWJ
            elif atoms and not space and not wide and not prev_wide:
                atoms[-1][0] += ch  # continue a Latin run
            elif atoms and not space and ch in _NO_LINE_START:
                atoms[-1][0] += ch  # kinsoku: closing punctuation stays on the line
            elif atoms and not space and atoms[-1][0] and atoms[-1][0][-1] in _NO_LINE_END:
                atoms[-1][0] += ch  # an opening bracket stays with what it opens
            else:
                atoms.append([ch, space])
            glue_next = ch == _ZWJ
            if width:
                prev_wide = wide
            space = False
    return [(a, s, display_width(a)) for a, s in atoms]


def wrap_text(text: str, columns: int, first_columns: int | None = None, *, lines_per_group: int = 0) -> list[str]:
    """Break ``text`` into lines of at most ``columns`` display columns.

    Latin text breaks at spaces, CJK text between characters (see ``_atoms``); a
    piece wider than a line is split by characters. Whitespace runs become one space.

    Args:
        text: any text.
        columns: columns per line (>= 2 so a wide character fits).
        first_columns: columns of the first line of each group (room for a label);
            default ``columns``.
        lines_per_group: when > 0, every ``lines_per_group``-th line (0, n, 2n, ...)
            is a "first" line; else only line 0 is.

    Returns:
        The lines, none empty (``[]`` for blank text).
    """
    return _fill(_atoms(text), columns, first_columns, lines_per_group)


def _fill(
    atoms: list[tuple[str, bool, int]], columns: int, first_columns: int | None, lines_per_group: int
) -> list[str]:
    """Greedy line filling of precomputed atoms (see ``wrap_text``)."""
    columns = max(2, int(columns))
    first = max(2, int(first_columns if first_columns is not None else columns))
    lines: list[str] = []
    current, used = "", 0

    def limit() -> int:
        index = len(lines)
        is_first = index == 0 or (lines_per_group > 0 and index % lines_per_group == 0)
        return first if is_first else columns

    for atom, space, width in atoms:
        sep = " " if space and current else ""
        if current and used + len(sep) + width <= limit():
            current += sep + atom
            used += len(sep) + width
            continue
        if current:
            lines.append(current)
            current, used = "", 0
        if width <= limit():
            current, used = atom, width
            continue
        for ch in atom:  # wider than a line (a URL, a long compound): split by characters
            w = char_width(ch)
            if current and w > 0 and used + w > limit():
                lines.append(current)
                current, used = "", 0
            current += ch
            used += w
    if current:
        lines.append(current)
    return lines


@dataclass(frozen=True)
class Cue:
    """One subtitle cue.

    Attributes:
        start_ms: start, integer milliseconds of stream time (session start = 0).
        end_ms: end, integer milliseconds; always ``end_ms > start_ms``.
        lines: 1..``MAX_LINES`` lines of text (label included when sources are labelled).
        source: source label of the segment it came from.
        speaker: the display name of the segment's speaker when the cue carries it apart
            from its text (``make_cues(voices=True)``, a WebVTT voice span); else ``""``.
        sound: the sound's word ("music") of a sound caption's cue; ``""`` for speech.
    """

    start_ms: int
    end_ms: int
    lines: tuple[str, ...]
    source: str = ""
    speaker: str = ""
    sound: str = ""

    @property
    def start(self) -> float:
        """Start in seconds."""
        return self.start_ms / 1000.0

    @property
    def end(self) -> float:
        """End in seconds."""
        return self.end_ms / 1000.0

    @property
    def text(self) -> str:
        """The lines joined with ``"\\n"``."""
        return "\n".join(self.lines)


def _ms(seconds: float) -> int:
    if not math.isfinite(seconds) or seconds <= 0:
        return 0
    return int(round(seconds * 1000.0))


def _visible_chars(lines: Sequence[str]) -> int:
    if all(line.isascii() for line in lines):  # one column each: count what is not whitespace
        return sum(len("".join(line.split())) for line in lines)
    return sum(1 for line in lines for ch in line if not ch.isspace() and char_width(ch) > 0)


def segment_cues(
    segment: Segment,
    *,
    label: str = "",
    max_lines: int = MAX_LINES,
    line_columns: int = LINE_COLUMNS,
    cjk_line_chars: int = CJK_LINE_CHARS,
    label_every_cue: bool = True,
    speaker: str = "",
) -> list[Cue]:
    """Split one segment into cues with proportional times (before file-wide ordering).

    Args:
        segment: a transcript segment (times in s).
        label: prefix of each cue's first line, e.g. ``"Meeting: "`` ("" for none).
        max_lines, line_columns, cjk_line_chars: see the module constants.
        label_every_cue: False: ``label`` prefixes the first cue only (a speaker's name at
            the start of its run).
        speaker: ``Cue.speaker`` of every cue (a voice span's name; "" for none).

    Returns:
        Cues in order; their times may still collide with other sources' cues
        (``make_cues`` fixes that). ``[]`` for a blank segment.
    """
    text = " ".join(segment.text.split())
    if not text:
        return []
    max_lines = max(1, int(max_lines))
    columns = line_columns_for(text, line_columns=line_columns, cjk_line_chars=cjk_line_chars)
    label_width = display_width(label)

    atoms = _atoms(text)

    def wrap(width: int) -> list[str]:
        first = max(width // 2, width - label_width) if label else width
        return _fill(atoms, width, first, max_lines if label_every_cue else 0)

    # Balance: the narrowest width (down to half a line) that needs no more cues
    # than full-width lines do, so text spreads evenly instead of leaving a stub.
    lines = wrap(columns)
    if len(lines) > 1:  # text that fits one line stays on one line
        budget = -(-len(lines) // max_lines) * max_lines
        low, high = max(2, columns // 2), columns
        while low < high:
            mid = (low + high) // 2
            if len(wrap(mid)) <= budget:
                high = mid
            else:
                low = mid + 1
        lines = wrap(low)
    groups = [lines[i : i + max_lines] for i in range(0, len(lines), max_lines)]
    weights = [max(1, _visible_chars(group)) for group in groups]
    total = sum(weights)
    start_ms, end_ms = _ms(segment.start), _ms(segment.end)
    span = max(0, end_ms - start_ms)
    cues, done = [], 0
    for group, weight in zip(groups, weights):
        cue_start = start_ms + span * done // total
        done += weight
        cue_end = start_ms + span * done // total
        labelled = label and (label_every_cue or not cues)
        shown = (label + group[0],) + tuple(group[1:]) if labelled else tuple(group)
        cues.append(Cue(cue_start, cue_end, shown, segment.source, speaker, getattr(segment, "sound", "")))
    return cues


def make_cues(
    segments: Iterable[Segment],
    *,
    label_sources: bool | None = None,
    max_lines: int = MAX_LINES,
    line_columns: int = LINE_COLUMNS,
    cjk_line_chars: int = CJK_LINE_CHARS,
    min_duration: float = MIN_CUE_S,
    names: Mapping[str, str] | None = None,
    voices: bool = False,
) -> list[Cue]:
    """Cues of a whole transcript, ready for SRT/WebVTT.

    Args:
        segments: transcript segments (any order; blank ones are skipped).
        label_sources: prefix cues of unattributed segments with ``"<source>: "``;
            default: only when the segments come from more than one source.
        max_lines, line_columns, cjk_line_chars: see the module constants.
        min_duration: minimum display time (s), never extended past the next cue of
            the same source.
        names: ``{speaker id: name}`` (``Transcript.speaker_names``); a speaker without
            a name is shown by its id.
        voices: attributed segments carry their speaker's name in ``Cue.speaker`` on
            every cue instead of a ``"Name: "`` prefix at each change of speaker.

    Returns:
        Cues sorted by start with strictly increasing ``start_ms`` and
        ``end_ms > start_ms`` for every cue.
    """
    segs = sorted((s for s in segments if s.text.strip()), key=lambda s: s.start)
    if label_sources is None:
        label_sources = len({s.source for s in segs}) > 1
    names = names or {}
    raw: list[Cue] = []
    shown_last = None  # who the previous segment (time order) was shown as
    for seg in segs:
        every, speaker = True, ""
        if getattr(seg, "sound", ""):  # a sound caption: its source's label at most, and the speaker run goes on
            label = f"{seg.source}: " if label_sources and seg.source else ""
        elif seg.speaker:
            name = " ".join(str(names.get(seg.speaker) or seg.speaker).split())
            if voices:
                label, speaker = "", name
            else:
                label, every = (f"{name}: " if name != shown_last else ""), False
            shown_last = name
        else:
            label = f"{seg.source}: " if label_sources and seg.source else ""
            shown_last = seg.source
        raw.extend(
            segment_cues(seg, label=label, max_lines=max_lines, line_columns=line_columns,
                         cjk_line_chars=cjk_line_chars, label_every_cue=every, speaker=speaker)
        )
    raw.sort(key=lambda c: c.start_ms)  # stable: a segment's cues keep their order
    starts: list[int] = []
    previous = -1
    for cue in raw:
        previous = max(cue.start_ms, previous + 1)
        starts.append(previous)
    min_ms = max(1, _ms(min_duration))
    out: list[Cue | None] = [None] * len(raw)
    next_start: dict[tuple[str, bool], int] = {}
    for i in range(len(raw) - 1, -1, -1):
        cue, start = raw[i], starts[i]
        track = (cue.source, bool(cue.sound))  # speech and sounds of one source: two tracks
        end = max(cue.end_ms, start + min_ms)
        following = next_start.get(track)
        if following is not None:
            end = min(end, following)  # following > start: starts strictly increase
        end = max(end, start + 1)
        out[i] = Cue(start, end, cue.lines, cue.source, cue.speaker, cue.sound)
        next_start[track] = start
    return [cue for cue in out if cue is not None]


__all__ = [
    "CJK_LINE_CHARS",
    "Cue",
    "LINE_COLUMNS",
    "MAX_LINES",
    "MIN_CUE_S",
    "char_width",
    "display_width",
    "is_cjk_text",
    "line_columns_for",
    "make_cues",
    "segment_cues",
    "wrap_text",
]
