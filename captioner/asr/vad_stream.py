"""One stream's voice-activity pass: samples in, speech probabilities per 32 ms window out.

A session runs this pass once and gives its probabilities to everything that needs them:
the default model's line cutter (:class:`~captioner.asr.moonshine.lines.LineSegmenter`)
and the session's turn detector (:class:`~captioner.engine.turns.TurnDetector`). Before
issue 30 each ran its own Silero pass over the same audio (measured on the 2-minute
meeting, 2 cores: 3.5 s + 1.6 s of CPU in a sampling profile).

The two differ in one rule: Silero's recurrent state drifts over long non-speech and then
under-reports the speech that follows, so the turn detector resets it after
:data:`QUIET_RESET_S` of clear non-speech (as pipecat does), while the line cutter keeps
it (its cut points, and so the text, were tuned that way). The pass therefore carries one
recurrent state per *track* and runs every window through all of them in one batched
network call (:meth:`~captioner.asr.vad.SileroVad.batch`, bit-identical to separate calls):
each consumer gets exactly the probabilities of its own pass, for the price of one.

Windows are whole :data:`~captioner.asr.vad.VAD_WINDOW` (512-sample) stretches of the
stream from sample 0; samples that do not fill one wait for the next :meth:`feed`.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from captioner.asr.vad import MODEL_RATE, VAD_WINDOW

#: Speech probability below which a window counts as clear non-speech (for the state reset).
QUIET_P = 0.1
#: Seconds of clear non-speech after which a track's recurrent state is reset.
QUIET_RESET_S = 2.0


class SpeechWindows:
    """One stream's pass of a streaming VAD over its audio, with one state per track.

    Args:
        vad: ``vad(window [512] float32, state) -> (p, state)`` with ``initial_state()``;
            with a ``batch(window, stacked state)`` method (:class:`~captioner.asr.vad.SileroVad`)
            all tracks share one network call per window. The loaded network is shared by
            every stream; the recurrent states live here.
        resets: per track, whether its recurrent state is reset after :data:`QUIET_RESET_S`
            of windows below :data:`QUIET_P` (see the module docstring).

    Attributes:
        position: samples consumed in whole windows (a multiple of 512) at 16 kHz.
    """

    def __init__(self, vad: Any, resets: Sequence[bool] = (True,)) -> None:
        self.vad = vad
        self.resets = tuple(bool(r) for r in resets)
        self._stateful = hasattr(vad, "initial_state")
        self._batched = self._stateful and callable(getattr(vad, "batch", None))
        self._quiet_windows = int(QUIET_RESET_S * MODEL_RATE / VAD_WINDOW)
        self.reset()

    def reset(self) -> None:
        """Back to stream sample 0 with fresh recurrent states."""
        n = len(self.resets)
        if self._batched:
            rnn, ctx = self.vad.initial_state()
            self._state: Any = (np.repeat(rnn, n, axis=1), np.repeat(ctx, n, axis=0))
        else:
            self._state = [self._fresh() for _ in range(n)]
        self._carry = np.zeros(0, np.float32)
        self._low_run = [0] * n
        self.position = 0

    @property
    def pending(self) -> int:
        """Samples fed that do not fill a window yet (< 512)."""
        return len(self._carry)

    def feed(self, samples: np.ndarray) -> np.ndarray:
        """Take ``[n] float32`` samples at 16 kHz (non-finite values read as 0).

        Returns:
            ``[k, tracks] float64``: the speech probability (0..1) of every window these
            samples complete (``k = (pending + n) // 512``), per track, in stream order.
        """
        x = np.asarray(samples, dtype=np.float32)
        if self._carry.size:
            x = np.concatenate([self._carry, x])
        whole = len(x) - len(x) % VAD_WINDOW
        out = np.zeros((whole // VAD_WINDOW, len(self.resets)))
        for k, i in enumerate(range(0, whole, VAD_WINDOW)):
            window = x[i : i + VAD_WINDOW]
            if not np.all(np.isfinite(window)):
                window = np.nan_to_num(window, nan=0.0, posinf=0.0, neginf=0.0)
            out[k] = self._window(window)
        self.position += whole
        self._carry = x[whole:].copy()
        return out

    # -- internals -----------------------------------------------------------------------------
    def _fresh(self) -> Any:
        return self.vad.initial_state() if self._stateful else None

    def _window(self, window: np.ndarray) -> list[float]:
        if self._batched:
            p, self._state = self.vad.batch(window, self._state)
            probs = [float(q) for q in p]
        else:
            probs = []
            for t, state in enumerate(self._state):
                q, self._state[t] = self.vad(window, state)
                probs.append(float(q))
        for t, q in enumerate(probs):
            if not self.resets[t]:
                continue
            self._low_run[t] = self._low_run[t] + 1 if q < QUIET_P else 0
            if self._low_run[t] >= self._quiet_windows and self._stateful:
                self._reset_track(t)
                self._low_run[t] = 0
        return probs

    def _reset_track(self, t: int) -> None:
        if not self._batched:
            self._state[t] = self._fresh()
            return
        rnn, ctx = (a.copy() for a in self._state)
        fresh_rnn, fresh_ctx = self.vad.initial_state()
        rnn[:, t], ctx[t] = fresh_rnn[:, 0], fresh_ctx[0]
        self._state = (rnn, ctx)


class SpeechAhead:
    """A session's :class:`SpeechWindows` run as its samples arrive -- or before, on a file read
    ahead -- and handed out per decoded stretch (``StepRow.speech``), so the engine thread
    only decodes.

    Args:
        windows: the backend's pass (``Backend.speech_pass()``), fresh.

    Attributes:
        fed: stream samples given to the pass so far.
    """

    def __init__(self, windows: SpeechWindows) -> None:
        self.windows = windows
        self.fed = 0
        self._ready = np.zeros((0, len(windows.resets)))
        self._first = 0  # window index of _ready[0]

    def feed(self, samples: np.ndarray, at: int) -> None:
        """Run the pass on ``[n] float32`` samples that start at stream sample ``at``; the part
        the pass has had already (a block read ahead, then pushed) is skipped.

        Raises:
            ValueError: the samples leave a gap after what the pass has had.
        """
        if at > self.fed:
            raise ValueError(f"samples from {at} leave a gap after {self.fed}")
        new = samples[self.fed - at :]
        if len(new):
            self._ready = np.concatenate([self._ready, self.windows.feed(new)])
            self.fed += len(new)

    def take(self, end: int) -> np.ndarray:
        """``[k, tracks]``: the probabilities of the windows that end at or before stream sample
        ``end`` and were not taken yet, in order."""
        k = max(0, min(len(self._ready), end // VAD_WINDOW - self._first))
        out, self._ready = self._ready[:k], self._ready[k:]
        self._first += k
        return out
