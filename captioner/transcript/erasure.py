"""Caption stability: how many words a reader saw that the captions then took back.

A reader of the live captions sees, per source, the committed (final) text followed by
the current partial tail (DESIGN section 4, "Caption stability"). Every re-decode of the
open line may rewrite that tail; a word that was on screen and that the next screen
removes or changes is an *erased* word. The measure of a run is

    erasure = erased words / final words

(0 = the text only ever grows). The default model's partial tail before issue 27 scored
1.77 as shown / 1.38 normalised on the first 2 minutes of the benchmark meeting at a quiet
machine's re-decode cadence (``bench/partial_policy.py``; the issue measured 1.2-1.4).

Screens follow the caption view's rules (:mod:`captioner.ui.caption_model`): a final
delta is appended verbatim to the source's committed text and clears its partial; a
partial delta replaces the partial tail ("" clears it). Events of one source less than
:data:`SCREEN_GAP_S` apart are one screen (a state shown for less than that is not read),
so a final and the partial that follows it in the same engine step count once.

Words are compared as shown (case and punctuation included: "weekly." -> "weekly
planning" changes a word the reader saw), except that a word which only gains punctuation
at its end ("meeting" -> "meeting.") stays; :func:`erasure` can also compare them
normalised (lower case, no punctuation), which counts only changed words.
:func:`first_shown` gives, per final word, when it first stood on screen for good.
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
    pending_t: float | None = None  # wall time of the newest event not yet part of a shown screen


def _words(text: str, normalise: bool) -> list[str]:
    words = text.split()
    return [_norm(w) for w in words] if normalise else words


def _common(a: list[str], b: list[str], start: int) -> int:
    n = min(len(a), len(b))
    i = start
    while i < n and a[i] == b[i]:
        i += 1
    return i


def screens(events: Iterable[tuple[float, Any]], gap_s: float = SCREEN_GAP_S, normalise: bool = False):
    """What a reader sees, screen by screen.

    Args:
        events: ``(wall time s, event)`` in arrival order. Events with ``text`` and
            ``final`` attributes (:class:`captioner.events.TextDelta`) count, the rest
            (turn boundaries, notices, ...) are skipped. ``event.source`` (default "")
            keeps sources apart.
        gap_s: events of one source less than this apart (s) form one screen.
        normalise: words lower-cased without punctuation (default: as shown).

    Yields:
        ``(source, wall time s, words, committed)`` per screen in order: the source's
        words on screen (committed text + partial tail) at the wall time of the screen's
        last event, and how many of the first words are committed text (the last of
        them may still grow: "meet" + "ing").
    """
    sources: dict[str, _Source] = {}

    def screen(name: str, s: _Source):
        words = s.committed_words
        if s.partial:
            if s.committed and not s.committed[-1].isspace() and not s.partial[0].isspace():
                # the tail continues the last committed word
                words = words[:-1] + _words(s.committed.rsplit(None, 1)[-1] + s.partial, normalise)
            else:
                words = words + _words(s.partial, normalise)
        return name, s.pending_t, words, len(s.committed_words)

    for t, ev in events:
        if not (hasattr(ev, "text") and hasattr(ev, "final")):
            continue
        name = getattr(ev, "source", "") or ""
        src = sources.setdefault(name, _Source())
        if src.pending_t is not None and t - src.pending_t >= gap_s:
            yield screen(name, src)
        if ev.final:
            src.committed += ev.text
            src.committed_words = _words(src.committed, normalise)
            src.partial = ""
        else:
            src.partial = ev.text
        src.pending_t = t
    for name, src in sources.items():
        if src.pending_t is not None:
            yield screen(name, src)  # the last state stays on screen


def erasure(events: Iterable[tuple[float, Any]], gap_s: float = SCREEN_GAP_S, normalise: bool = False) -> Erasure:
    """Erased words per final word of a stream of text events.

    Two consecutive screens of a source are compared word by word from the start: the
    words of the earlier one after the first difference are erased. A word that only
    gains punctuation at its end ("meeting" -> "meeting.") is not erased: the reader's
    word stays and the text only grows.

    Args:
        events, gap_s, normalise: see :func:`screens`.

    Returns:
        :class:`Erasure`; ``ratio`` is erased words per final word.
    """
    last: dict[str, tuple[list[str], int]] = {}
    result = Erasure()
    erased: dict[str, int] = {}
    for name, _, words, committed in screens(events, gap_s, normalise):
        result.screens += 1
        erased.setdefault(name, 0)
        if name in last:
            shown, stable = last[name]
            same = _common(shown, words, stable)
            while same < min(len(shown), len(words)) and _grows(shown[same], words[same]):
                same = _common(shown, words, same + 1)
            erased[name] += len(shown) - same
        # committed text only grows, but its last word may still grow ("meet" + "ing")
        last[name] = (words, max(0, committed - 1))
        result.per_source[name] = (erased[name], committed)
    for name, (e, final_words) in result.per_source.items():
        result.erased_words += e
        result.final_words += final_words
    return result


def _grows(old: str, new: str) -> bool:
    """``new`` is ``old`` with punctuation appended (the word the reader saw stays)."""
    return new.startswith(old) and len(new) > len(old) and not new[len(old):].strip(_PUNCT)


_PUNCT = ".,;:!?"


def first_shown(events: Iterable[tuple[float, Any]], gap_s: float = SCREEN_GAP_S) -> dict[str, list[float | None]]:
    """When each final word first stood on screen for good.

    Args:
        events, gap_s: see :func:`screens`; words are compared normalised (a word shown
            without the punctuation it gets later counts as shown).

    Returns:
        ``{source: [wall time s or None per final word]}``: per word of the source's
        final text (in order), the wall time of the first screen from which that word
        and every word before it stood as they finally read, unchanged until the end.
    """
    shown = list(screens(events, gap_s, normalise=True))
    final = {name: words for name, _, words, _ in shown}  # the last screen of each source
    since: dict[str, list[float | None]] = {name: [None] * len(words) for name, words in final.items()}
    standing: dict[str, int] = {name: 0 for name in final}
    for name, t, words, committed in shown:
        target, times = final[name], since[name]
        same = _common(words, target, max(0, committed - 1))  # committed words are final
        for i in range(same, standing[name]):
            times[i] = None
        for i in range(standing[name], same):
            times[i] = t
        standing[name] = same
    return since
