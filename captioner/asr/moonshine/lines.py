"""Cutting one source's audio into *lines* (stretches of speech between pauses) with its own VAD.

The default model decodes a line as one clip, so where a line starts and ends decides what
the model reads. Each session has its own :class:`LineSegmenter` with its own Silero VAD
state (the loaded network is shared, :class:`captioner.asr.vad.SileroVad`): two sources
decoded by one backend can never move each other's line boundaries (the Moonshine runtime
kept one VAD state per process, DESIGN section 4).

Rules (the Moonshine runtime's VAD segmentation, on stream time, no wall clock):

* the speech probability of every 32 ms window is averaged over the last
  :data:`SMOOTH_WINDOWS` windows (0.5 s);
* a line opens when that average reaches :data:`THRESHOLD`; it starts
  :data:`LOOK_BEHIND_S` before the first window of the average that was speech on its own
  (the onset of the first word);
* it closes when the average falls below the threshold again (so a line ends with about
  0.25 s of the pause that ended it), or at the end of the stream (:meth:`finish`: the last
  word of a file or of a Stop is kept);
* a line longer than ``max_line_s`` is cut at its quietest window in the last
  :data:`CUT_SEARCH_S` seconds (a short pause between words where there is one) and the
  rest continues as a new open line.

Positions are sample indices at 16 kHz from the start of the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from captioner.asr.vad import VAD_WINDOW

#: Speech probability (0..1) the smoothed VAD must reach for speech (the runtime's ``vad_threshold``).
THRESHOLD = 0.5
#: Windows (x 32 ms) averaged: 0.5 s, the runtime's ``vad_window_duration``.
SMOOTH_WINDOWS = 16
#: Audio kept before the detected onset (s): the average rises ~0.25 s after a word starts.
LOOK_BEHIND_S = 0.25
#: A line cap is cut at the quietest window of its last this many seconds.
CUT_SEARCH_S = 2.0
#: Default longest line (s): bounds a re-decode and the delay of a final.
MAX_LINE_S = 8.0


@dataclass(frozen=True)
class LineEvent:
    """A line opened (``end`` None) or closed, in session samples (16 kHz).

    Attributes:
        line: the line's number in its session (0, 1, ...).
        start: first sample of the line.
        end: one past its last sample, or None while it is open.
    """

    line: int
    start: int
    end: int | None = None


class LineSegmenter:
    """One session's line segmentation (see the module docstring).

    Args:
        vad: a streaming VAD ``vad(window [512] float32, state) -> (p, state)`` with an
            ``initial_state()`` (the shared :class:`~captioner.asr.vad.SileroVad`), or None
            when every :meth:`feed` brings the probabilities computed elsewhere (the
            session's one VAD pass, :class:`~captioner.asr.vad_stream.SpeechWindows`).
        max_line_s: longest line (s).
        sample_rate: 16000 (the VAD's rate).
    """

    def __init__(self, vad: Any, max_line_s: float = MAX_LINE_S, sample_rate: int = 16000) -> None:
        self.vad = vad
        self.max_line = int(max_line_s * sample_rate)
        self.look_behind = int(LOOK_BEHIND_S * sample_rate)
        self.cut_search = int(CUT_SEARCH_S * sample_rate) // VAD_WINDOW
        self._state = vad.initial_state() if vad is not None and hasattr(vad, "initial_state") else None
        self._carry = np.zeros(0, np.float32)
        self._n = 0  # samples consumed by the VAD (whole windows)
        self._probs: list[float] = []  # the last SMOOTH_WINDOWS probabilities
        self._line_probs: list[float] = []  # probabilities of the open line's windows (for a cap cut)
        self.open_start: int | None = None
        self._last_end = 0
        self.lines = 0

    @property
    def position(self) -> int:
        """Samples consumed by the VAD so far (a multiple of 512)."""
        return self._n

    def feed(self, samples: np.ndarray, probs: Sequence[float] | None = None) -> list[LineEvent]:
        """Take ``[n] float32`` samples; returns the lines opened and closed, in order.

        Args:
            samples: ``[n] float32`` at 16 kHz.
            probs: the speech probability of each window these samples complete
                (``(pending + n) // 512`` values, computed elsewhere on the same samples);
                None: this segmenter's ``vad`` computes them.

        Raises:
            ValueError: ``probs`` does not hold one value per completed window.
        """
        x = np.asarray(samples, dtype=np.float32)
        if self._carry.size:
            x = np.concatenate([self._carry, x])
        out: list[LineEvent] = []
        whole = len(x) - len(x) % VAD_WINDOW
        if probs is not None and len(probs) != whole // VAD_WINDOW:
            raise ValueError(f"{len(probs)} probabilities for {whole // VAD_WINDOW} windows")
        for k, i in enumerate(range(0, whole, VAD_WINDOW)):
            if probs is None:
                window = x[i : i + VAD_WINDOW]
                if not np.all(np.isfinite(window)):
                    window = np.nan_to_num(window, nan=0.0, posinf=0.0, neginf=0.0)
                p, self._state = self.vad(window, self._state)
            else:
                p = probs[k]
            self._n += VAD_WINDOW
            out += self._window(float(p))
        self._carry = x[whole:].copy()
        return out

    def finish(self) -> list[LineEvent]:
        """End of the stream: the open line (if any) closes at the last sample fed."""
        end = self._n + len(self._carry)
        self._carry = np.zeros(0, np.float32)
        if self.open_start is None:
            return []
        return [self._close(end)]

    # -- internals -----------------------------------------------------------------------------
    def _window(self, p: float) -> list[LineEvent]:
        self._probs.append(p)
        if len(self._probs) > SMOOTH_WINDOWS:
            del self._probs[0]
        speech = sum(self._probs) / len(self._probs) >= THRESHOLD
        if self.open_start is None:
            if not speech:
                return []
            first = next(i for i, q in enumerate(self._probs) if q >= THRESHOLD)
            onset = self._n - (len(self._probs) - first) * VAD_WINDOW
            self.open_start = max(self._last_end, onset - self.look_behind, 0)
            self._line_probs = [p]
            return [LineEvent(self.lines, self.open_start)]
        self._line_probs.append(p)
        if not speech:
            return [self._close(self._n)]
        if self._n - self.open_start < self.max_line:
            return []
        # the line cap: cut at the quietest window of the last CUT_SEARCH_S, keep talking after it
        tail = self._line_probs[-self.cut_search :]
        k = int(np.argmin(tail))
        cut = self._n - (len(tail) - k - 1) * VAD_WINDOW
        rest = self._line_probs[len(self._line_probs) - (len(tail) - k - 1) :]
        out = [self._close(cut)]
        self.open_start = cut
        self._line_probs = rest
        out.append(LineEvent(self.lines, cut))
        return out

    def _close(self, end: int) -> LineEvent:
        ev = LineEvent(self.lines, int(self.open_start or 0), int(end))
        self._last_end = int(end)
        self.open_start = None
        self._line_probs = []
        self.lines += 1
        return ev
