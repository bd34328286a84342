"""Online clustering of voice embeddings into "Speaker 1", "Speaker 2", ... (issue 38).

The pattern of live diarization (diart, WhisperLiveKit; DESIGN section 4): each stretch of
speech is compared with the running centroid of every known speaker by cosine similarity;
it joins the closest one when that is close enough, opens a new speaker when nothing is,
and what was labelled is never re-labelled. Two rules keep short or unclear stretches from
inventing speakers:

* a stretch with less than :data:`MIN_NEW_S` of speech never opens a speaker (a "Yes."
  carries too little voice to decide alone);
* a speaker whose centroid rests on less than :data:`YOUNG_S` of speech (the run began with
  a short "Hello.") is joined by any stretch at least :data:`YOUNG_JOIN` similar: GE2E puts
  0.7 s of a voice only 0.69-0.87 near 3 s of the same voice, so that short first centroid
  cannot tell a new voice from the first one's next sentence (measured on the espeak-ng
  voices of ``bench/voice_sets.py``), and a monologue must not become two speakers;
* between the two thresholds (closer than :data:`NEW_BELOW` to someone, not as close as
  :data:`SAME_FROM`) the stretch is *unsure* and keeps the previous speaker of its source
  when that speaker is among the close ones, else goes to the closest.

Centroids are the L2-normalised mean of the embeddings assigned with at least
:data:`MIN_UPDATE_S` of speech, weighted by speech seconds and capped at
:data:`MAX_WEIGHT_S` so a voice that drifts (a microphone moved) is followed; state is one
256-dim vector per speaker, at most ``max_speakers`` of them: a 2-hour file keeps flat
memory.

The module constants are GE2E's, chosen on the espeak-ng voice sets of ``bench/voice_sets.py``
(for GE2E a stretch of one voice is 0.83-0.95 similar to that voice's centroid, other voices
0.55-0.85); each encoder has its own :class:`Thresholds` (:data:`THRESHOLDS`): CAM++'s, fitted
on the natural-voice corpus of ``bench/natural_voices.py`` (issue 51), are lower, its voices
lying further apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: At or above this similarity to a centroid, a stretch is that speaker.
SAME_FROM = 0.86
#: Below this similarity to every centroid, a long enough stretch opens a new speaker.
NEW_BELOW = 0.80
#: Least speech (s) in a stretch that may open a new speaker.
MIN_NEW_S = 1.0
#: A speaker with less speech (s) behind its centroid than this is *young* (see above).
YOUNG_S = 2.0
#: Least similarity to a young speaker's centroid that joins it.
YOUNG_JOIN = 0.68
#: Least speech (s) in a stretch that moves its speaker's centroid.
MIN_UPDATE_S = 0.8
#: Most speech seconds a centroid's running mean weighs (beyond: an exponential mean).
MAX_WEIGHT_S = 60.0


@dataclass(frozen=True)
class Thresholds:
    """One encoder's cosine thresholds (its similarities have their own scale).

    Attributes:
        same_from: :data:`SAME_FROM`; new_below: :data:`NEW_BELOW`; young_join: :data:`YOUNG_JOIN`;
        change_below: two sides of a pause inside a line less alike than this are two voices
            (:class:`~captioner.speakers.tracker.SpeakerTracker`).
    """

    same_from: float = SAME_FROM
    new_below: float = NEW_BELOW
    young_join: float = YOUNG_JOIN
    change_below: float = 0.70


#: Each encoder's thresholds, by its ``kind``.
#: CAM++'s were fitted on the natural-voice corpus (``bench/natural_voices.py``: four, six,
#: twelve-with-blends, backchannel and 20-minute meetings) and checked on the espeak-ng sets by
#: timbre, replaying the lines of ``bench/speakers.py`` (a voice's sentences sit 0.5-0.9 from
#: its centroid, other voices' 0.1-0.6, a blend and its parent up to 0.85).
THRESHOLDS = {"ge2e": Thresholds(), "campplus": Thresholds(0.62, 0.50, 0.62, 0.45)}


def thresholds_for(kind: str) -> Thresholds:
    """The thresholds of encoder ``kind`` (``"ge2e"``, ``"campplus"``; GE2E's for any other)."""
    return THRESHOLDS.get(kind, Thresholds())


#: The label of a short reply whose voice is surely nobody's yet (too little speech to decide):
#: shown as it is, a mark of doubt, never folded into a speaker's line (issue 51).
UNSURE = "Speaker ?"


def speaker_id(n: int) -> str:
    """The id of the n-th speaker of a run (1-based): ``"Speaker n"``."""
    return f"Speaker {n}"


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def weighted_sums(labelled, least_s: float = 0.0) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """``({id: sum of embedding x speech s}, {id: speech s})`` of ``(embedding, speech s, id)``
    triples, leaving out those without an embedding or an id, or with less than ``least_s`` of
    speech; an id's centroid is its sum L2-normalised."""
    sums: dict[str, np.ndarray] = {}
    weights: dict[str, float] = {}
    for emb, speech_s, ident in labelled:
        if emb is None or not ident or speech_s < least_s:
            continue
        sums[ident] = sums.get(ident, 0.0) + np.asarray(emb, np.float32) * speech_s
        weights[ident] = weights.get(ident, 0.0) + speech_s
    return sums, weights


@dataclass
class _Speaker:
    ident: str
    centroid: np.ndarray
    weight_s: float
    seen_s: float = 0.0


@dataclass
class Decision:
    """Where one stretch went.

    Attributes:
        speaker: its speaker id.
        similarity: cosine similarity to that speaker's centroid before the update (1.0 for
            a new speaker).
        new: True when the stretch opened the speaker.
        unsure: True when the embedding did not decide and the previous speaker was kept.
    """

    speaker: str
    similarity: float
    new: bool = False
    unsure: bool = False


@dataclass
class SpeakerClusters:
    """The speakers of one run, shared by every attributed source (labels are unique in the run).

    Args:
        max_speakers: the most speakers to open; once reached a new voice goes to the closest.
    """

    max_speakers: int = 20
    speakers: list[_Speaker] = field(default_factory=list)
    thresholds: Thresholds = field(default_factory=Thresholds)
    #: speakers opened so far (the next one is "Speaker opened+1", even after :meth:`rebuild`)
    opened: int = 0

    def assign(self, embedding: np.ndarray, speech_s: float, previous: str = "") -> Decision:
        """Give a stretch of speech its speaker, opening or updating one.

        Args:
            embedding: ``[256] float32``, L2-normalised (:class:`~captioner.speakers.encoder.VoiceEncoder`).
            speech_s: seconds of speech behind it.
            previous: the speaker of the previous stretch of the same source ("" at the start).

        Returns:
            The :class:`Decision`.
        """
        emb = np.asarray(embedding, np.float32)
        t = self.thresholds
        if not self.speakers:
            return self._open(emb, speech_s)
        sims = np.array([float(emb @ s.centroid) for s in self.speakers])
        best = int(np.argmax(sims))
        best_sim = float(sims[best])
        if best_sim >= t.same_from:
            return self._join(best, emb, speech_s, best_sim)
        if best_sim >= t.young_join and self.speakers[best].weight_s < YOUNG_S:
            return self._join(best, emb, speech_s, best_sim)
        if best_sim < t.new_below and speech_s >= MIN_NEW_S and len(self.speakers) < self.max_speakers:
            return self._open(emb, speech_s)
        prev = next((i for i, s in enumerate(self.speakers) if s.ident == previous), None)
        if prev is not None and sims[prev] >= min(best_sim, t.new_below) - 0.02:
            d = self._join(prev, emb, speech_s, float(sims[prev]), update=False)
            d.unsure = True
            return d
        return self._join(best, emb, speech_s, best_sim, update=best_sim >= t.new_below)

    def closest(self, embedding: np.ndarray) -> tuple[str, float]:
        """``(id, cosine similarity)`` of the speaker whose centroid is closest to ``embedding``
        (``("", -1.0)`` when there is none); changes nothing."""
        if not self.speakers:
            return "", -1.0
        sims = [float(np.asarray(embedding, np.float32) @ s.centroid) for s in self.speakers]
        best = int(np.argmax(sims))
        return self.speakers[best].ident, sims[best]

    def _open(self, emb: np.ndarray, speech_s: float) -> Decision:
        self.opened += 1
        s = _Speaker(speaker_id(self.opened), emb.copy(), max(speech_s, 1e-3), speech_s)
        self.speakers.append(s)
        return Decision(s.ident, 1.0, new=True)

    def _join(self, i: int, emb: np.ndarray, speech_s: float, sim: float, update: bool = True) -> Decision:
        s = self.speakers[i]
        s.seen_s += speech_s
        if update and speech_s >= MIN_UPDATE_S:
            w = min(s.weight_s, MAX_WEIGHT_S)
            mean = s.centroid * w + emb * speech_s
            s.centroid = (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
            s.weight_s = w + speech_s
        return Decision(s.ident, sim)

    def rebuild(self, labelled: list[tuple[np.ndarray | None, float, str]]) -> None:
        """Centroids again from stretches as the second pass labelled them (``(embedding, speech
        seconds, id)``; stretches of less than :data:`MIN_UPDATE_S` do not count): a speaker the
        pass folded into another has none left and is dropped, so it attracts no new stretch; one
        it named afresh is added (and counted in :attr:`opened`)."""
        sums, weights = weighted_sums(labelled, MIN_UPDATE_S)
        kept = []
        for s in self.speakers:
            if s.ident in sums:
                s.centroid, s.weight_s = _unit(sums.pop(s.ident)), weights[s.ident]
                kept.append(s)
        for ident, v in sums.items():  # a cluster the pass named afresh
            kept.append(_Speaker(ident, _unit(v), weights[ident], weights[ident]))
            number = ident.rsplit(" ", 1)[-1]
            if number.isdigit():
                self.opened = max(self.opened, int(number))
        self.speakers = kept

    def __len__(self) -> int:
        return len(self.speakers)
