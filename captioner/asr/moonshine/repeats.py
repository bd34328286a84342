"""Guard against the "same phrase repeated forever" failure of autoregressive decoders.

Decoders that re-decode a growing window (the default Moonshine model) sometimes loop on
silence or noise: "please please please please please". Real speech rarely says the same
word or phrase more than three times in a row, so a run of ``max_run + 1`` or more
consecutive repeats of one n-gram (n = 1..4 words) is collapsed to a single occurrence.
Comparison ignores case and trailing punctuation; the first occurrence's spelling is kept.
"""

from __future__ import annotations

import re

#: Longest phrase (in words) checked for looping.
MAX_NGRAM = 4
#: Runs longer than this many repeats are collapsed (3: "no, no, no" survives).
MAX_RUN = 3

_STRIP = re.compile(r"^\W+|\W+$")


def _key(word: str) -> str:
    return _STRIP.sub("", word).lower()


def collapse_repeats(text: str, max_run: int = MAX_RUN, max_ngram: int = MAX_NGRAM) -> str:
    """Collapse runs of more than ``max_run`` consecutive identical n-grams to one.

    Args:
        text: space-separated words (Latin script; text without spaces is returned as is).
        max_run: repeats allowed in a row (a run of ``max_run + 1`` or more collapses).
        max_ngram: longest n-gram considered, in words.

    Returns:
        The text with looping runs removed, words joined by single spaces; unchanged
        text keeps its original spacing.
    """
    words = text.split()
    if len(words) <= max_run:
        return text
    keys = [_key(w) for w in words]
    changed = False
    for n in range(1, max_ngram + 1):
        i = 0
        while i + n * (max_run + 1) <= len(words):
            gram = keys[i : i + n]
            if not any(gram):
                i += 1
                continue
            run = 1
            while keys[i + run * n : i + (run + 1) * n] == gram:
                run += 1
            if run > max_run:
                del words[i + n : i + run * n]
                del keys[i + n : i + run * n]
                changed = True
            i += 1
    return " ".join(words) if changed else text
