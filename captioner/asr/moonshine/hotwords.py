"""Contextual biasing of the built-in model's greedy decoder towards the user's hotwords.

Shallow fusion over a prefix tree (the technique of sherpa-onnx's ``ContextGraph`` and the
contextual-biasing literature), adapted to greedy decoding:

* :class:`HotwordTree` holds every hotword in the spellings the tokenizer produces:
  ``"▁" + word`` (after a space) and ``word`` (at the start of the text or after
  punctuation such as ``-`` or ``"``), capitalised as written.
* While the decoded text ends in a prefix of a spelling -- the empty prefix at a word
  boundary included (where the model itself starts a new word, or after punctuation) --
  the next token of that spelling gets ``boost`` added to its log-probability. Added to every candidate of one step, log-softmax's normaliser is the
  same for all tokens, so the greedy choice ``argmax(log p + bonus)`` is
  ``argmax(logits + bonus)``: no softmax over the 32,768 logits is computed for the
  choice, only the bonus candidates are gathered and compared with the plain argmax.
* A match the bonus steered (some token of it would not have been chosen without it)
  and that is then abandoned -- the model prefers another token even with the bonus, or
  the word ends before the hotword does -- gives its bonus back: decoding returns to
  where the match began (the decoder cache of that step is kept) and chooses again
  without that hotword's bonus there. So a boosted prefix never leaves a partial word
  ("Ximon" for "Simon" because of a hotword "Xylophorix").
* A place gets at most :data:`MAX_TRIES` hotwords steered and given back (each try costs
  a decoder step), and a hotword starts only where the model itself starts a new word (or
  after punctuation): it replaces a word, never splits one.
* A reading the model ends at its first step (it hears no words: a clip that starts inside a
  word can read so, see :mod:`captioner.asr.moonshine.empty_lines`) is never steered into a
  hotword: "Siobhan, thanks" for "...ning everyone" gave a false name alert (issue 49).
* No loop: a hotword just completed gets no bonus to start again until
  :data:`REENTRY_WORDS` other words were decoded, no hotword gets a bonus to start right
  after another one (no chains of names), and the re-decoding a clip may do is capped at
  :data:`REDO_SHARE` of its token budget (then biasing is off for the rest of the clip).
* A steered hotword is kept only if the model alone gives its tokens a total
  log-probability of at least ``-KEEP_FACTOR * min(boost, DEFAULT_BOOST)`` (:data:`KEEP_FACTOR`); the
  log-softmax is computed for the match's few steps only, when it completes.

A second pass (:mod:`captioner.asr.moonshine.hotword_respell`, run by ``MoonshineModel.decode`` as
each word completes) respells a decoded word that sounds like a hotword when the model,
teacher-forced, agrees: the names the bonus cannot steer because their first token is far
below the model's own ("Wrightline" for Brightlyne).

A completed line is read several times (:mod:`captioner.asr.moonshine.line_framing`), every
reading with the list, and the surest reading is kept: :func:`reading_score` leaves the tokens
of the hotwords a reading spells out of its score, which would otherwise sink the reading the
bonus steered to the right name (issue 48).

Not done: per-word boosts; case variants not written by the user ("kubectl" does not
bias "Kubectl"); segmentations other than the tokenizer's own (a word the model spells
differently is not boosted); anything beyond the decoder's own hypothesis (a word the
model does not hear at all cannot be forced, by design).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from captioner.asr.hotword_list import DEFAULT_BOOST, check_boost
from captioner.asr.moonshine.hotword_respell import Respeller
from captioner.asr.moonshine.tokenizer import END, SPACE_MARK, START, Tokenizer

#: Words decoded after a hotword completed before it gets a bonus to start again.
REENTRY_WORDS = 8
#: A hotword the bonus steered is kept only if the model alone gives its tokens a total
#: log-probability of at least ``-KEEP_FACTOR * min(boost, DEFAULT_BOOST)`` (else its bonus is
#: taken back; -15 nats from the default boost up: a looser floor at boost 8, -20, wrote
#: unrelated words into ordinary speech and took the other words' WER to 38 %).
#: Measured on ``bench/hotwords.py`` (2026-12-02, boost 8): hotwords that were said had
#: totals from -0.2 to -27 (most above -12), steered hotwords that were not said from -5
#: to -41 (most below -12). Re-measured at boost 6 (2026-12-02, 32 clips): 2.0 (-12): 62.2 %
#: recall, other-word WER 24.5 %; 2.5 (-15): 67.6 %, 23.4 %; 3.0 (-18): 66.2 %, 22.8 %; no
#: floor: 67.6 %, 23.4 % -- between -12 and -15 lay three hotwords that were said
#: (Oravelle, Ferreira, Nimbusoft), below -15 two pushed in where another word was said.
KEEP_FACTOR = 2.5
#: The same for a steered hotword that begins a reading (its line's first word): at least
#: ``-FIRST_KEEP_FACTOR * min(boost, DEFAULT_BOOST)`` (-12 nats at the default boost). A line's first
#: word is the model's least sure, most of all when the capture started inside it, and the bonus
#: wrote a listed name there for it ("Siobhan: it was delayed by almost three hours" for "My flight
#: was delayed..."): false name alerts (issue 49). Measured 2026-12-08, every reading of the lines,
#: boost 6: steered hotwords that begin a reading, on the name clips of ``bench/hotword_readings.py``
#: (names said) -17.0 to -0.7 nats, 41 of 46 kept at -15, 37 at -12, 32 at -10; on
#: ``bench/alert_starts.py``'s clips at offset 0.3 s with six names nobody says, 100 of 185 kept at
#: -15, 12 at -12, 1 at -10. Later in a reading the unsaid ones are fewer and not so far below.
FIRST_KEEP_FACTOR = 2.0
#: Hotwords tried (steered, then given back) at one place of a clip before the plain
#: choice stands there. Each try costs a decoder step; measured on ``bench/hotwords.py``
#: (boost 6, before the second pass): 1 try 53 % recall and 1.13x decoder steps with 500
#: unrelated words on ordinary speech, 2: 59 % and 1.23x, 3: 62 % and 1.27x, unlimited: 64 %
#: and 1.37x. With the second pass (:mod:`captioner.asr.moonshine.hotword_respell`, 2026-12-02): 1 try
#: 73.0 %, 2 and 3 tries both 81.1 % (2: 219 decoder runs against 159 without a list, 3: 232).
MAX_TRIES = 2
#: Decoder steps a clip may spend again after give-backs, as a share of its token budget
#: (then plain greedy decoding for the rest of the clip: bounded cost, no loop). Measured with
#: 2 tries and the second pass (2026-12-02): 0.1: 77.0 % recall, 1.24x decoder runs with 500
#: unrelated words; 0.2: 81.1 %, 1.29x; 1.0: 81.1 %, 1.38x.
REDO_SHARE = 0.2


class HotwordTree:
    """Prefix tree of the hotwords' token spellings, with the per-token tables of a step.

    Args:
        words: checked hotwords (:func:`captioner.asr.hotword_list.check_hotwords`).
        tokenizer: the model's tokenizer (spells the words, classifies pieces).
        boost: bonus on a hotword token's log-probability (0-10 nats).

    Attributes:
        children: per node, ``{token id: child node}``; node 0 is the root.
        child_ids: per node, ``[k] int64`` its children's token ids (gathered each step).
        word_of: per node, index into :attr:`words` of the spelling ending there, or -1.
        spaced_roots, bare_roots: ``[k] int64`` first tokens of the ``"▁" + word`` and of
            the ``word`` spellings.
        opens: ``[V] bool``, a token after which a bare spelling may start (it ends in
            punctuation); starts_word: ``[V] bool``, a token that begins a new word
            (``"▁"`` or punctuation first).
    """

    def __init__(self, words: Sequence[str], tokenizer: Tokenizer, boost: float = DEFAULT_BOOST) -> None:
        self.words = tuple(words)
        self.boost = check_boost(boost)
        self.floor = -KEEP_FACTOR * min(self.boost, DEFAULT_BOOST)
        self.first_floor = -FIRST_KEEP_FACTOR * min(self.boost, DEFAULT_BOOST)
        self.children: list[dict[int, int]] = [{}]
        self.word_of: list[int] = [-1]
        spaced: set[int] = set()
        bare: set[int] = set()
        word_firsts: list[set[int]] = []
        for index, word in enumerate(self.words):
            word_firsts.append(set())
            for prefix, firsts in ((SPACE_MARK, spaced), ("", bare)):
                ids = tokenizer.encode(prefix + word)
                if not ids:
                    continue
                word_firsts[-1].add(ids[0])
                node = 0
                for tok in ids:
                    nxt = self.children[node].get(tok)
                    if nxt is None:
                        nxt = self.children[node][tok] = len(self.children)
                        self.children.append({})
                        self.word_of.append(-1)
                    node = nxt
                self.word_of[node] = index
                firsts.add(ids[0])
        self.child_ids = [np.fromiter(c, np.int64, len(c)) for c in self.children]
        #: per first token, the first tokens of every spelling of the hotwords one of whose
        #: spellings starts with it: a hotword just completed is blocked in both spellings
        #: ("Siobhan:Siobhan" through the bare spelling after punctuation was a loop)
        self.alike: dict[int, frozenset[int]] = {}
        for firsts in word_firsts:
            for first in firsts:
                self.alike[first] = self.alike.get(first, frozenset()) | frozenset(firsts)
        self.spaced_roots = np.array(sorted(spaced), np.int64)
        self.bare_roots = np.array(sorted(spaced | bare), np.int64)
        n = len(tokenizer.pieces)
        self.opens = np.zeros(max(n, END + 1), bool)
        self.starts_word = np.zeros(max(n, END + 1), bool)
        for i, piece in enumerate(tokenizer.pieces):
            text = piece.decode("utf-8", errors="replace")
            if text:
                self.opens[i] = not text[-1].isalnum()
                self.starts_word[i] = text.startswith(SPACE_MARK) or not text[0].isalnum()
        self.opens[START] = True
        self.starts_word[END] = True
        self.respeller = Respeller(self.words, tokenizer)

    def __len__(self) -> int:
        return len(self.words)

    def start(self, max_tokens: int) -> "Biasing":
        """A fresh :class:`Biasing` for one clip's greedy decoding of at most ``max_tokens`` tokens."""
        return Biasing(self, max_tokens)

    def spans(self, ids: Sequence[int]) -> list[tuple[int, int, int]]:
        """The hotwords ``ids`` (a decoded reading, without start/end tokens) spells, in order:
        ``(start, end, word index)`` per whole hotword, ``ids[start:end]`` one of its spellings
        beginning where a word begins (or after punctuation, or at the start) and followed by a
        token that begins a word, or by the end; the longest spelling wins where several start
        at one token. Whether the bonus steered it or the model wrote it anyway does not matter."""
        out: list[tuple[int, int, int]] = []
        i, n = 0, len(ids)
        while i < n:
            prev = ids[i - 1] if i else START
            end = word = -1
            if self.starts_word[ids[i]] or self.opens[prev]:
                node, j = 0, i
                while j < n and (node := self.children[node].get(ids[j], -1)) >= 0:
                    j += 1
                    if self.word_of[node] >= 0 and (j == n or self.starts_word[ids[j]]):
                        end, word = j, self.word_of[node]
            if end > 0:
                out.append((i, end, word))
                i = end
            else:
                i += 1
        return out


def reading_score(ids: Sequence[int], logprobs: Sequence[float], tree: HotwordTree | None = None) -> float:
    """A reading's score for the choice among a line's readings
    (:mod:`captioner.asr.moonshine.line_framing`): the mean of its tokens' log-probabilities
    (natural log, the model's own, no bonus; ``logprobs[k]`` belongs to ``ids[k]``, entries past
    ``len(ids)`` are the end token's), leaving out the tokens of each hotword of ``tree`` that
    the reading spells exactly once (:meth:`HotwordTree.spans`) and whose tokens the model gave
    at least ``tree.floor`` nats in all (what a steered hotword must reach to be kept). 0.0 for
    no tokens.

    Every reading of a line decodes with the same list, so the scores stay comparable. A name
    the bonus steered in is a name the model alone finds unlikely: counted, it sinks the
    reading that has it right under the readings the bonus could not steer; left out, the
    readings are compared on the words around it. A hotword spelled twice or more counts in
    full: such a reading is more often a loop the steered name started ("Siobhan: Siobhan:
    Siobhan:" for "Saoirse is flying", each repeat likely to the model) than speech.

    Measured 2026-12-08 on ``bench/hotword_readings.py``'s six tuning clips (54 names), every
    reading of their lines replayed (issue 48): names right / mean WER with each clip's list,
    and the hotwords written where none was said with a 100-word list of other rare names
    (``bench/hotwords.py``'s ``unrelated_words``): counting the hotwords (before) 28 / 42.4 % / 1;
    leaving out every occurrence 40 / 23.8 %, but that loop won (unrelated-list WER 52.6 %
    against 49.9 %); once-only 40 / 23.8 % / 9; once-only within ``tree.floor`` (this)
    40 / 23.8 % / 6; within -12 nats 38 / 27.0 % / 3, -8 nats 32 / 35.1 % / 1; only where
    another reading of the line spells it too 38 / 27.0 % / 6. No list: 9 / 48.2 %. With no
    list, or a list none of whose words a reading spells, the score is the plain mean and
    the choice is unchanged."""
    lp = np.asarray(logprobs, np.float64)
    if not lp.size:
        return 0.0
    if tree is not None and len(tree) and len(ids):
        spans = tree.spans(ids)
        counts: dict[int, int] = {}
        for _, _, word in spans:
            counts[word] = counts.get(word, 0) + 1
        keep = np.ones(lp.size, bool)
        for start, end, word in spans:
            end = min(end, lp.size)
            if counts[word] == 1 and lp[start:end].sum() >= tree.floor:
                keep[start:end] = False
        if keep.any():
            lp = lp[keep]
    return float(np.mean(lp))


@dataclass
class _Snapshot:
    """Where a steered match began: the step's position, logits and decoder cache."""

    pos: int
    node: int
    logits: np.ndarray
    cache: object
    token: int = -1


@dataclass
class Biasing:
    """The greedy choice with hotword bonuses for one clip (one decoding; not thread-safe).

    Use: ``token, cache = biasing.choose(tokens, logits, cache)`` once per decoder step,
    where ``logits [V] float32`` and ``cache`` (the decoder outputs that produced them,
    kept opaque) belong to the step after ``tokens``; append ``token`` unless it is the
    end token, then run the decoder on ``token`` with the *returned* cache. ``choose`` may
    shorten ``tokens`` in place (a steered match was abandoned: its bonus is given back)
    and then returns an earlier step's cache. After the loop, :meth:`finish` drops a
    steered match the token budget cut off.
    """

    tree: HotwordTree
    max_tokens: int
    node: int = 0
    cost: float = 0.0  #: log-probability the bonus overrode in the open match (0: not steered)
    snapshot: _Snapshot | None = None
    bans: dict[int, set[int]] = field(default_factory=dict)
    completed: list[tuple[int, int]] = field(default_factory=list)  # (position after the word, first token)
    path: list[tuple[np.ndarray, int]] = field(default_factory=list)  # the open match's (logits, token) steps
    redone: int = 0  #: decoder steps spent again after giving bonuses back

    def choose(self, tokens: list[int], logits: np.ndarray, cache: object) -> tuple[int, object]:
        """The next token (with bonuses) and the cache to run the decoder with; see the class."""
        while True:
            token, cost = self._pick(tokens, logits)
            if self._advance(tokens, token, cost, logits, cache):
                self.logits = logits  # the step's own logits (an earlier step's after a give-back)
                return token, cache
            snap = self.snapshot  # abandoned a steered match: give its bonus back
            self.redone += len(tokens) - snap.pos
            del tokens[snap.pos:]
            self.bans = {p: s for p, s in self.bans.items() if p <= snap.pos}
            self.bans.setdefault(snap.pos, set()).add(snap.token)
            self.completed = [c for c in self.completed if c[0] <= snap.pos]
            self.node, self.cost, self.snapshot, self.path = snap.node, 0.0, None, []
            logits, cache = snap.logits, snap.cache
            if self.redone > REDO_SHARE * self.max_tokens:  # bounded: past this, plain greedy decoding
                self.tree = None

    def started(self, pos: int) -> bool:
        """Whether the token just chosen at ``pos`` began a match the bonus steered (the
        match is given back unless the hotword's next tokens follow)."""
        snap = self.snapshot
        return self.tree is not None and snap is not None and snap.pos == pos and self.cost > 0

    def deep(self, pos: int) -> bool:
        """Whether the token just chosen at ``pos`` goes on with a match the bonus steered that
        began before ``pos`` (the match is given back unless the hotword's tokens go on)."""
        snap = self.snapshot
        return self.tree is not None and snap is not None and snap.pos < pos and self.cost > 0

    def next_try(self, tokens: list[int], logits: np.ndarray, token: int) -> int | None:
        """The token :meth:`choose` would take at ``len(tokens)`` (``logits``: that step's) once
        the steered start ``token`` just chosen there is given back at once: the place's next
        hotword try, or ``None`` when the plain choice would stand (a guess for the decoder's
        batch; nothing changes)."""
        tree, snap = self.tree, self.snapshot
        if tree is None or snap is None or self.redone + 1 > REDO_SHARE * self.max_tokens:
            return None
        saved = self.node, self.bans, self.completed
        try:
            self.node = snap.node
            self.bans = dict(self.bans)
            self.bans[len(tokens)] = self.bans.get(len(tokens), set()) | {token}
            self.completed = [c for c in self.completed if c[0] <= len(tokens)]
            nxt, cost = self._pick(tokens, logits)
        finally:
            self.node, self.bans, self.completed = saved
        return nxt if cost > 0 else None

    def respelled(self, start: int, end: int, first: int) -> None:
        """The tokens from ``start`` on became a hotword's spelling ending at ``end``, first
        token ``first`` (:mod:`captioner.asr.moonshine.hotword_respell`): any open match is dropped and
        the hotword counts as completed there (no re-entry, no chain)."""
        self.node, self.cost, self.snapshot, self.path = 0, 0.0, None, []
        self.bans = {p: s for p, s in self.bans.items() if p <= start}
        self.completed = [c for c in self.completed if c[0] <= start] + [(end, first)]

    def finish(self, tokens: list[int]) -> list[int]:
        """``tokens`` less a steered match still open when the token budget ran out."""
        tree = self.tree
        if tree is not None and self.cost > 0 and (tree.word_of[self.node] < 0 or self._log_prob() < self._floor()):
            return tokens[: self.snapshot.pos]
        return tokens

    # -- one step ------------------------------------------------------------------------
    def _candidates(self, tokens: list[int], best: int) -> np.ndarray | None:
        tree = self.tree
        if tree is None:
            return None
        node = self.node
        if node and tree.word_of[node] < 0:
            return tree.child_ids[node]  # inside a hotword: only its next tokens
        if self.completed and self.completed[-1][0] == len(tokens):
            return tree.child_ids[node] if node else None  # right after a hotword: none starts (no chains)
        if len(self.bans.get(len(tokens), ())) >= MAX_TRIES:
            return tree.child_ids[node] if node else None  # one try per place: a bonus given back is not retried
        if best == END and not tokens:  # the model reads the clip as nothing: a name never fills it
            return None
        prev = tokens[-1] if tokens else START
        if tree.opens[prev]:
            roots = tree.bare_roots
        elif tree.starts_word[best]:
            roots = tree.spaced_roots
        else:  # the model goes on with a word: a hotword would not replace a word here
            return tree.child_ids[node] if node else None
        if node:
            roots = np.concatenate([tree.child_ids[node], roots])
        return roots

    def _pick(self, tokens: list[int], logits: np.ndarray) -> tuple[int, float]:
        """(token, how much less log-probability it has than the plain choice: > 0 when only
        the bonus chose it)."""
        best = int(np.argmax(logits))
        cands = self._candidates(tokens, best)
        if cands is None or not len(cands) or self.tree.boost <= 0:
            return best, 0.0
        scores = logits[cands]
        skip = self.bans.get(len(tokens), set()) | self._blocked(tokens)
        while True:  # the best candidate not skipped (skip holds a few tokens: no set operation on arrays)
            i = int(np.argmax(scores))
            token = int(cands[i])
            if scores[i] == -np.inf:
                return best, 0.0
            if token not in skip:
                break
            scores[i] = -np.inf
        if token != best and scores[i] + self.tree.boost > logits[best]:
            return token, float(logits[best] - scores[i])
        return best, 0.0

    def _blocked(self, tokens: list[int]) -> set[int]:
        """First tokens of hotwords completed fewer than :data:`REENTRY_WORDS` words ago, in
        either spelling (after a space, or bare after punctuation)."""
        if not self.completed:
            return set()
        starts, alike = self.tree.starts_word, self.tree.alike
        out: set[int] = set()
        for end, first in self.completed[-8:]:
            if sum(1 for t in tokens[end:] if starts[t]) < REENTRY_WORDS:
                out |= alike.get(first, {first})
        return out

    def _advance(self, tokens: list[int], token: int, cost: float, logits: np.ndarray, cache: object) -> bool:
        """Move the match state by ``token`` (chosen at ``cost``); False when a steered match is abandoned."""
        tree = self.tree
        if tree is None:
            return True
        node = self.node
        if node:
            child = tree.children[node].get(token)
            if child is not None:  # the match goes on
                self._enter(tokens, child, token, cost, logits)
                return True
            complete = tree.word_of[node] >= 0 and tree.starts_word[token]
            if self.cost > 0 and (not complete or self._log_prob() < self._floor()):
                return False  # left before its end, ended inside a longer word, or too unlikely
            self.node, self.cost, self.snapshot, self.path = 0, 0.0, None, []
        first = tree.children[0].get(token)
        prev = tokens[-1] if tokens else START
        if (first is not None and token not in self.bans.get(len(tokens), ())
                and (tree.starts_word[token] or tree.opens[prev])):
            self.snapshot = _Snapshot(len(tokens), 0, logits, cache, token)
            self.cost, self.path = 0.0, []
            self._enter(tokens, first, token, cost, logits)
        return True

    def _enter(self, tokens: list[int], child: int, token: int, cost: float, logits: np.ndarray) -> None:
        """Step into ``child`` by ``token``, about to be appended to ``tokens``."""
        self.node = child
        self.cost += cost
        self.path.append((logits, token))
        if self.tree.word_of[child] >= 0:  # a hotword ends here (if the next token begins a word)
            self.completed.append((len(tokens) + 1, self.snapshot.token))

    def _floor(self) -> float:
        """What the open steered match's tokens need in all to be kept (nats): ``tree.floor``, or
        ``tree.first_floor`` for a match that begins the reading (:data:`FIRST_KEEP_FACTOR`)."""
        snap = self.snapshot
        return self.tree.first_floor if snap is not None and snap.pos == 0 else self.tree.floor

    def _log_prob(self) -> float:
        """Log-probability the model alone gives the open match's tokens (log-softmax of
        their steps only, computed once the match completes)."""
        total = 0.0
        for logits, token in self.path:
            top = float(logits.max())
            total += float(logits[token]) - top - float(np.log(np.exp(logits - top).sum()))
        return total
