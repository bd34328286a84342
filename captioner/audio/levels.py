"""Input level (RMS and peak in dBFS) per source, about 20 times a second, for a level meter."""

from __future__ import annotations

import numpy as np

from captioner.events import Level

#: Level of digital silence (dBFS); log10(0) is clamped here (events.Level contract).
SILENCE_DBFS = -120.0


def dbfs(value: float) -> float:
    """Amplitude (full scale = 1.0) to dBFS, clamped at :data:`SILENCE_DBFS`."""
    if value <= 0.0 or not np.isfinite(value):
        return SILENCE_DBFS
    return max(SILENCE_DBFS, 20.0 * float(np.log10(value)))


class LevelMeter:
    """Cuts a source's model-rate audio into windows and measures each one.

    Args:
        source: label put on the :class:`~captioner.events.Level` events.
        rate: sample rate of the fed audio, Hz.
        interval_s: window length in seconds (0.05 s -> 20 events per second).

    A full-scale sine reads -3.01 dBFS RMS and 0 dBFS peak.
    """

    def __init__(self, source: str, rate: int = 16000, interval_s: float = 0.05) -> None:
        if rate <= 0 or interval_s <= 0:
            raise ValueError("rate and interval_s must be > 0")
        self.source = source
        self.window = max(1, int(round(rate * interval_s)))
        self._sum_sq = 0.0
        self._peak = 0.0
        self._n = 0

    def feed(self, samples: np.ndarray) -> list[Level]:
        """Add ``[n] float32`` samples; return one Level per window they complete.

        When a burst completes several windows, only the newest is returned (a meter
        shows the present, and a burst must not flood the UI).
        """
        x = np.asarray(samples, dtype=np.float32)
        out: Level | None = None
        pos = 0
        while pos < len(x):
            take = min(self.window - self._n, len(x) - pos)
            part = x[pos : pos + take].astype(np.float64)
            part = np.where(np.isfinite(part), part, 0.0)
            self._sum_sq += float(np.dot(part, part))
            if take:
                self._peak = max(self._peak, float(np.max(np.abs(part))))
            self._n += take
            pos += take
            if self._n == self.window:
                out = Level(dbfs(np.sqrt(self._sum_sq / self._n)), dbfs(self._peak), self.source)
                self._sum_sq, self._peak, self._n = 0.0, 0.0, 0
        return [out] if out is not None else []
