"""One session's state in the default model, and how a line's text follows the one before.

A :class:`LineState` travels in the session's :class:`~captioner.asr.base.StepRow` /
:class:`~captioner.asr.base.StepResult` (the backend keeps none of its own): the session's
line segmenter and VAD pass, its recent audio, the open line and its re-decodes
(:mod:`captioner.asr.moonshine.partials`), and what was shown. :func:`join_line` joins a
line's text, final or partial, to the session's previous final text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from captioner.asr.moonshine.agreement import MIN_GAP_S, LineAgreement, lower_first
from captioner.asr.moonshine.lines import MAX_LINE_S, LineSegmenter
from captioner.asr.moonshine.steady_tail import SteadyTail
from captioner.asr.vad_stream import SpeechWindows

#: Words at the end of a partial re-decode that LocalAgreement never commits (see
#: ``captioner.asr.moonshine.agreement.MIN_CLIP_S`` for what protects the last words instead).
HOLDBACK_WORDS = 0
#: Audio kept per session (s): the open line plus margin (bounded; never the session).
KEEP_S = MAX_LINE_S + 2.0

_PUNCT = ",.;:!?"
_DOUBLE_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")  # ".." but not "..."


def join_line(previous: str, text: str) -> str:
    """``text`` of a new line as it follows the final text ``previous`` of the same session.

    The model punctuates every line as a sentence. After a previous line that ended in
    punctuation, punctuation at the start of the new one is dropped (no ",," or "..": a
    line of noise read as "." disappears); where the previous line ended on a comma (a
    pause inside a sentence), a capital first letter is lowered ("belief, it was"; "I",
    "I'm", ... and acronyms stay).
    """
    text = _DOUBLE_STOP.sub(".", text.strip())
    prev = previous.rstrip()
    if not prev or not text:
        return text
    if prev[-1] in _PUNCT:
        text = text.lstrip(_PUNCT + " ")
    if prev.endswith(","):
        text = lower_first(text)
    return text


@dataclass
class LineState:
    """Per-session state: the line segmenter, recent audio, the open line, what was shown.

    Attributes:
        lines: this session's :class:`~captioner.asr.moonshine.lines.LineSegmenter`.
        speech: this session's one VAD pass (two tracks, see :mod:`captioner.asr.vad_stream`):
            track 0 cuts the lines, track 1 goes back to the session (``StepResult.speech``)
            for its turn detector.
        total: samples fed to the session since it started.
        ring: ``[<= KEEP_S * 16000] float32``: the latest audio (bounded).
        ring_start: session sample index of ``ring[0]``.
        open_line: ``(line number, start sample)`` of the open line, or None.
        agreement: LocalAgreement state of the open line.
        partial: the partial text shown last ("" = none).
        tail: what of the open line's re-decodes to show (:class:`SteadyTail`).
        committed_end: session time (s) where the last final text ended.
        last_final: the last final text emitted ("" before the first).
        key: identity of the session for the budget and the partial worker.
        tokens: token ids of the open line's latest re-decode: the draft of its next re-decode
            and of its final reading (:meth:`~captioner.asr.moonshine.model.MoonshineModel.decode`). A new list for each
            line: a re-decode of the old line that is still running writes into the old one.
    """

    lines: LineSegmenter
    speech: SpeechWindows
    total: int = 0
    ring: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    ring_start: int = 0
    open_line: tuple | None = None
    agreement: LineAgreement = field(default_factory=lambda: LineAgreement(holdback=HOLDBACK_WORDS, min_gap_s=MIN_GAP_S))
    partial: str = ""
    tail: SteadyTail = field(default_factory=SteadyTail)
    committed_end: float = 0.0
    last_final: str = ""
    tokens: list = field(default_factory=list)
    key: object = field(default_factory=object)

