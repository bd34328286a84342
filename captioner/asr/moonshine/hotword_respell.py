"""Second pass of hotword biasing: respell a decoded word that sounds like a hotword, if the model agrees.

Shallow fusion (:mod:`captioner.asr.moonshine.hotwords`) only helps where a hotword's tokens are
within the bonus of what the model would write, token by token. A name the model hears
but spells its own way ("Kwantaloup" for Quantaloop, "Meltrona" for Veltrona,
"Wrightline" for Brightlyne) has a first token far below the model's own: no bonus of a
sensible size steers it, and a larger one writes hotwords into ordinary speech.

So each time the model starts a new word (or ends), :meth:`Respeller.candidates` looks at
the last one to :data:`MAX_SPAN_WORDS` completed words: a span whose spelling is close to a
hotword's (:func:`sound_key`: lower case, letters and digits only, a few English spelling
equivalences folded; rapidfuzz's Indel similarity >= :data:`MIN_SIMILARITY`, spans of at
least :data:`MIN_KEY` letters) is *checked by the model* (:class:`Respelling`): the decoder,
teacher-forced from the step where the span began, scores the hotword's tokens plus the
best token after them, against the span's tokens plus the best token after it (what the
model wrote). The hotword is taken when it loses at most :data:`MARGIN_PER_TOKEN` nats per
hotword token, and decoding goes on after it (the words after the span are decoded again,
so the hotword's own continuation is the model's). A model-checked correction, not a string
replacement: a word the model does not hear as the hotword stays. A word that is already a
hotword is never respelled, and a clip with no close span costs nothing but the string
comparison (~0.1 ms for 500 hotwords).

Measured on ``bench/hotwords.py`` (boost 6, 2026-12-02): the hotwords that were said lost
between 4.6 and 13.6 nats (1.5-4.5 per token) against the decoded words; spans of ordinary
speech close to an unrelated hotword lost 12-45 nats, at least 5.4 per token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from rapidfuzz import process
from rapidfuzz.distance import Indel

from captioner.asr.hotword_list import DEFAULT_BOOST
from captioner.asr.moonshine.tokenizer import SPACE_MARK, Tokenizer

#: Longest span of decoded words compared with a hotword ("Kwanta Loop" for Quantaloop).
MAX_SPAN_WORDS = 2
#: Least Indel similarity (0-1) of the span's and the hotword's :func:`sound_key` (0.65 finds
#: "Niallin" for Xiaoling and "Nilephoric" for Xylophorix; 0.8 found 57 of 74, 0.65 60).
MIN_SIMILARITY = 0.65
#: Shortest span compared (letters of its :func:`sound_key`): a short word is close to too many.
MIN_KEY = 5
#: Most nats per hotword token the hotword version may lose against the decoded words, at
#: the default boost (scaled by ``min(boost, DEFAULT_BOOST) / DEFAULT_BOOST``).
MARGIN_PER_TOKEN = 5.0
#: A span whose every token the model read with a log-probability above this is not checked
#: (a surely read word is not a misheard hotword; saves the check's decoder steps). Measured on
#: ``bench/hotwords.py`` (boost 6, 2026-12-02): the spans respelled had a least token
#: log-probability between -0.85 and -1.7; of the spans checked and kept, about a third were
#: above -0.5.
SURE_LOGPROB = -0.5
#: Candidates checked per clip (each costs up to one decoder step per hotword token).
MAX_CHECKS = 4

_FOLDS = (("ph", "f"), ("qu", "kw"), ("ck", "k"), ("c", "k"), ("x", "ks"), ("z", "s"), ("y", "i"),
          ("w", "v"), ("gh", "g"))


def sound_key(text: str) -> str:
    """A rough spelling-independent key of ``text``: ``"Kwanta-Loop"`` and ``"Quantaloop"``
    both give ``"kvantalop"`` (lower case, letters/digits only, English spelling
    equivalences such as ph/f, qu/kw, c/k, y/i folded, doubled letters collapsed)."""
    key = re.sub(r"[^0-9a-z]", "", text.lower())
    for a, b in _FOLDS:
        key = key.replace(a, b)
    return re.sub(r"(.)\1+", r"\1", key)


@dataclass(frozen=True)
class Candidate:
    """A decoded span ``tokens[start:end]`` that sounds like hotword ``word`` (spelled ``ids``)."""

    start: int
    end: int
    word: str
    ids: tuple[int, ...]
    similarity: float


class Respeller:
    """The hotwords' keys and spellings, to find decoded spans that sound like one.

    Args:
        words: the checked hotwords.
        tokenizer: the model's tokenizer.
    """

    def __init__(self, words: Sequence[str], tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.words = tuple(words)
        self.keys = [sound_key(w) for w in self.words]
        self.exact = {w.lower() for w in self.words}
        self.spaced = [tuple(tokenizer.encode(SPACE_MARK + w)) for w in self.words]
        self.bare = [tuple(tokenizer.encode(w)) for w in self.words]

    def _words(self, tokens: Sequence[int]) -> list[tuple[int, int, str]]:
        """Decoded words as ``(start, end, text)`` token ranges; trailing punctuation left out."""
        pieces = [self.tokenizer.pieces[t].decode("utf-8", "replace") for t in tokens]
        out: list[tuple[int, int, str]] = []
        start = 0
        for i in range(1, len(tokens) + 1):
            if i == len(tokens) or pieces[i].startswith(SPACE_MARK):
                end = i
                while end > start and not any(ch.isalnum() for ch in pieces[end - 1]):
                    end -= 1
                if end > start:
                    out.append((start, end, "".join(pieces[start:end]).replace(SPACE_MARK, " ").strip()))
                start = i
        return out

    def candidates(self, tokens: Sequence[int]) -> list[Candidate]:
        """Spans of the last one to :data:`MAX_SPAN_WORDS` completed words of ``tokens`` (the
        decoded text so far, about to go on with a new word) that sound like a hotword, the
        most similar first (at most one per span)."""
        if not self.words:
            return []
        words = self._words(tokens)[-MAX_SPAN_WORDS:]
        found: list[Candidate] = []
        for n in range(1, len(words) + 1):
            span = words[-n:]
            if any(_plain(w[2]) in self.exact for w in span):
                break  # a hotword (or its possessive) is never respelled, nor a span holding one
            key = sound_key("".join(w[2] for w in span))
            if len(key) < MIN_KEY:
                continue
            start, end = span[0][0], span[-1][1]
            spaced = self.tokenizer.pieces[tokens[start]].startswith(SPACE_MARK.encode())
            for _, sim, k in process.extract(key, self.keys, scorer=Indel.normalized_similarity,
                                             score_cutoff=MIN_SIMILARITY, limit=3):
                ids = self.spaced[k] if spaced else self.bare[k]
                if ids and tuple(tokens[start:end]) != ids:
                    found.append(Candidate(start, end, self.words[k], ids, float(sim)))
                    break
        return sorted(found, key=lambda c: -c.similarity)


def _plain(word: str) -> str:
    """``word`` lower-cased without a possessive ``'s`` (``"Terraform's"`` -> ``"terraform"``)."""
    word = word.lower()
    return word[:-2] if word.endswith(("'s", "\u2019s")) else word


def _logits(outputs) -> np.ndarray:
    """``[V]`` logits of the last position of a decoder step's outputs."""
    return outputs[0].numpy()[0, -1]


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = np.asarray(logits, dtype=np.float64)
    top = x.max()
    return x - top - np.log(np.exp(x - top).sum())


class Respelling:
    """One clip's second pass, run as the words complete (one decoding; not thread-safe).

    Use: after each greedy choice ``token`` (before it is appended), ``check(tokens,
    states, token)``; ``states[p]`` are the decoder outputs whose logits chose
    ``tokens[p]`` (``states[len(tokens)]``: this step's; ``None`` where unknown), step 0's
    first. Returns ``None``, or ``(candidate, log_probs, outputs)`` when the span
    ``tokens[candidate.start:candidate.end]`` should become the hotword: ``log_probs`` of
    its tokens (no bonus), and the teacher-forced decoder ``outputs`` to go on from (their
    last logits choose the token after the hotword; the tokens after the span are dropped
    and decoded again).

    The check, when the model starts a new word (or ends), on the spans of the last
    :data:`MAX_SPAN_WORDS` words that sound like a hotword (:meth:`Respeller.candidates`):
    the model's log-probability of the hotword's tokens plus its best next token, against
    the span's plus the best next token there (what it wrote); the hotword is taken when it
    is at most :data:`MARGIN_PER_TOKEN` nats per token below (scaled with the boost). The
    forcing stops as soon as the hotword falls below that (often before its first decoder
    step); each place and hotword is forced once (a check against a lower floor resumes
    where the last one stopped); at most :data:`MAX_CHECKS` per clip. A span the model read
    surely (every token's log-probability above :data:`SURE_LOGPROB`) is not checked.

    Args:
        tree: the hotwords (:class:`captioner.asr.moonshine.hotwords.HotwordTree`); boost 0 turns this off.
        force: ``force(state, cross, ids, floor, log_probs) -> (log_probs, outputs, done)``: the
            decoder teacher-forced on ``ids`` after ``state``'s prefix, stopping below ``floor``
            and resumable (:func:`teacher_forcing`).
    """

    def __init__(self, tree, force: Callable) -> None:
        self.respeller: Respeller = tree.respeller
        self.starts_word = tree.starts_word
        self.on = tree.boost > 0 and len(tree.words) > 0
        self.force = force
        self.per_token = MARGIN_PER_TOKEN * min(tree.boost, DEFAULT_BOOST) / DEFAULT_BOOST
        self.checks = 0
        self.seen: set[tuple[int, int, str]] = set()
        self.forced: dict[tuple[int, tuple[int, ...]], tuple | None] = {}
        self.cross = None

    def check(self, tokens: list[int], states: list, token: int):
        """See the class; ``None`` when nothing is respelled."""
        if self.cross is None:
            self.cross = states[0]
        if not self.on or not tokens or self.checks >= MAX_CHECKS or not self.starts_word[token]:
            return None
        for cand in self.respeller.candidates(tokens):
            key = (cand.start, cand.end, cand.word)
            if key in self.seen or any(s is None for s in states[cand.start:cand.end + 1]):
                continue
            self.seen.add(key)
            read = [float(_log_softmax(_logits(states[p]))[tokens[p]]) for p in range(cand.start, cand.end)]
            if min(read) > SURE_LOGPROB:
                continue  # read surely: a word the model hears this clearly is not a misheard hotword
            old = sum(read)
            old += float(_log_softmax(_logits(states[cand.end])).max())
            margin = self.per_token * len(cand.ids)
            floor = old - margin
            memo = self.forced.get((cand.start, cand.ids))  # (log_probs, outputs, done, floor or total)
            if memo is None or (not memo[2] and floor < memo[3]):  # not tried, or stopped above this floor
                self.checks += 1
                lps, outs = (memo[0], memo[1]) if memo is not None else ([], states[cand.start])
                lps, outs, done = self.force(outs, self.cross, cand.ids, floor, lps)  # resumes where it stopped
                memo = (lps, outs, done, sum(lps) + float(_log_softmax(_logits(outs)).max()) if done else floor)
                self.forced[(cand.start, cand.ids)] = memo
            self.last = (cand, memo[3] - old if memo[2] else None)
            if memo[2] and memo[3] >= floor:
                return cand, memo[0], memo[1]
            if self.checks >= MAX_CHECKS:
                break
        return None


def teacher_forcing(decoder: Any, outputs: list[str], hidden: np.ndarray) -> Callable:
    """The ``force`` of :class:`Respelling` on the default model's merged decoder (ONNX Runtime
    ``decoder``, its output names ``outputs``: logits first, then the ``present.*`` caches;
    ``hidden``: the clip's encoder states ``[1, T, 416] float32``; graph:
    :mod:`captioner.asr.moonshine.model`).

    ``force(state, cross, ys, floor, lps) -> (log_probs, outputs, done)``: the decoder run
    on the tokens ``ys`` in turn (teacher forcing) after the prefix of ``state`` (the outputs
    of the step that scores ``ys[len(lps)]``; ``lps``: the log-probabilities of the ``ys``
    already forced, ``[]`` from the start), with ``cross`` (step 0's outputs: the
    cross-attention cache). ``log_probs``: each forced token's log-probability; ``outputs``:
    the step that scores the token after them. ``done``: all of ``ys`` forced (``outputs``
    score the token after ``ys``); False when the sum fell below ``floor`` -- then
    ``log_probs`` and ``outputs`` stop before the token that fell, and a later call with a
    lower floor resumes there without running the decoder again on what was forced. One
    step per token: a call on several tokens at once took ~2.3 single steps on this
    machine's CPU (onnxruntime 1.24, 2026-12-02) even for two. ``force`` raises ONNX
    Runtime's own exceptions when the decoder fails."""
    from captioner.asr.moonshine.draft_tokens import log_softmax_at

    def force(state: list, cross: list, ys, floor: float, lps: list[float]):
        binding = decoder.io_binding()
        binding.bind_cpu_input("encoder_hidden_states", hidden)
        for name, first in zip(outputs[1:], cross[1:]):
            if ".encoder." in name:
                binding.bind_ortvalue_input(name.replace("present", "past_key_values"), first)
        binding.bind_cpu_input("use_cache_branch", np.array([True]))
        ids = np.zeros((1, 1), np.int64)
        outs, lps = state, list(lps)
        for tok in ys[len(lps):]:
            lp = log_softmax_at(outs[0].numpy()[0, -1], tok)
            if sum(lps) + lp < floor:
                return lps, outs, False
            lps.append(lp)
            for name, value in zip(outputs[1:], outs[1:]):
                if ".decoder." in name:
                    binding.bind_ortvalue_input(name.replace("present", "past_key_values"), value)
            ids[0, 0] = tok
            binding.bind_cpu_input("input_ids", ids)
            for name in outputs:
                binding.bind_output(name, "cpu")
            decoder.run_with_iobinding(binding)
            outs = binding.get_outputs()
        return lps, outs, True

    return force
