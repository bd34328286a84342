"""The transcript: final text grouped into segments per source, plus the live partial tail.

``Transcript.add(event)`` consumes the events of ``captioner.events``:

- a *final* ``TextDelta`` is appended verbatim to the open segment of its source
  (token models carry their own leading spaces; line models send one line per
  delta followed by a ``TurnBoundary``). Final text never changes afterwards.
- a *partial* ``TextDelta`` replaces the partial tail of its source (an empty text
  clears it). Partials are never part of a segment.
- a ``TurnBoundary`` closes the open segment of its source (``turn_end=True``).
- any other event is ignored.

A segment is normally one whole turn (the main window shows one entry per turn;
a turn may hold several lines of a line model and several sentences). So that 24/7
captioning of one endless turn still yields segments, an open segment also closes
when it spans more than ``max_segment_s`` seconds of stream time, or when it ends a
sentence (``.!?。！？…``) and holds at least ``sentence_chars`` characters. 20 s /
160 characters keep a segment to a few subtitle cues (a cue is at most 2 x 42
characters, the Netflix/BBC Latin-script limit; see ``cues.py``) while an ordinary
turn of one to three sentences stays whole. Cues never span two turns: a
``TurnBoundary`` always closes the segment.

Times are stream seconds (0 = session start, never wall-clock). Per source they are
kept monotonic: an event that starts before the previous final of its source is
clamped to that time, so segments of one source never overlap or go backwards.
Segments of different sources interleave by start time.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from captioner.events import Event, TextDelta, TurnBoundary

#: Close an open segment once it spans more than this many stream seconds.
MAX_SEGMENT_S = 20.0
#: Close an open segment at sentence punctuation once it holds this many characters.
SENTENCE_CHARS = 160
#: Characters that end a sentence (Latin and CJK full-width forms).
SENTENCE_END = ".!?…。！？"

#: ``Segment.boundary`` values besides the ``TurnBoundary.kind`` strings.
BOUNDARY_OPEN = ""
BOUNDARY_LENGTH = "length"
BOUNDARY_SENTENCE = "sentence"


@dataclass(frozen=True)
class Segment:
    """A run of final text of one source.

    Attributes:
        source: session label ("You", "Meeting", a file name).
        start: stream time (s) of the first final delta in the segment.
        end: stream time (s) of the last final delta; ``end >= start``.
        text: the final deltas concatenated verbatim (may start with a space, as
            token models emit leading spaces; writers strip it).
        turn_end: True when a ``TurnBoundary`` closed the segment.
        boundary: why it closed: a ``TurnBoundary.kind`` ("semantic", "silence",
            "semantic_vad", "end_of_stream"), ``"length"`` / ``"sentence"`` (split of a long turn),
            or ``""`` while the segment is still open.
    """

    source: str
    start: float
    end: float
    text: str
    turn_end: bool = False
    boundary: str = BOUNDARY_OPEN

    @property
    def is_open(self) -> bool:
        """True while more final text of the same turn may still be appended."""
        return self.boundary == BOUNDARY_OPEN

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: source, start, end (s), text (without the leading/trailing space a
        model may emit between deltas, so the same speech gives the same JSON), turn_end, boundary."""
        return {
            "source": self.source,
            "start": self.start,
            "end": self.end,
            "text": self.text.strip(),
            "turn_end": self.turn_end,
            "boundary": self.boundary,
        }


@dataclass
class _Open:
    start: float
    end: float
    parts: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(self.parts)


def _finite(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


class Transcript:
    """Builder and store of a session's final segments and live partials.

    Not thread-safe: feed it from one thread (the UI thread, or the engine thread
    with the UI reading snapshots through signals).

    Args:
        metadata: free-form JSON-ready facts for the writers (``created`` wall-clock
            ISO time of the session start, ``backend`` description, ...). Cue times
            never use them.
        max_segment_s: see ``MAX_SEGMENT_S``.
        sentence_chars: see ``SENTENCE_CHARS``.
    """

    def __init__(
        self,
        metadata: dict[str, Any] | None = None,
        *,
        max_segment_s: float = MAX_SEGMENT_S,
        sentence_chars: int = SENTENCE_CHARS,
    ) -> None:
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.max_segment_s = float(max_segment_s)
        self.sentence_chars = int(sentence_chars)
        self._closed: list[Segment] = []  # kept sorted by (start, insertion order)
        self._keys: list[tuple[float, int]] = []
        self._count = 0
        self._open: dict[str, _Open] = {}
        self._last_closed: dict[str, int] = {}  # source -> insertion number of its last closed segment
        self._clock: dict[str, float] = {}  # source -> latest stream time seen (monotonic)
        self._partials: dict[str, str] = {}
        #: every TurnBoundary received, in arrival order (time, kind, probability, source)
        self.turns: list[TurnBoundary] = []
        self._sources: list[str] = []

    # ------------------------------------------------------------------ input
    def add(self, event: Event) -> list[Segment]:
        """Consume one event.

        Args:
            event: any ``captioner.events`` event; only ``TextDelta`` and
                ``TurnBoundary`` change the transcript.

        Returns:
            The segments this event closed (usually empty; one when a turn ends or
            a long segment is split), for callers that render closed segments. Each
            segment is returned once: a turn that ends right after a length/sentence
            split only marks that segment ``turn_end`` in ``segments``.
        """
        if isinstance(event, TextDelta):
            return self._add_text(event)
        if isinstance(event, TurnBoundary):
            return self._add_turn(event)
        return []

    def extend(self, events: Iterable[Event]) -> list[Segment]:
        """``add`` every event in order; returns all segments they closed."""
        closed: list[Segment] = []
        for event in events:
            closed.extend(self.add(event))
        return closed

    def _note_source(self, source: str) -> None:
        if source not in self._clock:
            self._clock[source] = 0.0
            self._sources.append(source)

    def _add_text(self, delta: TextDelta) -> list[Segment]:
        source = delta.source
        text = delta.text if isinstance(delta.text, str) else str(delta.text)
        if not delta.final:
            if text:
                self._partials[source] = text
            else:
                self._partials.pop(source, None)
            return []
        if not text:
            return []
        self._note_source(source)
        clock = self._clock[source]
        start = max(_finite(delta.start, clock), clock)
        end = max(_finite(delta.end, start), start)
        self._clock[source] = end
        seg = self._open.get(source)
        if seg is None:
            seg = self._open[source] = _Open(start=start, end=end)
        seg.parts.append(text)
        seg.end = max(seg.end, end)
        if seg.end - seg.start > self.max_segment_s:
            return [self._close(source, turn_end=False, boundary=BOUNDARY_LENGTH)]
        body = seg.text().strip()
        if len(body) >= self.sentence_chars and body[-1] in SENTENCE_END:
            return [self._close(source, turn_end=False, boundary=BOUNDARY_SENTENCE)]
        return []

    def _add_turn(self, turn: TurnBoundary) -> list[Segment]:
        source = turn.source
        self.turns.append(turn)
        if turn.kind == "end_of_stream":
            self._partials.pop(source, None)
        if source in self._open:
            return [self._close(source, turn_end=True, boundary=turn.kind or "turn")]
        # The turn ended right after a length/sentence split: mark that segment.
        number = self._last_closed.get(source)
        if number is None:
            return []
        for i in range(len(self._closed) - 1, -1, -1):  # it is nearly always the last: O(1), not O(segments)
            seg = self._closed[i]
            if self._keys[i][1] == number:
                if not seg.turn_end:  # update in place: it was already returned once
                    self._closed[i] = Segment(
                        seg.source, seg.start, seg.end, seg.text, True, turn.kind or "turn"
                    )
                break
        return []

    def _close(self, source: str, *, turn_end: bool, boundary: str) -> Segment:
        seg = self._open.pop(source)
        closed = Segment(source, seg.start, seg.end, seg.text(), turn_end, boundary)
        key = (closed.start, self._count)
        index = bisect.bisect_right(self._keys, key)
        self._keys.insert(index, key)
        self._closed.insert(index, closed)
        self._last_closed[source] = self._count
        self._count += 1
        return closed

    def close_all(self, kind: str = "end_of_stream") -> list[Segment]:
        """Close every open segment as a turn end of ``kind`` and clear partials."""
        closed = [self._close(s, turn_end=True, boundary=kind) for s in list(self._open)]
        self._partials.clear()
        return closed

    # ----------------------------------------------------------------- output
    @property
    def sources(self) -> list[str]:
        """Source labels in the order their first final text arrived."""
        return list(self._sources)

    @property
    def segments(self) -> list[Segment]:
        """Closed and open segments with visible text, sorted by start time.

        Open segments (``is_open``) are snapshots; their text may still grow.
        Whitespace-only segments are left out (they still count in ``final_text``).
        """
        items = list(self._closed)
        for source, seg in self._open.items():
            items.append(Segment(source, seg.start, seg.end, seg.text()))
        items.sort(key=lambda s: s.start)  # stable: closed keep their order on ties
        return [s for s in items if s.text.strip()]

    def final_text(self, source: str) -> str:
        """Every final delta of ``source`` concatenated verbatim, in arrival order."""
        parts = [s.text for s in self._closed if s.source == source]
        if source in self._open:
            parts.append(self._open[source].text())
        return "".join(parts)

    def text(self) -> str:
        """Plain text: one line per segment (stripped), in time order, no labels."""
        return "\n".join(s.text.strip() for s in self.segments)

    def partial(self, source: str) -> str:
        """Current unstable tail of ``source`` ("" when none); never part of a segment."""
        return self._partials.get(source, "")

    @property
    def duration(self) -> float:
        """Latest end time (s) of any final segment, 0.0 when empty."""
        return max(self._clock.values(), default=0.0)

    def __len__(self) -> int:
        return len(self.segments)


__all__ = [
    "BOUNDARY_LENGTH",
    "BOUNDARY_OPEN",
    "BOUNDARY_SENTENCE",
    "MAX_SEGMENT_S",
    "SENTENCE_CHARS",
    "SENTENCE_END",
    "Segment",
    "Transcript",
]
