"""LocalAgreement for re-decoding backends: commit what two consecutive hypotheses agree on.

A backend that re-decodes the whole open line (Moonshine) produces a fresh hypothesis of
the line every pass. Following whisper_streaming's LocalAgreement-2 policy, the words at
the start of the line on which two consecutive hypotheses agree become *final* text right
away, while the speaker is still talking; the rest stays a partial. Final text is never
rewritten: when the line completes, only what comes after the committed words is emitted.

Words are compared case- and punctuation-insensitively; the emitted text is the newest
hypothesis' spelling. The last ``holdback`` words of a hypothesis are never committed (they
may be cut off by the end of the audio decoded so far), and nothing is committed from a
re-decode of less than ``min_clip_s`` seconds of the line when the caller gives the clip's
length: see ``MIN_CLIP_S``; nor a word the newest hypothesis is unsure of, when the caller
gives the words' confidences: see ``COMMIT_LOGPROB``.

No Qt, no model: plain strings in, plain strings out.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_NORM = re.compile(r"[^\w']+", re.UNICODE)

#: Shortest re-decoded clip (s of the open line) whose words may be committed. The default
#: model reads the first words of a line unreliably from the first 1-2 s of it, and two
#: re-decodes a few hundred ms apart share most of their audio, so they often agree on the
#: same misreading ("That office" for "The office", "But we finish" for "Before we
#: finish"); the final decode of the whole line then reads it right, too late.
MIN_CLIP_S = 2.5
#: The two hypotheses compared must be re-decodes of clips at least this much apart (s).
#: With the model on captioner's own decoder a re-decode costs ~0.1-0.3 s instead of
#: 0.6-1 s, so consecutive re-decodes come ~0.3 s apart and agree on misreadings far more
#: often. Replayed on the 20-minute meeting (``bench/agreement_policy.py``,
#: ``bench/results/agreement_policy_20min_onnx.json``; one-pass WER 9.62 %): consecutive
#: re-decodes from 2.5 s of line +4.1 points of WER (estimated per-word final p95 2.8 s);
#: at least 1.0 s apart +1.35 (3.0 s), 1.5 s +0.62 (3.2 s), 2.0 s +0.48 (3.4 s), 2.5 s
#: +0.14 (3.7 s). Since the words' confidences also decide (``COMMIT_LOGPROB``), 1.5 s is
#: as exact as one-pass on all four replayed inputs (see there).
MIN_GAP_S = 1.5

#: Most words a reading may hold between two stretches it shares with the committed words,
#: beyond the committed words between them (:meth:`LineAgreement.after_committed`). A later reading of
#: the same audio reads about as many words for it; a committed word found further on is a
#: word that recurs later in the line, and aligning to it would drop the words between
#: (measured 2026-12-02, 20-minute meeting: "Blade, and" committed, the line read "Blade, then
#: the remaining ticket scout and the support team.", and "then the remaining ticket scout"
#: was lost).
MAX_SKIP = 2

#: An agreed word is committed only when the newest hypothesis read it with every token at
#: least this likely (natural log; the word's least likely token, a closing "." or "," not
#: counted, hotword bonus not included), when the caller gives the words' confidences. Two
#: re-decodes whose clips share the line's first seconds often agree on a misreading the
#: model is unsure of ("That sound freeze", "Marketing once"), which the line's final reading
#: then reads right, too late. Replayed through ``bench/agreement_policy.py`` (2 Dec 2026,
#: ``bench/results/agreement_policy_confidence.json``; live WER minus one-pass on the
#: 20-minute meeting / the three ``bench/voice_sets.py`` sets, estimated per-word final p50 /
#: p95 on the meeting, words committed before their line ended): no confidence rule, 2.0 s
#: apart (the previous policy) +0.48 / +0.46 / +1.06 / 0 points, 2.11 / 3.29 s, 26 %;
#: -0.2 and 2.0 s apart 0 / 0 / 0 / 0, 2.11 / 3.39 s, 22 %; -0.2 and 1.0 s apart +0.14 / 0 /
#: 0 / 0, 1.76 / 3.15 s, 40 %; **-0.1 and 1.5 s apart 0 / 0 / 0 / 0, 1.94 / 3.29 s, 30 %**.
COMMIT_LOGPROB: float | None = -0.1

#: First words whose capital stays where a sentence does not start ("so, I think").
KEEP_CAPITAL = frozenset({"I", "I'm", "I'll", "I've", "I'd"})
#: Punctuation that ends a sentence (the next word starts with a capital).
SENTENCE_END = ".?!"
_CLOSERS = "\"')]\u201d\u2019"


def norm_word(word: str) -> str:
    """Lower-case ``word`` with punctuation removed (the comparison key)."""
    return _NORM.sub("", word.lower())


def ends_sentence(word: str | None) -> bool | None:
    """Whether the next word starts a sentence after ``word``: True after ".", "?" or "!"
    (closing quotes and brackets skipped), False after any other word, None when unknown
    (no word, or an ellipsis, which the model uses both ways)."""
    if not word:
        return None
    w = word.rstrip(_CLOSERS)
    if w.endswith(".."):
        return None
    return bool(w) and w[-1] in SENTENCE_END


def lower_first(text: str) -> str:
    """``text`` with a capital first letter lowered, unless its first word keeps it
    ("I", "I'm", ... and acronyms such as "NASA")."""
    word = text.split(" ", 1)[0].rstrip(",.;:!?")
    acronym = len(word) > 1 and word.isupper()
    if text[:1].isupper() and word not in KEEP_CAPITAL and not acronym:
        return text[:1].lower() + text[1:]
    return text


def follow_case(first: str, after: str | None, read_after: str | None) -> str:
    """``first``, the first word of a re-reading's continuation, cased to follow ``after``.

    The committed words of a line come from an earlier re-decode; the rest of the line comes
    from a later reading that may punctuate the word before it differently ("everyone." was
    committed, the whole line reads "everyone, thank you ..."). Its first word's case follows
    the reading's own word before it (``read_after``); where that word and the committed one
    (``after``) differ in whether they end a sentence, the case is changed to follow the
    committed text: "everyone. Thank you", "Great, then the" (not "everyone. thank you", which
    the transcript would keep, and which rewrites the partial tail a reader saw).
    """
    ends, read_ends = ends_sentence(after), ends_sentence(read_after)
    if ends is None or read_ends is None or ends == read_ends or not first:
        return first
    return first[:1].upper() + first[1:] if ends else lower_first(first)


@dataclass
class LineAgreement:
    """The agreement state of one open line.

    Attributes:
        committed: words of this line already emitted as final, in order.
        previous: the words of the previous hypothesis (for the next comparison).
        holdback: words at the end of each hypothesis never committed (the end of the
            audio decoded so far may cut them).
        min_clip_s: nothing is committed from a hypothesis of a clip shorter than this
            (s), when :meth:`update` is told the clip's length.
        min_gap_s: a hypothesis is compared with the newest earlier one whose clip was at
            least this much shorter (s; 0 = the previous one): two re-decodes a few hundred
            ms apart share most of their audio and agree on the same misreading.
        history: ``(clip s, words)`` of the hypotheses that may still serve as the
            comparison (bounded: older ones than the newest usable are dropped).
        commit_logprob: an agreed word is committed only when its confidence in the newest
            hypothesis is at least this (natural log), when :meth:`update` is given the
            confidences; None: no such rule.
    """

    committed: list[str] = field(default_factory=list)
    previous: list[str] = field(default_factory=list)
    holdback: int = 1
    min_clip_s: float = MIN_CLIP_S
    min_gap_s: float = 0.0
    history: list[tuple[float, list[str]]] = field(default_factory=list)
    commit_logprob: float | None = COMMIT_LOGPROB

    def reset(self) -> None:
        """Forget the line (a new line starts)."""
        self.committed = []
        self.previous = []
        self.history = []

    def update(self, hypothesis: str, clip_s: float | None = None,
               confidence: list[float] | None = None) -> tuple[str, str]:
        """Take a new hypothesis of the whole open line.

        Args:
            hypothesis: the newest decode of the line from its start.
            clip_s: seconds of the line that were decoded (None: unknown, no minimum);
                below :attr:`min_clip_s` the hypothesis is only remembered.
            confidence: per word of ``hypothesis`` (split on whitespace), the model's
                confidence in it (natural-log probability of its least likely token;
                ``-inf`` where unknown); the agreed words are committed up to the first one
                below :attr:`commit_logprob`. None: no confidences (no such rule).

        Raises:
            ValueError: ``confidence`` does not give one value per word.

        Returns:
            ``(newly_committed, partial)``: text that becomes final now ("" when nothing
            new is agreed) and the unstable rest of the hypothesis after everything
            committed so far; the first word after the committed text is cased to follow
            it (:func:`follow_case`).
        """
        words = hypothesis.split()
        if confidence is not None and len(confidence) != len(words):
            raise ValueError(f"{len(confidence)} confidences for {len(words)} words")
        rest = self._continuation(words)
        reference = self.previous
        if clip_s is not None and self.min_gap_s > 0:
            usable = [i for i, (c, _) in enumerate(self.history) if c <= clip_s - self.min_gap_s]
            reference = self.history[usable[-1]][1] if usable else []
            if usable:
                del self.history[: usable[-1]]  # older ones will never be the newest usable again
            self.history.append((clip_s, words))
        prev_rest = self.after_committed(reference)
        self.previous = words
        agreed = 0
        limit = min(len(rest), len(prev_rest)) - self.holdback  # never the last words of either
        if clip_s is not None and clip_s < self.min_clip_s:
            limit = 0  # too little of the line yet to trust even an agreement
        if confidence is not None and self.commit_logprob is not None:
            sure = confidence[len(words) - len(rest):]
            limit = min(limit, next((i for i, c in enumerate(sure) if c < self.commit_logprob), len(sure)))
        while agreed < limit and norm_word(rest[agreed]) == norm_word(prev_rest[agreed]) and norm_word(rest[agreed]):
            agreed += 1
        new = rest[:agreed]
        self.committed += new
        return " ".join(new), " ".join(rest[agreed:])

    def finish(self, final_text: str) -> str:
        """The line is complete: the text to emit as final after what was committed.

        Returns:
            the words of ``final_text`` that follow the committed ones ("" when nothing
            remains), the first one cased to follow them (:func:`follow_case`). The state
            is reset for the next line.
        """
        rest = self._continuation(final_text.split())
        self.reset()
        return " ".join(rest)

    def _continuation(self, words: list[str]) -> list[str]:
        """:meth:`after_committed`, its first word cased to follow the committed text
        (:func:`follow_case`)."""
        rest = self.after_committed(words)
        if rest and self.committed and len(words) > len(rest):
            rest[0] = follow_case(rest[0], self.committed[-1], words[len(words) - len(rest) - 1])
        return rest

    def after_committed(self, words: list[str]) -> list[str]:
        """``words`` (a hypothesis of the whole line) minus the part aligned with
        :attr:`committed` (best alignment): the hypothesis' tail."""
        if not self.committed:
            return list(words)
        c = [norm_word(w) for w in self.committed]
        h = [norm_word(w) for w in words]
        if h[: len(c)] == c:
            return list(words[len(c) :])
        # The new hypothesis reads the committed stretch differently: align the two and
        # continue after the hypothesis word matched to the last committed word; a match more
        # than MAX_SKIP words further on in the hypothesis is a word that recurs later in the line
        sm = difflib.SequenceMatcher(a=c, b=h, autojunk=False)
        blocks, shift = [], 0  # shift: extra hypothesis words before the last block kept
        for b in sm.get_matching_blocks():
            if b.size and b.b - b.a - shift <= MAX_SKIP:
                blocks.append(b)
                shift = b.b - b.a
        if blocks:
            a0, b0, size = blocks[-1]
            end = b0 + size + (len(c) - (a0 + size))  # unmatched committed tail: one word each
        else:
            end = len(c)  # nothing in common: assume the committed words are the first ones
        return list(words[min(end, len(words)) :])
