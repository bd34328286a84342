"""The audio-source interface: start/stop, a label, native format, and blocks with stream time.

Every source (microphone, system audio, a file played as if live) delivers
:class:`AudioBlock` objects: mono ``float32`` samples at the model rate (16 kHz by
default) with the exact stream time of their first sample. The capture side (a
PortAudio callback, a file reader) only copies raw frames into a bounded queue; the
consumer thread calls :meth:`AudioSource.read`, which takes the raw frames off the
queue, downmixes and resamples them (:mod:`captioner.audio.edge`) and stamps them.

Nothing is dropped silently: a full queue, a device overflow or a lost device is
counted in :class:`SourceStats` and reported by the live pipeline.
"""

from __future__ import annotations

import abc
import collections
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from captioner.audio.edge import EdgeConverter

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
    """

    samples: np.ndarray
    start: float
    source: str
    rate: int = MODEL_RATE
    captured_at: float = 0.0

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

    @property
    def dropped_s(self) -> float:
        """Seconds of audio dropped by a full queue (``dropped_frames / native_rate``)."""
        return self.dropped_frames / self.native_rate if self.native_rate else 0.0

    @property
    def queued_s(self) -> float:
        """Seconds of audio waiting in the queue now."""
        return self.queued_frames / self.native_rate if self.native_rate else 0.0


class AudioSource(abc.ABC):
    """A live (or live-like) audio input delivering :class:`AudioBlock` objects.

    Subclasses open their device in :meth:`_open` and arrange for :meth:`_push` to be
    called with raw ``[frames, channels] float32`` arrays (from the PortAudio
    callback thread or a reader); everything else lives here.

    Args:
        label: name shown with its text ("You", "Meeting"); may be changed any time.
        target_rate: rate (Hz) of delivered blocks (the backend's ``sample_rate``).
        max_queue_s: capacity of the raw queue in seconds of native audio; when it is
            full, new callback blocks are dropped and counted (never silently).
        clock: monotonic clock in seconds (tests pass a fake one).

    Attributes:
        native_rate: rate (Hz) the device or file is opened at (set by :meth:`start`).
        native_channels: channels it is opened with (set by :meth:`start`).
        last_callback: ``clock()`` of the most recent capture callback, or of
            :meth:`start` before the first one (the watchdog reads it).
        error: a message when the device reported a fatal error, else ``None``.
        finished: True when a finite source (a file) has delivered everything.
        wakeup: optional event set after every push so a consumer can sleep on it.
    """

    #: "microphone", "system" or "file": what kind of input this is (for messages).
    kind = "input"

    def __init__(
        self,
        label: str,
        target_rate: int = MODEL_RATE,
        max_queue_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if target_rate <= 0:
            raise ValueError(f"target_rate must be > 0 Hz, got {target_rate}")
        if max_queue_s <= 0:
            raise ValueError(f"max_queue_s must be > 0 s, got {max_queue_s}")
        self.label = label
        self.target_rate = int(target_rate)
        self.max_queue_s = float(max_queue_s)
        self.clock = clock
        self.native_rate = 0
        self.native_channels = 0
        self.last_callback = 0.0
        self.error: str | None = None
        self.finished = False
        self.wakeup: threading.Event | None = None
        self._running = False
        self._queue: collections.deque = collections.deque()
        self._converter: EdgeConverter | None = None
        self._reset_counters()

    # -- to implement -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def description(self) -> str:
        """Human name of the underlying device or file, for messages."""

    @abc.abstractmethod
    def _open(self) -> tuple[int, int]:
        """Open and start capture; return ``(native_rate, native_channels)``.

        Raises:
            SourceError: the device or file cannot be opened (message says how to fix).
        """

    @abc.abstractmethod
    def _close(self) -> None:
        """Stop capture and release the device. Must not hang and must be idempotent."""

    # -- public API ----------------------------------------------------------------------------
    @property
    def is_running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._running

    @property
    def callback_count(self) -> int:
        """Capture callbacks since :meth:`start` (0 until the device delivers)."""
        return self._callbacks

    def start(self) -> None:
        """Open the device and start capturing; stream time restarts at 0.

        Raises:
            SourceError: the device cannot be opened; the source stays stopped.
        """
        if self._running:
            return
        self._queue.clear()
        self._reset_counters()
        self.error = None
        self.finished = False
        self.last_callback = self.clock()
        rate, channels = self._open()
        self.native_rate, self.native_channels = int(rate), int(channels)
        self._max_queue_frames = max(1, int(self.max_queue_s * self.native_rate))
        self._converter = EdgeConverter(self.native_rate, self.native_channels, self.target_rate)
        self._stats.native_rate = self.native_rate
        self._running = True

    def stop(self) -> None:
        """Stop capturing and release the device. Queued audio stays readable (drain it
        with :meth:`read`), and the resampler tail is delivered by the last read."""
        if not self._running:
            return
        self._running = False
        try:
            self._close()
        finally:
            if self.wakeup is not None:
                self.wakeup.set()

    def read(self, flush: bool = False) -> AudioBlock | None:
        """Take everything queued, convert it, and return one block (never blocks).

        Args:
            flush: also drain the resampler's tail; use it once, after :meth:`stop`
                or when the source finished, so the stream time adds up exactly.

        Returns:
            An :class:`AudioBlock` of ``[n] float32`` samples at ``target_rate`` Hz, or
            ``None`` when nothing new is available.
        """
        conv = self._converter
        if conv is None:
            return None
        parts = []
        newest = 0.0
        now = self.clock()
        while True:
            try:
                frames, t_cb = self._queue.popleft()
            except IndexError:
                break
            self._popped_frames += len(frames)
            parts.append(frames)
            newest = t_cb
            self._note_latency(now - t_cb)
        if parts:
            raw = parts[0] if len(parts) == 1 else np.concatenate(parts)
            out = conv.process(raw)
        else:
            out = np.zeros(0, dtype=np.float32)
        if flush:
            tail = conv.flush()
            if tail.size:
                out = np.concatenate([out, tail]) if out.size else tail
        if out.size == 0:
            return None
        start = self._stats.samples_out / self.target_rate
        self._stats.samples_out += out.size
        return AudioBlock(out, start, self.label, self.target_rate, newest or now)

    def stats(self) -> SourceStats:
        """A snapshot of the counters (see :class:`SourceStats`)."""
        s = self._stats
        return SourceStats(
            callbacks=self._callbacks,
            frames_in=self._frames_in,
            samples_out=s.samples_out,
            overflows=self._overflows,
            dropped_blocks=self._dropped_blocks,
            dropped_frames=self._dropped_frames,
            queued_frames=max(0, self._pushed_frames - self._popped_frames),
            latency_mean_ms=1000.0 * self._lat_sum / self._lat_n if self._lat_n else 0.0,
            latency_max_ms=1000.0 * self._lat_max,
            latency_count=self._lat_n,
            native_rate=self.native_rate,
        )

    # -- capture side (callback thread) --------------------------------------------------------
    def _push(self, frames: np.ndarray, overflow: bool = False) -> None:
        """Queue one raw block; called from the capture thread. Never blocks.

        Args:
            frames: ``[n, native_channels]`` float32 frames, owned by the caller
                (PortAudio reuses its buffer, so this copies).
            overflow: the device reported an input overflow before this block.
        """
        self.last_callback = t = self.clock()
        self._callbacks += 1
        n = len(frames)
        self._frames_in += n
        if overflow:
            self._overflows += 1
        if self._pushed_frames - self._popped_frames + n > self._max_queue_frames:
            self._dropped_blocks += 1
            self._dropped_frames += n
        else:
            self._queue.append((frames.copy(), t))  # deque.append is atomic; no lock
            self._pushed_frames += n  # only this thread writes it
        if self.wakeup is not None:
            self.wakeup.set()

    def _fail(self, message: str) -> None:
        """Record a fatal device error (callback or finished-callback thread)."""
        self.error = message
        if self.wakeup is not None:
            self.wakeup.set()

    # -- internals ------------------------------------------------------------------------------
    def _reset_counters(self) -> None:
        self._stats = SourceStats(native_rate=self.native_rate)
        self._callbacks = 0
        self._frames_in = 0
        self._overflows = 0
        self._dropped_blocks = 0
        self._dropped_frames = 0
        self._pushed_frames = 0  # written by the capture thread only
        self._popped_frames = 0  # written by the consumer thread only
        self._max_queue_frames = 1
        self._lat_sum = 0.0
        self._lat_n = 0
        self._lat_max = 0.0

    def _note_latency(self, dt: float) -> None:
        dt = max(0.0, dt)
        self._lat_sum += dt
        self._lat_n += 1
        if dt > self._lat_max:
            self._lat_max = dt

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label!r}: {self.description}>"


__all__ = ["MODEL_RATE", "AudioBlock", "AudioSource", "SourceError", "SourceStats"]
