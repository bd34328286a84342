"""The transcript: final text grouped into segments (:mod:`captioner.transcript.segment`) per source, plus the live partial tail.

``Transcript.add(event)`` consumes the events of ``captioner.events``:

- a *final* ``TextDelta`` is appended verbatim to the open segment of its source
  (token models carry their own leading spaces; line models send one line per
  delta followed by a ``TurnBoundary``). Final text never changes afterwards.
- a *partial* ``TextDelta`` replaces the partial tail of its source (an empty text
  clears it). Partials are never part of a segment.
- a ``TurnBoundary`` closes the open segment of its source (``turn_end=True``).
- a ``SpeakerRename`` names a speaker (issue 38): every segment of that speaker id,
  past and future, is shown and saved under the name (``display_label``).
- a ``SpeakerFix`` (issue 51: the speakers' second pass corrected a label) gives every
  segment of its source that lies at least half inside its time span its speaker.
- a ``SoundEvent`` (issue 49: a sound that is not speech started, "[music]") is a closed
  segment of its own (``sound`` set, ``boundary="sound"``, text ``"[music]"``): it never
  joins, splits or closes a speech segment, never gets a speaker, and does not move its
  source's clock (speech decoded later may start before it).
- any other event is ignored.

Speakers (issue 38): a final delta's ``speaker`` is a stable id ("Speaker 1", ...; ""
when not attributed). A final delta whose non-empty speaker differs from the open
segment's closes that segment (``boundary="speaker"``, not a turn end) and opens a new
one, so a segment, a transcript line and a subtitle cue never hold two voices. A delta
without a speaker joins the open segment whatever its speaker. Names live in the
transcript, not in the segments: a rename applies to everything already said.

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
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from captioner.events import Event, SoundEvent, SpeakerFix, TextDelta, TurnBoundary
from captioner.transcript.segment import BOUNDARY_LENGTH, BOUNDARY_SENTENCE, BOUNDARY_SOUND, BOUNDARY_SPEAKER, Segment

#: Close an open segment once it spans more than this many stream seconds.
MAX_SEGMENT_S = 20.0
#: Close an open segment at sentence punctuation once it holds this many characters.
SENTENCE_CHARS = 160
#: Characters that end a sentence (Latin and CJK full-width forms).
SENTENCE_END = ".!?…。！？"

#: Longest speaker name kept (characters); longer names are cut.
MAX_NAME_CHARS = 60


def clean_name(name: object) -> str:
    """A speaker name fit for one subtitle line: whitespace runs (newlines, tabs) become one
    space, control characters are dropped, ends are stripped, at most ``MAX_NAME_CHARS``."""
    text = "".join(ch for ch in str(name or "") if ch.isprintable() or ch.isspace())
    return " ".join(text.split())[:MAX_NAME_CHARS].strip()


@dataclass(frozen=True)
class SpeakerRename:
    """The user named a speaker (double-click in the pane, Settings): a transcript event.

    Fed to ``Transcript.add`` (and so to the journal by ``LiveTranscript.add``, which
    records it, so ``recover`` rebuilds the same names).

    Attributes:
        speaker: the speaker id, ``TextDelta.speaker`` ("Speaker 2").
        name: the new name; ``""`` goes back to showing the id.
    """

    speaker: str
    name: str = ""


@dataclass
class _Open:
    start: float
    end: float
    parts: list[str] = field(default_factory=list)
    speaker: str = ""

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
        self._speakers: list[str] = []  # speaker ids in order of first final text
        self._names: dict[str, str] = {}  # speaker id -> the name the user gave it
        self._sound_end = 0.0  # latest end (s) of a sound caption

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
            split only marks that segment ``turn_end`` in ``segments``. For a
            ``SpeakerFix``: the closed segments it relabelled (same source, start and
            text as before, so a view updates their lines).
        """
        if isinstance(event, TextDelta):
            return self._add_text(event)
        if isinstance(event, SpeakerFix):
            return self._fix_speaker(event)
        if isinstance(event, TurnBoundary):
            return self._add_turn(event)
        if isinstance(event, SpeakerRename):
            self.rename_speaker(event.speaker, event.name)
        if isinstance(event, SoundEvent):
            return self._add_sound(event)
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
        speaker = delta.speaker if isinstance(delta.speaker, str) else ""
        if speaker and speaker not in self._speakers:
            self._speakers.append(speaker)
        closed: list[Segment] = []
        seg = self._open.get(source)
        if seg is not None and speaker and speaker != seg.speaker:  # another voice: never one segment
            closed.append(self._close(source, turn_end=False, boundary=BOUNDARY_SPEAKER))
            seg = None
        if seg is None:
            seg = self._open[source] = _Open(start=start, end=end, speaker=speaker)
        seg.parts.append(text)
        seg.end = max(seg.end, end)
        if seg.end - seg.start > self.max_segment_s:
            return closed + [self._close(source, turn_end=False, boundary=BOUNDARY_LENGTH)]
        body = seg.text().strip()
        if len(body) >= self.sentence_chars and body[-1] in SENTENCE_END:
            return closed + [self._close(source, turn_end=False, boundary=BOUNDARY_SENTENCE)]
        return closed

    def _add_sound(self, sound: SoundEvent) -> list[Segment]:
        """A sound caption: its own closed segment, in time order (the source's clock, its open
        segment and its last closed speech segment stay as they were)."""
        label = " ".join(str(sound.label or "").split()) if isinstance(sound.label, str) else ""
        label = label.strip("[]").strip()
        if not label:
            return []
        source = sound.source if isinstance(sound.source, str) else ""
        self._note_source(source)
        start = max(_finite(sound.start, 0.0), 0.0)
        end = max(_finite(sound.end, start), start)
        self._sound_end = max(self._sound_end, end)
        seg = Segment(source, start, end, f"[{label}]", False, BOUNDARY_SOUND, "", label)
        key = (seg.start, self._count)
        index = bisect.bisect_right(self._keys, key)
        self._keys.insert(index, key)
        self._closed.insert(index, seg)
        self._count += 1
        return [seg]

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
                        seg.source, seg.start, seg.end, seg.text, True, turn.kind or "turn", seg.speaker
                    )
                break
        return []

    def _close(self, source: str, *, turn_end: bool, boundary: str) -> Segment:
        seg = self._open.pop(source)
        closed = Segment(source, seg.start, seg.end, seg.text(), turn_end, boundary, seg.speaker)
        key = (closed.start, self._count)
        index = bisect.bisect_right(self._keys, key)
        self._keys.insert(index, key)
        self._closed.insert(index, closed)
        self._last_closed[source] = self._count
        self._count += 1
        return closed

    def _fix_speaker(self, fix: SpeakerFix) -> list[Segment]:
        if not isinstance(fix.speaker, str) or not fix.speaker:
            return []

        def inside(start: float, end: float) -> bool:
            overlap = min(end, fix.end) - max(start, fix.start)
            return overlap >= 0.5 * (end - start) if end > start else fix.start <= start <= fix.end

        changed: list[Segment] = []
        hi = bisect.bisect_right(self._keys, (fix.end, self._count))
        for i in range(hi - 1, -1, -1):
            seg = self._closed[i]
            # sorted by start, and a segment spans at most max_segment_s (plus its last delta):
            # nothing that starts this much earlier reaches the fix
            if seg.start < fix.start - 2 * self.max_segment_s:
                break
            if seg.source == fix.source and seg.speaker != fix.speaker and not seg.sound \
                    and inside(seg.start, seg.end):
                self._closed[i] = replace(seg, speaker=fix.speaker)
                changed.append(self._closed[i])
        seg = self._open.get(fix.source)
        open_fixed = seg is not None and seg.speaker != fix.speaker and inside(seg.start, seg.end)
        if open_fixed:
            seg.speaker = fix.speaker
        if (changed or open_fixed) and fix.speaker not in self._speakers:
            self._speakers.append(fix.speaker)
        return changed[::-1]

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
            items.append(Segment(source, seg.start, seg.end, seg.text(), speaker=seg.speaker))
        items.sort(key=lambda s: s.start)  # stable: closed keep their order on ties
        return [s for s in items if s.text.strip()]

    # --------------------------------------------------------------- speakers
    @property
    def speakers(self) -> list[str]:
        """Speaker ids in the order their first final text arrived (unattributed text: none)."""
        return list(self._speakers)

    @property
    def speaker_names(self) -> dict[str, str]:
        """``{speaker id: name}`` of the speakers the user named (a copy)."""
        return dict(self._names)

    def rename_speaker(self, speaker_id: str, name: str) -> str:
        """Name speaker ``speaker_id``: its past and future segments show (and save) ``name``.

        Args:
            speaker_id: a ``TextDelta.speaker`` id ("Speaker 2"); it need not have spoken yet.
            name: the new name, cleaned by ``clean_name`` (one line, at most
                ``MAX_NAME_CHARS``); ``""`` (or only spaces) goes back to the id.

        Returns:
            The name now shown for the speaker (the id when the name was cleared). An empty
            ``speaker_id`` changes nothing and returns ``""``.
        """
        if not isinstance(speaker_id, str) or not speaker_id:
            return ""
        cleaned = clean_name(name)
        if cleaned and cleaned != speaker_id:
            self._names[speaker_id] = cleaned
        else:
            self._names.pop(speaker_id, None)
        return self.speaker_name(speaker_id)

    def speaker_name(self, speaker_id: str) -> str:
        """The name shown for ``speaker_id``: the user's name for it, else the id ("" for "")."""
        return self._names.get(speaker_id, speaker_id) if speaker_id else ""

    def display_label(self, segment: Segment) -> str:
        """Who said ``segment``, as shown: the speaker's name, else its id, else the source label."""
        return self.speaker_name(segment.speaker) or segment.source

    def final_text(self, source: str) -> str:
        """Every final delta of ``source`` concatenated verbatim, in arrival order (sound captions
        are not part of it)."""
        parts = [s.text for s in self._closed if s.source == source and not s.sound]
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
        """Latest end time (s) of any final segment (a sound caption's too), 0.0 when empty."""
        return max(max(self._clock.values(), default=0.0), self._sound_end)

    def __len__(self) -> int:
        return len(self.segments)


__all__ = [
    "MAX_NAME_CHARS",
    "MAX_SEGMENT_S",
    "SENTENCE_CHARS",
    "SENTENCE_END",
    "SpeakerRename",
    "Transcript",
    "clean_name",
]
