"""A segment of a transcript: a run of final text of one source, and its JSON form.

:class:`captioner.transcript.model.Transcript` builds segments from the final text deltas
(that module says when a segment opens and closes: normally one whole turn); the main window
shows one entry per segment, and the writers (:mod:`captioner.transcript.cues`,
:mod:`captioner.transcript.writers`) turn them into lines, cues and JSON
(:meth:`Segment.to_dict`). A segment is frozen: the transcript replaces a closed one (a late
turn end, a speaker correction), never edits it. Its ``boundary`` says why it closed: a
``TurnBoundary.kind`` or one of the ``BOUNDARY_*`` values below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: ``Segment.boundary`` values besides the ``TurnBoundary.kind`` strings.
BOUNDARY_OPEN = ""
BOUNDARY_LENGTH = "length"
BOUNDARY_SENTENCE = "sentence"
BOUNDARY_SPEAKER = "speaker"
#: ``Segment.boundary`` of a sound caption's segment (issue 49).
BOUNDARY_SOUND = "sound"


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
            ``"speaker"`` (the next words are another voice's), or ``""`` while the segment is
            still open.
        speaker: the speaker id of its text ("Speaker 1"; ``""``: not attributed). Its
            display name is the transcript's (``Transcript.display_label``).
        sound: for a sound caption (issue 49), the sound's word ("music", "phone ringing"),
            the ``text`` being its bracketed caption ``"[music]"``; ``""`` for speech.
    """

    source: str
    start: float
    end: float
    text: str
    turn_end: bool = False
    boundary: str = BOUNDARY_OPEN
    speaker: str = ""
    sound: str = ""

    @property
    def is_open(self) -> bool:
        """True while more final text of the same turn may still be appended."""
        return self.boundary == BOUNDARY_OPEN

    def to_dict(self, label: str | None = None) -> dict[str, Any]:
        """JSON-ready dict: source, start, end (s), text (without the leading/trailing space a
        model may emit between deltas, so the same speech gives the same JSON), turn_end, boundary.

        Args:
            label: the display label of the speaker (``Transcript.display_label``). When
                given, or when the segment has a speaker, the dict also holds ``"speaker"``
                (``label``, else the id) and ``"speaker_id"`` (the id, ``""`` when not
                attributed) after ``"source"``; an unattributed segment without ``label``
                gives exactly the keys above.

        A sound caption's dict also holds ``"sound"`` (the word, ``"music"``) after ``"text"``
        (``"[music]"``), and never a speaker.
        """
        out: dict[str, Any] = {"source": self.source}
        if self.sound:
            out.update(start=self.start, end=self.end, text=self.text.strip(), sound=self.sound,
                       turn_end=self.turn_end, boundary=self.boundary)
            return out
        if label is not None or self.speaker:
            out["speaker"] = label if label is not None else self.speaker
            out["speaker_id"] = self.speaker
        out.update(
            start=self.start,
            end=self.end,
            text=self.text.strip(),
            turn_end=self.turn_end,
            boundary=self.boundary,
        )
        return out


__all__ = [
    "BOUNDARY_LENGTH",
    "BOUNDARY_OPEN",
    "BOUNDARY_SENTENCE",
    "BOUNDARY_SOUND",
    "BOUNDARY_SPEAKER",
    "Segment",
]
