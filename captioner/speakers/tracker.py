"""One source's speaker attribution: its audio history and the labelling of its final text (issue 38).

The session (:class:`~captioner.engine.session.StreamingSession`) feeds the tracker every
sample it decodes and hands it every event it emits; the tracker gives each non-empty
*final* :class:`~captioner.events.TextDelta` a speaker id, and splits a line that holds
two voices where the voice changes. It works on the audio, so it is the same behind every
backend (built-in, Audio8, TFLite, remote):

1. the line's audio is taken from a bounded history (:data:`HISTORY_S`) by the delta's
   stream times, and its stretches of speech are found (:func:`~captioner.speakers.stretches.speech_runs`,
   by level), keeping those Silero VAD heard as a voice while the audio was fed
   (:class:`~captioner.speakers.voicing.VoicedWindows`: a line a backend made of music or noise
   opens no speaker);
2. each stretch is embedded (CAM++, :class:`~captioner.speakers.campplus.CampplusEncoder`; GE2E
   where it is missing); at each pause with at least :data:`MIN_SIDE_S` of speech on both
   sides, the speech before and after are compared: where they are least alike and either
   less similar than the encoder's ``change_below``
   (:class:`~captioner.speakers.clustering.Thresholds`) or each confidently a different known speaker,
   the line is cut there (text by :func:`~captioner.speakers.stretches.split_text`), and
   each side is tried once more;
3. each piece goes to a speaker by :class:`~captioner.speakers.clustering.SpeakerClusters`
   (shared by every attributed source of the run); a final with less than
   :data:`SHORT_S` of speech of its own (token-by-token backends, the live path's early
   commits, a "Yes.") is judged on up to :data:`CONTEXT_S` of the utterance it belongs to
   (speech joined to it across pauses under :data:`UTTERANCE_GAP_S`, before and after),
   an unsure one keeps the previous speaker, and one with too little voice to tell is
   :data:`~captioner.speakers.clustering.UNSURE`.

The speaker model loads on a background thread when the run starts
(:class:`~captioner.speakers.registry.SpeakerRegistry`, which also keeps every labelled stretch
for the second pass and its live corrections);
if it cannot load, the run gets one :class:`~captioner.events.Notice` (code
``speakers_unavailable``) and captions without labels, never an error. Partials, turn
boundaries and every other event pass through unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from captioner.events import Event, TextDelta
from captioner.speakers.clustering import UNSURE
from captioner.speakers.options import SpeakerOptions
from captioner.speakers.recluster import Stretch
from captioner.speakers.registry import SpeakerRegistry
from captioner.speakers.stretches import speech_runs, split_text
from captioner.speakers.voicing import VAD_WINDOW, VoicedWindows

#: Seconds of a source's audio kept for labelling (finals come at most a few seconds after
#: their audio; 120 s of 16 kHz float32 is 7.7 MB).
HISTORY_S = 120.0
#: A final with less speech than this (s) is judged on its context.
SHORT_S = 1.0
#: Seconds of speech round a short final that its speaker is judged on.
CONTEXT_S = 2.0
#: Pauses (s) shorter than this stay inside one utterance (one speaker) for a short final's context.
UTTERANCE_GAP_S = 0.25
#: Least speech (s) embedded at all; less keeps the previous speaker.
MIN_EMBED_S = 0.3
#: A short final whose utterance holds less speech than this (s) and is not at least
#: ``new_below`` alike to a known speaker is marked :data:`~captioner.speakers.clustering.UNSURE`.
DOUBT_S = 0.8
#: Least speech (s) on each side of a cut inside a line (CAM++ judges a voice from ~0.5 s).
MIN_SIDE_S = 0.6
#: Least share of a stretch's 32 ms windows that Silero VAD must call speech (p >= 0.5) for it to
#: count as a voice: music, noise and tones are as loud as speech but must open no speaker.
VOICED_SHARE = 0.3


class _Ring:
    """The last ``capacity`` samples of a stream, addressed by stream sample index."""

    def __init__(self, capacity: int) -> None:
        self.data = np.zeros(capacity, np.float32)
        self.end = 0  # stream index after the newest sample

    def write(self, samples: np.ndarray, start: int) -> None:
        cap = len(self.data)
        if start > self.end:  # a jump (a gap): the skipped part reads as silence
            self._zero(self.end, min(start, self.end + cap))
        samples = samples[-cap:]
        start = start + max(0, len(samples) - cap) if len(samples) >= cap else start
        i = start % cap
        first = min(len(samples), cap - i)
        self.data[i: i + first] = samples[:first]
        self.data[: len(samples) - first] = samples[first:]
        self.end = max(self.end, start + len(samples))

    def _zero(self, a: int, b: int) -> None:
        for k in range(a, b):  # rare: only after a gap; bounded by the capacity
            self.data[k % len(self.data)] = 0.0

    def read(self, a: int, b: int) -> np.ndarray:
        """Samples ``[a, b)`` that are still held (``[0] `` when none)."""
        a, b = max(a, self.end - len(self.data), 0), min(b, self.end)
        if b <= a:
            return np.zeros(0, np.float32)
        cap = len(self.data)
        idx = np.arange(a, b) % cap
        return self.data[idx]


class SpeakerTracker:
    """Labels the final :class:`~captioner.events.TextDelta` s of one source with a speaker id.

    Args:
        options: what the user chose (``max_speakers``).
        sample_rate: rate (Hz) of the audio fed.
        registry: the speakers shared by every attributed source of one run (``None``: its own).
    """

    def __init__(self, options: SpeakerOptions, sample_rate: int = 16000,
                 registry: SpeakerRegistry | None = None) -> None:
        self.options = options
        self.sample_rate = sample_rate
        self.registry = registry if registry is not None else SpeakerRegistry(options)
        self._ring = _Ring(int(HISTORY_S * sample_rate))
        self._voicing = VoicedWindows(self.registry.vad, int(HISTORY_S * sample_rate) // VAD_WINDOW + 1)
        self.previous = ""

    def feed(self, samples: np.ndarray, start: int) -> None:
        """Keep ``samples`` (``[n] float32``, already sanitised) that start at stream sample ``start``."""
        if len(samples):
            self._ring.write(np.asarray(samples, np.float32), start)
            self._voicing.feed(samples, start)

    def reset(self) -> None:
        """Forget this source's audio (a new stream); the run's speakers are kept."""
        self._ring = _Ring(len(self._ring.data))
        self._voicing = VoicedWindows(self.registry.vad, len(self._voicing.probs))
        self.previous = ""

    def label(self, events: Sequence[Event]) -> list[Event]:
        """``events`` with every non-empty final ``TextDelta`` labelled (``speaker`` set), split in
        two or more deltas where the voice changes inside it, and followed by the second pass's
        corrections when it ran (:class:`~captioner.events.SpeakerFix`,
        :meth:`SpeakerRegistry.corrections`); everything else unchanged. Nothing is held back: a
        final reaches the transcript and the journal the moment it is given."""
        out: list[Event] = []
        for ev in events:
            if isinstance(ev, TextDelta) and ev.final and ev.text.strip() and not ev.speaker:
                out.extend(self._label(ev))
                out.extend(self.registry.corrections())
            else:
                out.append(ev)
        return out

    def finish(self) -> list[Event]:
        """The end of this source's stream: the second pass once more over what it said last,
        every stretch now settled (:meth:`SpeakerRegistry.corrections`)."""
        if self.registry.encoder(0) is None:
            return []
        return self.registry.corrections(force=True)

    # -- internals -----------------------------------------------------------------------------
    def _label(self, ev: TextDelta) -> list[Event]:
        enc = self.registry.encoder()
        if enc is None:
            note = self.registry.notice()
            return [ev] + ([dataclasses.replace(note, source=ev.source)] if note else [])
        sr = self.sample_rate
        a, b = int(round(ev.start * sr)), int(round(ev.end * sr))
        wav = self._ring.read(a, b)
        runs = self._voiced(speech_runs(wav, sr), a)
        speech = sum(e - s for s, e in runs) / sr
        if speech < SHORT_S:
            return [self._short(ev, enc, b, speech)]
        emb = enc.embed([wav[s:e] for s, e in runs])
        weights = np.array([(e - s) / sr for s, e in runs])
        pieces = self._cuts(emb, weights, 0, len(runs), depth=2)
        if len(pieces) == 1:
            return [self._assign(ev, _mean(emb, weights), speech)]
        return self._split(ev, runs, emb, weights, pieces, a)

    def _voiced(self, runs: list[tuple[int, int]], offset: int) -> list[tuple[int, int]]:
        """The runs (sample ranges from stream sample ``offset``) that Silero VAD heard as speech in
        at least :data:`VOICED_SHARE` of their windows; every run it has no answer for."""
        out = []
        for s, e in runs:
            share = self._voicing.share(offset + s, offset + e)
            if share is None or share >= VOICED_SHARE:
                out.append((s, e))
        return out

    def _short(self, ev: TextDelta, enc, b: int, speech: float) -> TextDelta:
        """A final with little speech of its own (a "Yes.", or the first words of a line that the
        live path commits early): judged on the utterance it belongs to, the speech joined to its
        own across pauses shorter than :data:`UTTERANCE_GAP_S`, before it and after it as far as
        the audio has come, up to :data:`CONTEXT_S` s. A change of speaker comes at a longer
        pause, so the previous speaker's last words are not mixed in (they were, when the speech
        before the final was taken). When even the utterance holds less than :data:`DOUBT_S` of
        speech, two or more voices are known (a monologue's "Yes." stays its speaker's) and its
        voice is not even plausibly a known speaker's, the final is labelled
        :data:`~captioner.speakers.clustering.UNSURE` ("Speaker ?"): a reader is better served by a
        mark of doubt than by a confident wrong name (issue 51)."""
        sr = self.sample_rate
        a = int(round(ev.start * sr))
        reach = int(2 * CONTEXT_S * sr)
        lo = max(a - reach, self._ring.end - len(self._ring.data), 0)
        ctx = self._ring.read(lo, b + reach)
        runs = self._voiced(speech_runs(ctx, sr), lo)
        parts, total = _utterance(ctx, runs, a - lo, b - lo, int(UTTERANCE_GAP_S * sr), CONTEXT_S * sr)
        total /= sr
        if total < MIN_EMBED_S:
            if self.previous:
                self.registry.stretches.append(Stretch(ev.source, ev.start, ev.end, None, total, self.previous))
                return dataclasses.replace(ev, speaker=self.previous)
            return self._assign(ev, None, speech)
        emb = enc.embed([np.concatenate(parts)])[0]
        if total < DOUBT_S and len(self.registry.clusters) >= 2:  # too little voice to judge between voices
            ident, sim = self.registry.clusters.closest(emb)
            if sim < self.registry.clusters.thresholds.new_below:  # not plausibly anyone: a mark of doubt
                self.registry.stretches.append(Stretch(ev.source, ev.start, ev.end, emb, total, UNSURE))
                return dataclasses.replace(ev, speaker=UNSURE)
        return self._assign(ev, emb, total)  # one utterance, one voice: all of its speech counts

    def _assign(self, ev: TextDelta, emb: np.ndarray | None, speech: float) -> TextDelta:
        if emb is None:  # nothing to go on at the very start: the first speaker
            if not len(self.registry.clusters):
                return ev
            ident = self.previous or self.registry.clusters.speakers[0].ident
        else:
            ident = self.registry.clusters.assign(emb, speech, self.previous).speaker
        self.previous = ident
        self.registry.stretches.append(Stretch(ev.source, ev.start, ev.end, emb, speech, ident))
        return dataclasses.replace(ev, speaker=ident)

    def _cuts(self, emb: np.ndarray, w: np.ndarray, lo: int, hi: int, depth: int) -> list[tuple[int, int]]:
        """Runs ``[lo, hi)`` cut where the voice changes: a list of ``(first, end)`` run ranges."""
        if depth == 0 or hi - lo < 2:
            return [(lo, hi)]
        best, best_sim = None, 1.0
        for k in range(lo + 1, hi):
            if w[lo:k].sum() < MIN_SIDE_S or w[k:hi].sum() < MIN_SIDE_S:
                continue
            sim = float(_mean(emb[lo:k], w[lo:k]) @ _mean(emb[k:hi], w[k:hi]))
            if sim < best_sim:
                best, best_sim = k, sim
        if best is None or not (best_sim < self.registry.clusters.thresholds.change_below or self._apart(
                _mean(emb[lo:best], w[lo:best]), _mean(emb[best:hi], w[best:hi]))):
            return [(lo, hi)]
        return self._cuts(emb, w, lo, best, depth - 1) + self._cuts(emb, w, best, hi, depth - 1)

    def _apart(self, left: np.ndarray, right: np.ndarray) -> bool:
        """Both sides confidently belong to two different known speakers."""
        speakers = self.registry.clusters.speakers
        if len(speakers) < 2:
            return False
        cents = np.stack([s.centroid for s in speakers])
        sl, sr_ = cents @ left, cents @ right
        same = self.registry.clusters.thresholds.same_from
        return int(np.argmax(sl)) != int(np.argmax(sr_)) and sl.max() >= same and sr_.max() >= same

    def _split(self, ev: TextDelta, runs, emb, w, pieces, a: int) -> list[Event]:
        sr = self.sample_rate
        out: list[TextDelta] = []
        text, t0 = ev.text, ev.start
        total = float(w.sum())
        done = 0.0
        for n, (lo, hi) in enumerate(pieces):
            last = n == len(pieces) - 1
            piece_w = float(w[lo:hi].sum())
            if last:
                cut, t1 = len(text), ev.end
            else:
                share = piece_w / max(total - done, 1e-9)
                cut = split_text(text, share)
                t1 = (a + (runs[hi - 1][1] + runs[hi][0]) / 2) / sr
            if cut == 0:  # the text cannot be cut here: the rest stays with the following piece
                continue
            delta = dataclasses.replace(ev, text=text[:cut], start=t0, end=max(t0, t1))
            out.append(self._assign(delta, _mean(emb[lo:hi], w[lo:hi]), piece_w))
            text, t0, total, done = text[cut:], max(t0, t1), total - piece_w, 0.0
        return _merge_same(out)


def _utterance(wav: np.ndarray, runs: list[tuple[int, int]], a: int, b: int, gap: int,
               most: float) -> tuple[list[np.ndarray], int]:
    """The speech of the utterance round samples ``[a, b)`` of ``wav``: the runs that overlap it (or
    the nearest one within ``gap``), joined with their neighbours across pauses shorter than ``gap``
    samples, the nearest first, until ``most`` samples; ``(pieces in time order, samples)``."""
    if not runs:
        return [], 0
    inside = [i for i, (s, e) in enumerate(runs) if s < b and e > a]
    if not inside:
        near = min(range(len(runs)), key=lambda i: max(runs[i][0] - b, a - runs[i][1]))
        if max(runs[near][0] - b, a - runs[near][1]) >= gap:
            return [], 0
        inside = [near]
    first, last = inside[0], inside[-1]
    while first > 0 and runs[first][0] - runs[first - 1][1] < gap:
        first -= 1
    while last < len(runs) - 1 and runs[last + 1][0] - runs[last][1] < gap:
        last += 1
    # the delta's own runs, then the rest of the utterance, nearest first, until ``most``
    order = inside + sorted((i for i in range(first, last + 1) if i not in inside),
                            key=lambda i: max(runs[i][0] - b, a - runs[i][1]))
    taken, total = {}, 0
    for i in order:
        s, e = runs[i]
        take = min(e - s, int(most - total))
        if take <= 0:
            break
        taken[i] = (s, s + take) if s >= b else (e - take, e)
        total += take
    return [wav[s:e] for _, (s, e) in sorted(taken.items())], total


def _mean(emb: np.ndarray, w: np.ndarray) -> np.ndarray:
    v = (emb * w[:, None]).sum(axis=0)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def _merge_same(deltas: list[TextDelta]) -> list[Event]:
    """Neighbouring pieces that went to the same speaker are one delta again."""
    out: list[TextDelta] = []
    for d in deltas:
        if out and out[-1].speaker == d.speaker:
            out[-1] = dataclasses.replace(out[-1], text=out[-1].text + d.text, end=d.end)
        else:
            out.append(d)
    return list(out)


def make_tracker(options: SpeakerOptions | None, kind: str, sample_rate: int = 16000,
                 registry: SpeakerRegistry | None = None) -> SpeakerTracker | None:
    """A tracker for a source of ``kind`` (``"system"``, ``"file"``, ``"microphone"``), or ``None``
    when the options do not attribute it (off, or the microphone)."""
    if options is None or not options.applies_to(kind):
        return None
    return SpeakerTracker(options, sample_rate, registry)
