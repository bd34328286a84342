"""Chunk geometry: how many samples one model call takes and how far the stream advances.

Two numbers control streaming buffers (TensorFlowASR inference page, section 4.4):

* ``chunk_size`` -- samples that one model call takes;
* ``chunk_step`` -- samples the buffer advances after that call.

They differ when feature frames overlap: the last ``chunk_size - chunk_step``
samples of a chunk are the first samples of the next one (left context only,
already decoded). For clocked models (Audio8) size == step == one clock step.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Mapping

# Audio8 ASR Infinite model card, "Optimized operation points":
# clock ms -> (frame_len, streaming_n_left_pad_tokens, post-trained delays ms).
AUDIO8_OPERATING_POINTS: dict[int, tuple[int, int, tuple[int, ...]]] = {
    80: (4, 18, (240, 320, 480, 560)),
    120: (6, 12, (240, 480)),
    160: (8, 9, (320, 480)),
}
#: Delay range named by the model card ("transcription delay (240-560 ms)").
AUDIO8_MIN_DELAY_MS = 240
AUDIO8_MAX_DELAY_MS = 2400


class GeometryError(ValueError):
    """An impossible clock/delay/chunk combination; the message lists allowed values."""


class PostTrainedWarning(UserWarning):
    """A valid clock/delay pair that the model was not post-trained on."""


@dataclass(frozen=True)
class ChunkGeometry:
    """Streaming chunk layout of one backend.

    Attributes:
        sample_rate: samples per second of the model input (Hz), e.g. 16000.
        chunk_size: samples per model call (>= 1).
        chunk_step: samples the stream advances per call (1 <= step <= size).
        clock_ms: clock step in ms for clocked models (one text token per step),
            else ``None``.
        delay_ms: transcription delay in ms for delayed-streams models, else ``None``.
    """

    sample_rate: int
    chunk_size: int
    chunk_step: int
    clock_ms: int | None = None
    delay_ms: int | None = None

    def __post_init__(self) -> None:
        if self.sample_rate <= 0:
            raise GeometryError(f"sample_rate must be positive, got {self.sample_rate}")
        if self.chunk_size < 1:
            raise GeometryError(f"chunk_size must be >= 1 sample, got {self.chunk_size}")
        if not 1 <= self.chunk_step <= self.chunk_size:
            raise GeometryError(
                f"chunk_step must be between 1 and chunk_size={self.chunk_size}, got {self.chunk_step}"
            )

    @property
    def overlap(self) -> int:
        """Samples kept after a call as left context of the next chunk (size - step)."""
        return self.chunk_size - self.chunk_step

    @property
    def chunk_seconds(self) -> float:
        """Seconds of *new* audio per call (step / sample_rate)."""
        return self.chunk_step / self.sample_rate

    @property
    def num_delay_tokens(self) -> int | None:
        """delay / clock for clocked models (model card: delay is a whole multiple of the clock)."""
        if self.clock_ms is None or self.delay_ms is None:
            return None
        return self.delay_ms // self.clock_ms

    @classmethod
    def from_clock(
        cls,
        clock_ms: int,
        delay_ms: int,
        sample_rate: int = 16000,
        operating_points: Mapping[int, tuple[int, int, tuple[int, ...]]] = AUDIO8_OPERATING_POINTS,
    ) -> "ChunkGeometry":
        """Geometry of a clocked model: one chunk == one clock step, no overlap.

        Args:
            clock_ms: audio clock in ms; must be a key of ``operating_points``
                (80, 120 or 160 for Audio8).
            delay_ms: transcription delay in ms; must be a positive whole multiple
                of ``clock_ms`` (model card). Pairs that were not post-trained are
                accepted with a :class:`PostTrainedWarning`.
            sample_rate: Hz.

        Raises:
            GeometryError: unknown clock, or delay not a multiple of the clock /
                out of range; the message lists the allowed values.
        """
        clock_ms, delay_ms = int(clock_ms), int(delay_ms)
        if clock_ms not in operating_points:
            allowed = ", ".join(str(c) for c in sorted(operating_points))
            raise GeometryError(f"clock {clock_ms} ms is not supported; choose one of: {allowed} ms")
        trained = operating_points[clock_ms][2]
        if delay_ms % clock_ms or not AUDIO8_MIN_DELAY_MS <= delay_ms <= AUDIO8_MAX_DELAY_MS:
            raise GeometryError(
                f"delay {delay_ms} ms is not valid at the {clock_ms} ms clock: it must be a multiple of "
                f"{clock_ms} ms between {AUDIO8_MIN_DELAY_MS} and {AUDIO8_MAX_DELAY_MS} ms, e.g. "
                f"{', '.join(str(d) for d in allowed_delays(clock_ms)[:6])}, ... ms "
                f"(post-trained: {', '.join(str(d) for d in trained)} ms)"
            )
        if delay_ms not in trained:
            warnings.warn(
                f"delay {delay_ms} ms at the {clock_ms} ms clock was not post-trained "
                f"(post-trained: {', '.join(str(d) for d in trained)} ms); accuracy may be lower",
                PostTrainedWarning,
                stacklevel=2,
            )
        samples = sample_rate * clock_ms // 1000
        return cls(sample_rate, samples, samples, clock_ms, delay_ms)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, int]) -> "ChunkGeometry":
        """Geometry from TensorFlowASR export metadata (``TFASR_METADATA``).

        Args:
            metadata: mapping with int ``signal_chunk_size``, ``signal_chunk_step``
                and ``sample_rate`` (TensorFlowASR ``tflite`` exporter).

        Raises:
            GeometryError: a key is missing or a value is not a positive int.
        """
        try:
            size = int(metadata["signal_chunk_size"])
            step = int(metadata["signal_chunk_step"])
            rate = int(metadata["sample_rate"])
        except (KeyError, TypeError, ValueError) as exc:
            raise GeometryError(
                "export metadata must have integer signal_chunk_size, signal_chunk_step and sample_rate"
            ) from exc
        return cls(rate, size, step)


def allowed_delays(clock_ms: int) -> list[int]:
    """All valid delays (ms) at ``clock_ms``: multiples of the clock within the supported range."""
    first = -(-AUDIO8_MIN_DELAY_MS // clock_ms) * clock_ms
    return list(range(first, AUDIO8_MAX_DELAY_MS + 1, clock_ms))


def post_trained_delays(clock_ms: int) -> tuple[int, ...]:
    """Post-trained delays (ms) at ``clock_ms`` from the model card, () for an unknown clock."""
    point = AUDIO8_OPERATING_POINTS.get(int(clock_ms))
    return point[2] if point else ()
