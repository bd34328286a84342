"""A steady partial tail: show only the words of a re-decode that are unlikely to change.

A backend that re-decodes the whole open line (Moonshine) gets a fresh hypothesis every
few hundred ms. Shown as it comes, the partial tail flickers: the last word is usually cut
by the end of the clip ("planning meet") and the model closes every clip as a sentence
("... the weekly."), so each re-decode rewrites the tail's last word or two (1.2-1.4
erased words per final word on the 2-minute meeting, ``captioner/transcript/erasure.py``).

:class:`SteadyTail` decides how much of a hypothesis' tail (the words after the committed
text) to show, the usual remedy of streaming ASR (DESIGN section 4, "Caption stability"):

* a word is shown once two re-decodes at least ``min_gap_s`` (0.5 s) of audio apart agree
  on it and on every word before it (compared case- and punctuation-insensitively, as
  LocalAgreement does): the newest one and the newest earlier one of a clip that much
  shorter (:meth:`SteadyTail.remember`);
* a word on screen stays while the newest re-decode, or that earlier one, still reads it
  (and every word before it) the same: one re-decode that reads it differently is
  outvoted; a word still on screen keeps its spelling;
* the tail's words are shown without a pause mark at their end (commas come and go between
  re-decodes; the final text has them), and without the hypothesis' closing punctuation
  (the end of the clip read as the end of a sentence): :func:`without_closing_punctuation`;
* a word whose audio is older than ``age_s`` (estimated from its character position, the
  model gives no word times) is shown even without agreement: on a busy machine
  re-decodes are shed and come seconds apart, and waiting for two of them would hold the
  tail back by as much.

Replayed on the 20-minute meeting's recorded re-decodes (``bench/partial_policy.py``,
``bench/results/partial_policy_20min_gap.json``, 2 Dec 2026), at the recorded cadence (a
re-decode every ~0.3 s) and with only every 4th of them (as on a loaded machine, where
partials are shed): erasure 1.83 -> 0.22 erased words per final word (0.49 -> 0.06 with
every 4th). The shown text lags the speech more (partial p50 0.22 -> 1.20 s, p95 0.46 ->
1.87 s: the end of the words shown rather than of the decoded clip), but a word *stands*
on screen (as it finally reads) only ~0.55 s later (p50 0.64 -> 1.19 s; p95 2.82 -> 2.88
s): the words shown earlier before were mostly the ones taken back.

Which two re-decodes must agree (``min_gap_s``; age bound 1.2 s; erasure, word stands p50):
0 (the previous one, the first steady tail) 0.30, 0.94 s -- **0.5 s 0.22, 1.19 s** -- 0.7 s
0.20, 1.39 s -- 1.0 s 0.19, 1.48 s. Live, the previous-one rule measured 0.33-0.36 on the
20-minute meeting (issue 27's target is 0.3): two re-decodes in a row share all but ~0.3 s
of their audio and agree on the same misreading ("parlor-teller" for "partner"), which
the line's final text rewrites. The age bound trades erasure for partial delay; ``age_s``
with a 0.5 s gap (full cadence: erasure, partial p95): None 0.14, 2.20 s -- 1.5 s 0.19,
2.04 s -- **1.2 s 0.22, 1.87 s** -- 1.0 s 0.27, 1.74 s -- 0.5 s 0.45, 1.31 s. No policy here
reaches a partial p95 <= 0.5 s with erasure <= 0.3: a word shown on agreement is at least
one re-decode plus one decode old when it appears, and one shown by age at least
``age_s``; only showing each re-decode's newest words as they read gets there, and those
are the words that change. Also tried with the previous-one rule (not kept): showing all
but the last word of a re-decode that extends the previous one (0.28, partial p50 0.72 s but
p95 2.03 s), counting the previous re-decode's cut last word ("meet") as agreeing with its
completion ("meeting") (0.28, p50 0.78 s, p95 1.98 s), and showing a not yet agreed word
(not the last) whose lowest token log-probability is >= -0.05 (0.36, p95 1.71 s: a word the
model is sure of in one re-decode is still rewritten by the next one a quarter of the time).

Only what is *shown* changes: LocalAgreement (:mod:`captioner.asr.moonshine.agreement`) still decides
what becomes final, from the full hypotheses, so the final text is the same.

No Qt, no model: plain strings in, plain strings out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from captioner.asr.moonshine.agreement import norm_word

#: Audio older than this (s before the end of the decoded clip, by the word's estimated end)
#: is shown even when two re-decodes do not agree on it yet; None: never (see the module
#: docstring for the replayed trade-off). 1.2 s until the 8-bit decoder (issue 40) made the
#: re-decodes ~20 % cheaper and fresher: live erasure on the 20-minute meeting then measured
#: 0.31 and 0.31 (0.27 before), so 1.4 s (``bench/results/latency_20min_int8_age14.json``).
AGE_S: float | None = 1.4
#: The two re-decodes whose agreement shows a word are at least this far apart (s of decoded
#: line): the later one has heard this much more speech after the word. Two re-decodes in a
#: row (~0.3 s apart on a quiet machine) share most of their audio and agree on the same
#: misreading ("parlor-teller is moved" for "partner is moved"), which the line's final text
#: then rewrites. See the module docstring for the replayed trade-off.
MIN_GAP_S = 0.5
#: Punctuation left out at the end of every word of the tail (sentence ends stay).
PAUSE = ",;:"
#: Punctuation a hypothesis may end on that the partial tail leaves out.
CLOSING = ".?!,;:"


def without_closing_punctuation(text: str) -> str:
    """``text`` without the punctuation at its very end ("the weekly." -> "the weekly");
    an ellipsis and punctuation inside the text stay."""
    stripped = text.rstrip()
    if stripped.endswith("..."):
        return stripped
    return stripped.rstrip(CLOSING).rstrip() if stripped.rstrip(CLOSING) else stripped


def _shown(word: str) -> str:
    """A tail word as shown: without a pause mark at its end ("Monday," -> "Monday"); the
    re-decodes disagree on commas far more often than on words, and the final text has them."""
    return word.rstrip(PAUSE) or word


def _prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i] and a[i]:
        i += 1
    return i


@dataclass
class SteadyTail:
    """What of an open line's partial tail to show; one per open line.

    Attributes:
        age_s: words whose estimated end is at least this far (s) before the end of the
            decoded audio are shown without agreement; None: never.
        min_gap_s: the re-decodes compared are at least this far apart (s of line);
            0: the previous one.
        words: the tail on screen (after the committed text), as shown.
        history: ``(clip s, words)`` of the line's re-decodes that may still be compared
            with (bounded by :meth:`remember`).
    """

    age_s: float | None = AGE_S
    min_gap_s: float = MIN_GAP_S
    words: list[str] = field(default_factory=list)
    history: list[tuple[float, list[str]]] = field(default_factory=list)

    def reset(self) -> None:
        """Forget the line (a new line starts, or its final text replaced the tail)."""
        self.words = []
        self.history = []

    def remember(self, clip_s: float, words: list[str]) -> list[str]:
        """Record the newest re-decode of the open line and return the one to compare it
        with: the newest earlier re-decode whose clip is at least :attr:`min_gap_s` shorter
        ([] when there is none yet).

        Args:
            clip_s: seconds of the line the newest re-decode read.
            words: its words (the whole line, committed words included).

        Bounded: re-decodes older than the one returned are dropped (they will never be
        the newest usable one again).
        """
        usable = [i for i, (c, _) in enumerate(self.history) if c <= clip_s - self.min_gap_s + 1e-6]
        reference = self.history[usable[-1]][1] if usable else []
        if usable:
            del self.history[: usable[-1]]
        self.history.append((clip_s, list(words)))
        return reference

    def update(self, rest: list[str], previous: list[str], committed: int = 0,
               ages: list[float] | None = None) -> int:
        """Take the newest hypothesis' tail; :meth:`text` is then the tail to show.

        Args:
            rest: words of the newest hypothesis after the committed text.
            previous: words after the same committed text of the re-decode to compare
                with (:meth:`remember`; [] when there is none).
            committed: words committed since the last update (they left the tail: the
                shown words shift by as many).
            ages: per word of ``rest``, seconds of decoded audio after its estimated end
                (None: unknown, no age rule).

        Returns:
            how many of the first words of ``rest`` the shown tail covers (for its timing).
        """
        norm = [norm_word(w) for w in rest]
        prev = [norm_word(w) for w in previous]
        words = self.words[committed:]
        shown = [norm_word(w) for w in words]
        on_screen = _prefix(norm, shown)
        if _prefix(prev, shown) > on_screen:
            # only the newest re-decode reads the shown tail differently: keep it for now
            self.words = words[: _prefix(prev, shown)]
            return min(len(self.words), len(rest))
        n = max(_prefix(norm, prev), on_screen)
        if ages is not None and self.age_s is not None:
            while n < len(rest) and ages[n] >= self.age_s:
                n += 1
        # words still on screen keep their spelling ("I" does not flip to "i" and back)
        self.words = words[:on_screen] + [_shown(w) for w in rest[on_screen:n]]
        if n == len(rest) and n:
            self.words[-1] = without_closing_punctuation(self.words[-1])
        return n

    def text(self) -> str:
        """The tail to show (without the hypothesis' closing punctuation)."""
        return " ".join(w for w in self.words if w)
