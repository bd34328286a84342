"""Caption stability: how many words a reader saw that the captions then took back.

A reader of the live captions sees, per source, the committed (final) text followed by
the current partial tail (DESIGN section 4, "Caption stability"). Every re-decode of the
open line may rewrite that tail; a word that was on screen and that the next screen
removes or changes is an *erased* word. The measure of a run is

    erasure = erased words / final words

(0 = the text only ever grows; the default model's partials before issue 27 scored
1.2-1.4 on the 2-minute meeting).

Screens follow the caption view's rules (:mod:`captioner.ui.caption_model`): a final
delta is appended verbatim to the source's committed text and clears its partial; a
partial delta replaces the partial tail ("" clears it). Events of one source less than
:data:`SCREEN_GAP_S` apart are one screen (a state shown for less than that is not read),
so a final and the partial that follows it in the same engine step count once.

Words are compared as shown (case and punctuation included: "weekly." -> "weekly
planning" changes a word the reader saw); :func:`erasure` can also compare them
normalised (lower case, no punctuation), which counts only changed words.
Two consecutive screens are compared word by word from the start: the words of the
earlier screen after the first difference are erased (a change in the middle of the
tail moves everything after it).

Pure Python, no Qt and no captioner imports: ``bench/latency.py`` loads this file by path
so that it measures the code of another revision with the same rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

#: Events of one source closer together than this (s of wall time) are one screen.
SCREEN_GAP_S = 0.05

_NORM = re.compile(r"[^\w']+", re.UNICODE)


def _norm(word: str) -> str:
    return _NORM.sub("", word.lower())


@dataclass
class Erasure:
    """Result of :func:`erasure`.

    Attributes:
        erased_words: words shown and then taken back or changed by the next screen.
        final_words: words of the final text (all sources).
        screens: screens compared (per source, after merging events < gap apart).
        per_source: ``{source: (erased words, final words)}``.
    """

    erased_words: int = 0
    final_words: int = 0
    screens: int = 0
    per_source: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """Erased words per final word (None without final words)."""
        return self.erased_words / self.final_words if self.final_words else None


@dataclass
class _Source:
    committed: str = ""
    committed_words: list[str] = field(default_factory=list)  # committed.split(), as compared
    partial: str = ""
    stable: int = 0  # words of the shown screen that no later screen can change
    shown: list[str] | None = None  # words of the last screen (None before the first)
    pending_t: float | None = None  # wall time of the newest event not yet part of a shown screen
    erased: int = 0
    screens: int = 0


def _words(text: str, normalise: bool) -> list[str]:
    words = text.split()
    return [_norm(w) for w in words] if normalise else words


def _common(a: list[str], b: list[str], start: int) -> int:
    n = min(len(a), len(b))
    i = start
    while i < n and a[i] == b[i]:
        i += 1
    return i


def erasure(events: Iterable[tuple[float, Any]], gap_s: float = SCREEN_GAP_S, normalise: bool = False) -> Erasure:
    """Erased words per final word of a stream of text events.

    Args:
        events: ``(wall time s, event)`` in arrival order. Events with ``text`` and
            ``final`` attributes (:class:`captioner.events.TextDelta`) count, the rest
            (turn boundaries, notices, ...) are skipped. ``event.source`` (default "")
            keeps sources apart.
        gap_s: events of one source less than this apart (s) form one screen.
        normalise: compare words lower-cased without punctuation (default: as shown).

    Returns:
        :class:`Erasure`; ``ratio`` is erased words per final word.
    """
    sources: dict[str, _Source] = {}

    def show(s: _Source) -> None:
        """The source's current state becomes a screen the reader saw."""
        words = s.committed_words
        if s.partial:
            if s.committed and not s.committed[-1].isspace() and not s.partial[0].isspace():
                # the tail continues the last committed word
                words = words[:-1] + _words(s.committed.rsplit(None, 1)[-1] + s.partial, normalise)
            else:
                words = words + _words(s.partial, normalise)
        if s.shown is not None:
            same = _common(s.shown, words, s.stable)
            s.erased += len(s.shown) - same
        s.shown = words
        s.screens += 1
        # committed text only grows, but its last word may still grow ("meet" + "ing")
        s.stable = max(0, len(s.committed_words) - 1)

    for t, ev in events:
        if not (hasattr(ev, "text") and hasattr(ev, "final")):
            continue
        src = sources.setdefault(getattr(ev, "source", "") or "", _Source())
        if src.pending_t is not None and t - src.pending_t >= gap_s:
            show(src)
        if ev.final:
            src.committed += ev.text
            src.committed_words = _words(src.committed, normalise)
            src.partial = ""
        else:
            src.partial = ev.text
        src.pending_t = t
    result = Erasure()
    for name, src in sources.items():
        if src.pending_t is not None:
            show(src)  # the last state stays on screen
        final_words = len(src.committed.split())
        result.erased_words += src.erased
        result.final_words += final_words
        result.screens += src.screens
        result.per_source[name] = (src.erased, final_words)
    return result
