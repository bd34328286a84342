"""Sound captions from a stream: YAMNet on each 0.96 s patch, one caption per sound start.

:class:`SoundDetector` feeds a source's 16 kHz audio through the streaming front end
(:class:`~captioner.sounds.frontend.LogMelPatcher`), classifies every patch (two a second) and
runs each curated label (:data:`~captioner.sounds.classes.SOUNDS`) through a hysteresis:

* idle -> present: ``need`` patches in a row (2; 3 for a phone) reach the label's ``on``
  threshold, or one patch its ``instant`` threshold (and no label it yields to is present): one
  :class:`~captioner.events.SoundEvent` from the start of the first of those patches to the end
  of the last (``start + 1.44 s`` for two, ``+ 1.92 s`` for three, ``+ 0.96 s`` for one). It is
  returned by the ``feed`` call that completes that patch: 1.455 s (1.935 s, 0.975 s) of audio
  after the first patch's start, which may begin before the sound does (benchmark: median 1.0 s
  after the sound's start);
* present -> idle: the score stays under ``off`` for ``hold_s`` seconds (rounded up to whole
  patches); only then can the label be captioned again.

Nothing here imports Qt or blocks: ``feed`` does the work on the caller's thread (about 1.5 ms
per patch on one core).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from captioner.events import SoundEvent
from captioner.sounds.classes import SOUNDS, SoundClass, resolve
from captioner.sounds.frontend import PATCH_HOP_S, LogMelPatcher, Patch, quantise

#: Nominal patch length (s) used for an event's end: YAMNet's 0.96 s example.
PATCH_S = 0.96


@dataclass
class _LabelState:
    above: int = 0          # patches in a row at or over ``on``
    first_start: float = 0.0
    first_score: float = 0.0
    present: bool = False   # captioned and not yet stopped
    below: int = 0          # patches in a row under ``off`` while present


class SoundDetector:
    """Streaming sound captions for one source.

    Args:
        classifier: ``[1, 1, 96, 64] uint8`` patch -> ``[521] float32`` probabilities
            (:class:`~captioner.sounds.yamnet.YamNet`; tests pass a fake).
        class_names: the classifier's 521 display names in output order.
        sounds: the curated labels (default :data:`~captioner.sounds.classes.SOUNDS`).
        source: the session label put on each event (``SoundEvent.source``).

    Raises:
        ValueError: a class of ``sounds`` is not in ``class_names``.
    """

    def __init__(self, classifier: Callable[[np.ndarray], np.ndarray], class_names: Sequence[str],
                 sounds: Sequence[SoundClass] = SOUNDS, source: str = "") -> None:
        self.classifier = classifier
        self.sounds = tuple(sounds)
        self.source = source
        self._indices = [np.asarray(ix, np.intp) for ix in resolve(self.sounds, list(class_names))]
        by_label = {s.label: i for i, s in enumerate(self.sounds)}
        self._yields = [[by_label[y] for y in s.yields_to if y in by_label] for s in self.sounds]
        self._hold = [max(1, math.ceil(s.hold_s / PATCH_HOP_S - 1e-9)) for s in self.sounds]
        self._patcher = LogMelPatcher()
        self.reset()

    def reset(self) -> None:
        """Start a new stream: times count from 0 again and no sound is present."""
        self._patcher.reset()
        self._state = [_LabelState() for _ in self.sounds]

    def feed(self, samples: np.ndarray) -> list[SoundEvent]:
        """Add audio; return the sounds that started (captioned once per start).

        Args:
            samples: ``[N] float32`` mono, 16 kHz, in [-1, 1]; any N (0 included). NaN and inf
                count as silence. Stream times count from the first sample fed since
                :meth:`reset`.

        Returns:
            the new :class:`~captioner.events.SoundEvent` s, oldest first (usually none).
        """
        return self._run(self._patcher.feed(samples))

    def finish(self) -> list[SoundEvent]:
        """End of stream: classify the last, silence-padded patch (YAMNet's ``pad_waveform``).

        Returns:
            sounds that started in it (may be ``[]``). Call :meth:`reset` before a new stream.
        """
        return self._run(self._patcher.finish())

    def scores(self, probs: np.ndarray) -> np.ndarray:
        """Each label's score from its classes' probabilities (``SoundClass.combine``: the highest,
        or ``1 - prod(1 - p)``).

        Args:
            probs: ``[521] float32`` class probabilities.

        Returns:
            ``[len(sounds)] float32``, 0..1.
        """
        out = np.empty(len(self.sounds), np.float32)
        for i, (ix, s) in enumerate(zip(self._indices, self.sounds)):
            p = probs[ix].astype(np.float64)
            out[i] = 1.0 - np.prod(1.0 - p) if s.combine == "any" else p.max()
        return out

    def step(self, start: float, scores: np.ndarray) -> list[SoundEvent]:
        """Advance every label by one patch.

        Args:
            start: stream seconds of the patch's first sample.
            scores: ``[len(sounds)]`` label scores of the patch (:meth:`scores`).

        Returns:
            the events of labels that start at this patch.
        """
        out = []
        present_now = [st.present or float(scores[i]) >= s.off
                       for i, (s, st) in enumerate(zip(self.sounds, self._state))]
        for i, (s, st) in enumerate(zip(self.sounds, self._state)):
            score = float(scores[i])
            if st.present:
                st.below = st.below + 1 if score < s.off else 0
                if st.below >= self._hold[i]:
                    st.present, st.below, st.above = False, 0, 0
                continue
            blocked = any(present_now[j] for j in self._yields[i])
            if score >= s.on and not blocked:
                if st.above == 0:
                    st.first_start, st.first_score = start, score
                st.above += 1
            else:
                st.above = 0
            at_once = s.instant is not None and st.above == 1 and score >= s.instant
            if st.above >= s.need or at_once:
                end = st.first_start + (0 if at_once else (st.above - 1) * PATCH_HOP_S) + PATCH_S
                st.present, st.below, st.above = True, 0, 0
                out.append(SoundEvent(start=round(st.first_start, 3), end=round(end, 3), label=s.label,
                                      score=round(max(st.first_score, score), 3), source=self.source))
        return out

    def _run(self, patches: list[Patch]) -> list[SoundEvent]:
        out: list[SoundEvent] = []
        for p in patches:
            probs = self.classifier(quantise(p.features))
            out += self.step(p.start, self.scores(probs))
        return out


__all__ = ["SoundDetector", "PATCH_S"]
