"""Streaming conversion at the edge: any channel count and rate in, mono model rate out.

Downmixing averages every channel (:func:`captioner.audio.fileio.downmix`), so the
centre and surround channels of a 5.1 mix count like the others and dialogue in
the centre survives. Resampling is soxr's streaming resampler
(``soxr.ResampleStream``), which keeps its filter state between blocks: the output
does not depend on how the input was split, and after :meth:`EdgeConverter.flush`
the number of output samples is ``round(frames_in * rate_out / rate_in)`` exactly
(1.000 s of 44.1 kHz audio gives 16000 samples; measured 600 s at 44.1, 48, 22.05,
8 and 96 kHz in random block sizes: no drift). Between flushes the output trails
the input by the resampler's delay only (about 30 ms at 44.1 kHz, quality "HQ").
"""

from __future__ import annotations

import numpy as np
import soxr

from captioner.audio.fileio import downmix

#: soxr quality for live audio: "HQ" is soxr's default and well above what a speech
#: model needs; "VHQ" (used for whole files) costs more CPU in the capture path.
LIVE_QUALITY = "HQ"


class EdgeConverter:
    """Downmix + streaming resample of one live stream.

    Args:
        rate_in: native rate of the device or file, Hz.
        channels: native channel count (>= 1).
        rate_out: model rate, Hz.
        quality: soxr quality string ("QQ", "LQ", "MQ", "HQ", "VHQ").

    Attributes:
        frames_in: native frames processed so far.
        samples_out: output samples returned so far.

    Raises:
        ValueError: a rate or the channel count is not positive.
    """

    def __init__(self, rate_in: int, channels: int, rate_out: int, quality: str = LIVE_QUALITY) -> None:
        if rate_in <= 0 or rate_out <= 0:
            raise ValueError(f"sample rates must be > 0 Hz, got {rate_in} -> {rate_out}")
        if channels < 1:
            raise ValueError(f"channel count must be >= 1, got {channels}")
        self.rate_in = int(rate_in)
        self.rate_out = int(rate_out)
        self.channels = int(channels)
        self.frames_in = 0
        self.samples_out = 0
        self._flushed = False
        self._stream = (
            None
            if self.rate_in == self.rate_out
            else soxr.ResampleStream(self.rate_in, self.rate_out, 1, dtype="float32", quality=quality)
        )

    def process(self, frames: np.ndarray) -> np.ndarray:
        """Convert the next native block.

        Args:
            frames: ``[n, channels]`` or ``[n]`` samples (float32 in [-1, 1]).

        Returns:
            ``[m] float32`` mono samples at ``rate_out`` (``m`` may be 0 while the
            resampler fills its filter).

        Raises:
            ValueError: wrong channel count, or called after :meth:`flush`.
        """
        if self._flushed:
            raise ValueError("converter already flushed; make a new one for a new stream")
        arr = np.asarray(frames, dtype=np.float32)
        if arr.ndim == 2 and arr.shape[1] != self.channels:
            raise ValueError(f"expected {self.channels} channels, got block of shape {arr.shape}")
        mono = downmix(arr)
        self.frames_in += len(mono)
        out = mono if self._stream is None else self._stream.resample_chunk(mono)
        out = np.ascontiguousarray(out, dtype=np.float32)
        self.samples_out += len(out)
        return out

    def flush(self) -> np.ndarray:
        """End the stream: return the resampler's remaining ``[m] float32`` samples.

        After this, ``samples_out == round(frames_in * rate_out / rate_in)``.
        Idempotent (a second call returns an empty array).
        """
        if self._flushed or self._stream is None:
            self._flushed = True
            return np.zeros(0, dtype=np.float32)
        self._flushed = True
        out = np.ascontiguousarray(self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True))
        self.samples_out += len(out)
        return out.astype(np.float32, copy=False)

    @property
    def expected_samples(self) -> int:
        """``round(frames_in * rate_out / rate_in)``: what a flush brings ``samples_out`` to."""
        return int(round(self.frames_in * self.rate_out / self.rate_in))
