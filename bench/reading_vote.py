"""Combining a line's readings into its final text: word voting (ROVER) and a minimum-Bayes-risk choice.

A completed line is read up to five times (:mod:`captioner.asr.moonshine.line_framing`); instead
of keeping the single reading with the highest mean token log-probability, the readings can be
combined (measured by ``bench/reading_choice.py``, issue 48.2; neither won on every input, so
the product does not use them):

* :func:`rover` (Fiscus 1997, "ROVER"): every reading's words are aligned to one reading, the
  *pivot* (the surest), with a word-level Levenshtein alignment (rapidfuzz opcodes). Each word
  of the pivot is a slot, and so is the gap before each pivot word and after the last one (words
  other readings have there). In every slot each reading votes for its word (or phrase, in a
  gap) or for *nothing* (the null word: it deleted the pivot's word, or inserted nothing in the
  gap); a vote weighs ``weight * (alpha + (1 - alpha) * confidence)``, with the word's
  probability as its confidence and :data:`NULL_CONFIDENCE` for a null vote. The heaviest
  candidate wins, the pivot's own on a tie; a word keeps the spelling (case, punctuation) of
  the reading that voted for it most heavily.
* :func:`mbr`: the reading with the least expected word edit distance to the others, each
  reading weighted by its posterior (a softmax of its scores, :func:`posteriors`); a tie goes
  to the surer reading, then the earlier one.

Words are compared by :func:`word_key` (lower case, punctuation dropped), as WER is scored.
No Qt, no model: readings are plain ``(text, score)`` pairs, optionally with per-word
log-probabilities.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from rapidfuzz.distance import Levenshtein

#: Confidence (a probability, 0-1) of a null vote in :func:`rover`: a reading that has no word
#: in a slot votes for "nothing there" this strongly.
NULL_CONFIDENCE = 0.7
#: Share of a :func:`rover` vote that counts the reading, whatever its word's confidence.
ALPHA = 0.5
#: Temperature of :func:`posteriors` over mean token log-probabilities (natural log).
TEMPERATURE = 0.1

_PUNCT = re.compile(r"[^\w']+")


def word_key(word: str) -> str:
    """``word`` as it is compared: lower case, everything but letters, digits and ``'`` dropped."""
    return _PUNCT.sub("", word.lower())


@dataclass
class Reading:
    """One reading of a line.

    Attributes:
        text: its text (stripped).
        score: mean token log-probability (natural log, <= 0; higher is surer).
        word_logprobs: one natural-log probability per word of ``text.split()`` (its least
            likely token: :meth:`~captioner.asr.moonshine.tokenizer.Tokenizer.word_minima`), or
            None: every word then gets ``score``.
    """

    text: str
    score: float
    word_logprobs: Sequence[float] | None = None
    words: list[tuple[str, str, float]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        tokens = self.text.split()
        lps = list(self.word_logprobs) if self.word_logprobs is not None else []
        if len(lps) != len(tokens):
            lps = [self.score] * len(tokens)
        words: list[tuple[str, str, float]] = []  # (key, spelling, probability)
        for tok, lp in zip(tokens, lps):
            key, p = word_key(tok), math.exp(min(0.0, float(lp)))
            if not key and words:  # punctuation alone ("--"): part of the word before it
                k, s, q = words[-1]
                words[-1] = (k, f"{s} {tok}", q)
            elif key:
                words.append((key, tok, p))
        self.words = words


def posteriors(scores: Sequence[float], temperature: float = TEMPERATURE) -> list[float]:
    """Softmax of ``scores / temperature`` (sums to 1); ``temperature`` <= 0 or inf: uniform."""
    if not scores:
        return []
    if not temperature or temperature <= 0 or math.isinf(temperature):
        return [1.0 / len(scores)] * len(scores)
    top = max(scores)
    e = [math.exp((s - top) / temperature) for s in scores]
    total = sum(e)
    return [x / total for x in e]


def mbr(readings: Sequence[Reading], weights: Sequence[float] | None = None) -> int:
    """Index of the minimum-Bayes-risk reading: least ``sum_j weights[j] * d(i, j)``, ``d`` the
    word edit distance (:func:`word_key` words); ties: the higher score, then the earlier.

    Args:
        weights: per reading (default :func:`posteriors` of the scores).

    Raises:
        ValueError: no readings.
    """
    if not readings:
        raise ValueError("no reading to choose from")
    w = list(weights) if weights is not None else posteriors([r.score for r in readings])
    keys = [[k for k, _, _ in r.words] for r in readings]
    risk = [sum(wj * Levenshtein.distance(ki, kj) for wj, kj in zip(w, keys)) for ki in keys]
    return min(range(len(readings)), key=lambda i: (round(risk[i], 9), -readings[i].score, i))


def rover(readings: Sequence[Reading], pivot: int, weights: Sequence[float] | None = None,
          alpha: float = ALPHA, null_confidence: float = NULL_CONFIDENCE) -> str:
    """The text voted from ``readings`` aligned to ``readings[pivot]`` (module docstring).

    Args:
        pivot: index of the reading the others are aligned to (the surest); it wins ties.
        weights: per reading (default: equal).
        alpha: share of a vote that does not depend on the word's confidence (1: a weighted
            majority; 0: confidence only).
        null_confidence: confidence (0-1) of a vote for no word.

    Returns:
        The voted words joined by single spaces ("" when nothing wins a slot).

    Raises:
        IndexError: ``pivot`` is not an index of ``readings``.
    """
    base = readings[pivot]
    w = list(weights) if weights is not None else [1.0] * len(readings)
    n = len(base.words)
    # slot 2k: the gap before pivot word k (2n: after the last); slot 2k + 1: pivot word k
    votes: list[dict[tuple[str, ...], float]] = [{} for _ in range(2 * n + 1)]
    spelling: list[dict[tuple[str, ...], tuple[float, str]]] = [{} for _ in range(2 * n + 1)]

    def vote(slot: int, words: list[tuple[str, str, float]], weight: float) -> None:
        key = tuple(k for k, _, _ in words)
        conf = min(p for _, _, p in words) if words else null_confidence
        v = weight * (alpha + (1 - alpha) * conf)
        votes[slot][key] = votes[slot].get(key, 0.0) + v
        if words and v > spelling[slot].get(key, (-1.0, ""))[0]:
            spelling[slot][key] = (v, " ".join(s for _, s, _ in words))

    pivot_keys = [k for k, _, _ in base.words]
    for i, r in enumerate(readings):
        if i == pivot:
            continue
        inserted: dict[int, list] = {}
        keys = [k for k, _, _ in r.words]
        for op in Levenshtein.opcodes(pivot_keys, keys):
            a, b = op.src_end - op.src_start, op.dest_end - op.dest_start
            if op.tag in ("equal", "replace"):
                for d in range(min(a, b)):
                    vote(2 * (op.src_start + d) + 1, [r.words[op.dest_start + d]], w[i])
                for d in range(min(a, b), a):  # pivot words left over: this reading has none there
                    vote(2 * (op.src_start + d) + 1, [], w[i])
                if b > a:
                    inserted.setdefault(op.src_end, []).extend(r.words[op.dest_start + a:op.dest_end])
            elif op.tag == "delete":
                for d in range(a):
                    vote(2 * (op.src_start + d) + 1, [], w[i])
            else:  # insert: words before pivot word src_start
                inserted.setdefault(op.src_start, []).extend(r.words[op.dest_start:op.dest_end])
        for gap in range(n + 1):
            vote(2 * gap, inserted.get(gap, []), w[i])
    for k, word in enumerate(base.words):  # the pivot's own votes
        vote(2 * k + 1, [word], w[pivot])
    for gap in range(n + 1):
        vote(2 * gap, [], w[pivot])
    out: list[str] = []
    for slot in range(2 * n + 1):
        own = (base.words[slot // 2][0],) if slot % 2 else ()
        best = max(votes[slot].items(), key=lambda kv: (round(kv[1], 9), kv[0] == own))[0]
        if best:
            out.append(base.words[slot // 2][1] if best == own else spelling[slot][best][1])
    text = " ".join(out)
    end = re.search(r"[.?!]+$", base.text)
    if text and end and not re.search(r"[.?!,;:]$", text):  # the pivot's full stop, had its last word lost
        text += end.group(0)
    return text
