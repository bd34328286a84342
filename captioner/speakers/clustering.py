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

Thresholds were chosen on the espeak-ng voice sets of ``bench/voice_sets.py`` and the
meeting of ``bench/meeting_audio.py`` (``bench/speakers.py``): for GE2E a stretch of one
voice is 0.83-0.95 similar to that voice's centroid, other voices 0.55-0.85.
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


def speaker_id(n: int) -> str:
    """The id of the n-th speaker of a run (1-based): ``"Speaker n"``."""
    return f"Speaker {n}"


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
        if not self.speakers:
            return self._open(emb, speech_s)
        sims = np.array([float(emb @ s.centroid) for s in self.speakers])
        best = int(np.argmax(sims))
        best_sim = float(sims[best])
        if best_sim >= SAME_FROM:
            return self._join(best, emb, speech_s, best_sim)
        if best_sim >= YOUNG_JOIN and self.speakers[best].weight_s < YOUNG_S:
            return self._join(best, emb, speech_s, best_sim)
        if best_sim < NEW_BELOW and speech_s >= MIN_NEW_S and len(self.speakers) < self.max_speakers:
            return self._open(emb, speech_s)
        prev = next((i for i, s in enumerate(self.speakers) if s.ident == previous), None)
        if prev is not None and sims[prev] >= min(best_sim, NEW_BELOW) - 0.02:
            d = self._join(prev, emb, speech_s, float(sims[prev]), update=False)
            d.unsure = True
            return d
        return self._join(best, emb, speech_s, best_sim, update=best_sim >= NEW_BELOW)

    def _open(self, emb: np.ndarray, speech_s: float) -> Decision:
        s = _Speaker(speaker_id(len(self.speakers) + 1), emb.copy(), max(speech_s, 1e-3), speech_s)
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

    def __len__(self) -> int:
        return len(self.speakers)
