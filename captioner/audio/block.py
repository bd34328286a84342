"""What every audio source delivers (:class:`AudioBlock`) and counts (:class:`SourceStats`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Rate (Hz) blocks are delivered at unless a source is told otherwise (the default
#: model and both seed model families take 16 kHz input).
MODEL_RATE = 16000


class SourceError(RuntimeError):
    """A source could not be opened or stopped working. The message says what and how to fix it."""


@dataclass(frozen=True)
class AudioBlock:
    """A block of model-ready audio from one source.

    Attributes:
        samples: ``[n] float32`` mono samples in [-1, 1] at ``rate`` Hz (``n >= 1``).
        start: stream time (s) of ``samples[0]``: output samples emitted before it
            divided by ``rate``, so 1.000 s of device audio is exactly 16000 samples.
        source: label of the source ("You", "Meeting", a file name).
        rate: sample rate of ``samples`` in Hz (the model rate).
        captured_at: ``time.monotonic()`` when the newest raw frames behind this block
            entered the queue (the capture callback ran); used for latency stats.
        gap_before: seconds of real time with no audio just before ``samples[0]``
            (a stall or a reopened stream; 0.0 normally). ``start`` already counts it.
    """

    samples: np.ndarray
    start: float
    source: str
    rate: int = MODEL_RATE
    captured_at: float = 0.0
    gap_before: float = 0.0

    @property
    def end(self) -> float:
        """Stream time (s) just after the last sample."""
        return self.start + len(self.samples) / self.rate

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return len(self.samples) / self.rate


@dataclass
class SourceStats:
    """Counters of one source since :meth:`AudioSource.start` (all cumulative).

    Attributes:
        callbacks: capture callbacks (or file reads) so far.
        frames_in: native frames captured (per channel).
        samples_out: model-rate samples delivered by :meth:`AudioSource.read`.
        overflows: input overflows reported by the device (PortAudio status flags);
            the device lost audio before it reached us.
        dropped_blocks: callback blocks discarded because the queue was full.
        dropped_frames: native frames in those blocks.
        queued_frames: native frames waiting in the queue now.
        latency_mean_ms: mean ms from callback to the block leaving the queue.
        latency_max_ms: worst such latency.
        latency_count: how many raw blocks the latency figures cover.
        native_rate: rate (Hz) the device is opened at now.
        untrusted_frames: native frames discarded because the sound server had moved
            the stream to another device (never delivered).
        gaps: breaks with missing audio so far; gap_s: their seconds in total.
    """

    callbacks: int = 0
    frames_in: int = 0
    samples_out: int = 0
    overflows: int = 0
    dropped_blocks: int = 0
    dropped_frames: int = 0
    queued_frames: int = 0
    latency_mean_ms: float = 0.0
    latency_max_ms: float = 0.0
    latency_count: int = 0
    native_rate: int = 0
    untrusted_frames: int = 0
    gaps: int = 0
    gap_s: float = 0.0

    @property
    def dropped_s(self) -> float:
        """Seconds of audio dropped by a full queue (``dropped_frames / native_rate``)."""
        return self.dropped_frames / self.native_rate if self.native_rate else 0.0

    @property
    def queued_s(self) -> float:
        """Seconds of audio waiting in the queue now."""
        return self.queued_frames / self.native_rate if self.native_rate else 0.0


__all__ = ["MODEL_RATE", "AudioBlock", "SourceError", "SourceStats"]
