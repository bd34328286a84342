"""LocalAgreement for re-decoding backends: commit what two consecutive hypotheses agree on.

A backend that re-decodes the whole open line (Moonshine) produces a fresh hypothesis of
the line every pass. Following whisper_streaming's LocalAgreement-2 policy, the words at
the start of the line on which two consecutive hypotheses agree become *final* text right
away, while the speaker is still talking; the rest stays a partial. Final text is never
rewritten: when the line completes, only what comes after the committed words is emitted.

Words are compared case- and punctuation-insensitively; the emitted text is the newest
hypothesis' spelling. The last ``holdback`` words of a hypothesis are never committed (they
may be cut off by the end of the audio decoded so far).

No Qt, no model: plain strings in, plain strings out.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_NORM = re.compile(r"[^\w']+", re.UNICODE)


def norm_word(word: str) -> str:
    """Lower-case ``word`` with punctuation removed (the comparison key)."""
    return _NORM.sub("", word.lower())


@dataclass
class LineAgreement:
    """The agreement state of one open line.

    Attributes:
        committed: words of this line already emitted as final, in order.
        previous: the words of the previous hypothesis (for the next comparison).
        holdback: words at the end of each hypothesis never committed (the end of the
            audio decoded so far may cut them).
    """

    committed: list[str] = field(default_factory=list)
    previous: list[str] = field(default_factory=list)
    holdback: int = 1

    def reset(self) -> None:
        """Forget the line (a new line starts)."""
        self.committed = []
        self.previous = []

    def update(self, hypothesis: str) -> tuple[str, str]:
        """Take a new hypothesis of the whole open line.

        Args:
            hypothesis: the newest decode of the line from its start.

        Returns:
            ``(newly_committed, partial)``: text that becomes final now ("" when nothing
            new is agreed) and the unstable rest of the hypothesis after everything
            committed so far.
        """
        words = hypothesis.split()
        rest = self._after_committed(words)
        prev_rest = self._after_committed(self.previous)
        self.previous = words
        agreed = 0
        limit = min(len(rest), len(prev_rest)) - self.holdback  # never the last words of either
        while agreed < limit and norm_word(rest[agreed]) == norm_word(prev_rest[agreed]) and norm_word(rest[agreed]):
            agreed += 1
        new = rest[:agreed]
        self.committed += new
        return " ".join(new), " ".join(rest[agreed:])

    def finish(self, final_text: str) -> str:
        """The line is complete: the text to emit as final after what was committed.

        Returns:
            the words of ``final_text`` that follow the committed ones ("" when nothing
            remains). The state is reset for the next line.
        """
        words = final_text.split()
        rest = self._after_committed(words)
        self.reset()
        return " ".join(rest)

    def _after_committed(self, words: list[str]) -> list[str]:
        """``words`` minus the part aligned with :attr:`committed` (best alignment)."""
        if not self.committed:
            return list(words)
        c = [norm_word(w) for w in self.committed]
        h = [norm_word(w) for w in words]
        if h[: len(c)] == c:
            return list(words[len(c) :])
        # The new hypothesis reads the committed stretch differently: align the two and
        # continue after the hypothesis word matched to the last committed word.
        sm = difflib.SequenceMatcher(a=c, b=h, autojunk=False)
        blocks = [b for b in sm.get_matching_blocks() if b.size]
        if blocks:
            a0, b0, size = blocks[-1]
            end = b0 + size + (len(c) - (a0 + size))  # unmatched committed tail: one word each
        else:
            end = len(c)  # nothing in common: assume the committed words are the first ones
        return list(words[min(end, len(words)) :])
