"""Which stretches of a source's audio are a voice: Silero VAD over the stream as it arrives (issue 38).

Level alone takes music, noise and tones for speech; a line that a model made up over them must
open no speaker. :class:`VoicedWindows` runs the shared Silero VAD
(:func:`captioner.asr.vad.silero_vad`, the one the default model's line segmenter uses) over
every 32 ms window of the source's audio while it is fed, with one recurrent state for the whole
stream, and keeps the probabilities of the last ``capacity`` windows. Labelling a final then only
looks them up: the VAD's cost (about 0.1-0.2 ms a window, under 0.7 % of a core) is spread over
the stream instead of falling on the decode thread when a line becomes final (33 ms for a 5 s
line). Windows quieter than -55 dBFS are silence without a network call.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from captioner.asr.vad import VAD_WINDOW
from captioner.speakers.stretches import FLOOR_DBFS

#: A window is speech at this Silero probability or above.
SPEECH_P = 0.5
#: Mean power of a window below which it is silence without asking the VAD: -55 dBFS, the level
#: under which :func:`captioner.speakers.stretches.speech_runs` finds no speech either.
QUIET_POWER = 10.0 ** (FLOOR_DBFS / 10.0)


class VoicedWindows:
    """Speech probabilities of a stream's 32 ms windows (window ``k``: samples ``[512 k, 512 (k + 1))``).

    Args:
        load: returns the VAD (``__call__(window [512] float32, state) -> (p, state)`` and
            ``initial_state()``), or ``None``; called once, at the first :meth:`feed`.
        capacity: windows kept (older ones are forgotten).
    """

    def __init__(self, load: Callable[[], object], capacity: int) -> None:
        self._load = load
        self._vad = None
        self._loaded = False
        self.probs = np.zeros(capacity, np.float32)
        self.next = 0  # the first window not yet computed
        self._pending = np.zeros(0, np.float32)  # its samples received so far
        self._state = None

    def feed(self, samples: np.ndarray, start: int) -> None:
        """Take ``samples`` (``[n] float32``, 16 kHz) that start at stream sample ``start``; a jump
        forward reads as silence, audio already seen is skipped."""
        if not self._loaded:
            self._loaded = True
            self._vad = self._load()
            self._state = self._vad.initial_state() if self._vad is not None else None
        if self._vad is None or not len(samples):
            return
        cap = len(self.probs)
        expected = self.next * VAD_WINDOW + len(self._pending)
        if start < expected:  # fed again: only what is new
            samples = samples[expected - start:]
            start = expected
            if not len(samples):
                return
        if start - expected >= cap * VAD_WINDOW:  # a long jump: start over at its window
            self.next, self._state = start // VAD_WINDOW, self._vad.initial_state()
            self._pending = np.zeros(start % VAD_WINDOW, np.float32)
        elif start > expected:
            samples = np.concatenate([np.zeros(start - expected, np.float32), samples])
        buf = np.concatenate([self._pending, np.asarray(samples, np.float32)])
        n = len(buf) // VAD_WINDOW
        windows = buf[: n * VAD_WINDOW].reshape(n, VAD_WINDOW)
        quiet = np.mean(np.square(windows, dtype=np.float64), axis=1) < QUIET_POWER
        for i in range(n):
            if quiet[i]:  # silence between words and turns: no network call (a third of a meeting)
                p = 0.0
            else:
                p, self._state = self._vad(windows[i], self._state)
            self.probs[(self.next + i) % cap] = p
        self.next += n
        self._pending = buf[n * VAD_WINDOW:]

    def share(self, start: int, end: int) -> float | None:
        """The share of the windows in stream samples ``[start, end)`` that are speech, or ``None``
        when none of them is known (no VAD, not computed yet, or forgotten)."""
        first = start // VAD_WINDOW
        last = max(first + 1, end // VAD_WINDOW)
        first, last = max(first, self.next - len(self.probs)), min(last, self.next)
        if self._vad is None or last <= first:
            return None
        idx = np.arange(first, last) % len(self.probs)
        return float(np.mean(self.probs[idx] >= SPEECH_P))
