"""The audio-source interface: start/stop, a label, native format, and blocks with stream time.

(:class:`AudioBlock`, :class:`SourceStats`, :class:`SourceError` and ``MODEL_RATE`` live in
:mod:`captioner.audio.block` and are re-exported here.)

Every source (microphone, system audio, a file played as if live) delivers
:class:`AudioBlock` objects: mono ``float32`` samples at the model rate (16 kHz by
default) with the exact stream time of their first sample. The capture side (a
PortAudio callback, a file reader) only copies raw frames into a bounded queue; the
consumer thread calls :meth:`AudioSource.read`, which takes the raw frames off the
queue, downmixes and resamples them (:mod:`captioner.audio.edge`) and stamps them.

Nothing is dropped silently: a full queue, a device overflow or a lost device is
counted in :class:`SourceStats` and reported by the live pipeline.

A device source that reopens its stream (a stall, a sound-server restart, a switch
to another output) puts a *break* in the queue: the audio before it is delivered
with the resampler's tail, the audio after it (possibly at another rate and channel
count) starts a new block whose ``gap_before`` holds the seconds of real time that
had no audio, so stream time stays true to the clock. Audio the source marked as
untrusted (captured after the sound server moved the stream to another device) is
discarded when read, never delivered. Sources queue user messages
(:class:`~captioner.events.Notice`) that the live pipeline takes with
:meth:`AudioSource.take_notices`.
"""

from __future__ import annotations

import abc
import collections
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from captioner.audio.block import MODEL_RATE, AudioBlock, SourceError, SourceStats
from captioner.audio.edge import EdgeConverter
from captioner.events import Notice

#: Shortest missing stretch (s) reported as a gap after a break; shorter ones are the
#: device's own block jitter (PortAudio blocks are 5-40 ms) and are not counted.
MIN_GAP_S = 0.1
#: Highest native rate (Hz) a device is opened at; bounds the queue until the real rate is known.
MAX_NATIVE_RATE = 192000


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
        self._queue: collections.deque = collections.deque()  # (frames | _Break, t_capture, generation)
        self._converter: EdgeConverter | None = None
        self._notices: collections.deque = collections.deque()
        self._gen = 0  # generation of the stream now delivering (a device source bumps it per open)
        self._untrusted: set[int] = set()  # generations whose queued audio must be discarded
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
        self._notices.clear()
        self._untrusted.clear()
        self._reset_counters()
        self.error = None
        self.finished = False
        self.last_callback = self._last_audio_t = self.clock()
        # a device calls back as soon as _open() has started it, before the native rate is
        # known here: bound the queue by the highest rate until then (the limit of 1 frame
        # left by _reset_counters dropped the first 0.1 s of audio, the first word of a sentence)
        self._max_queue_frames = max(1, int(self.max_queue_s * MAX_NATIVE_RATE))
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
        """Take everything queued up to the next break, convert it, and return one block
        (never blocks).

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
        at_break = False
        while True:
            try:
                frames, t_cb, gen = self._queue[0]
            except IndexError:
                break
            if isinstance(frames, _Break):
                if parts:  # deliver the audio before the break first
                    at_break = True
                    break
                self._queue.popleft()
                tail = conv.flush()
                conv = self._apply_break(frames)
                if tail.size:
                    return self._block(tail, now, 0.0)
                continue
            self._queue.popleft()
            self._popped_frames += len(frames)
            if gen in self._untrusted:  # moved to another device by the server: never delivered
                self._untrusted_frames += len(frames)
                continue
            parts.append(frames)
            newest = t_cb
            self._note_latency(now - t_cb)
        gap = 0.0
        if parts:
            raw = parts[0] if len(parts) == 1 else np.concatenate(parts)
            if self._gap_from is not None:
                # the first audio after a break: real time that passed without audio
                began = newest - len(raw) / max(1, self.native_rate)
                gap = began - self._gap_from
                gap = gap if gap >= MIN_GAP_S else 0.0
                self._gap_from = None
            self._last_audio_t = newest
            out = conv.process(raw)
        else:
            out = np.zeros(0, dtype=np.float32)
        if flush or at_break:
            tail = conv.flush()
            if tail.size:
                out = np.concatenate([out, tail]) if out.size else tail
        if out.size == 0:
            return None
        return self._block(out, newest or now, gap)

    def recent(self, seconds: float) -> np.ndarray:
        """The newest ``seconds`` of audio queued and not read yet, without taking it.

        For a level meter while nothing reads the queue (the model is still loading, see
        :mod:`captioner.engine.capture_first`). Any thread.

        Returns:
            ``[n] float32`` native-rate samples, channels averaged; empty when nothing is queued.
        """
        need = int(seconds * self.native_rate)
        parts, n = [], 0
        for frames, _t, _gen in reversed(list(self._queue)):  # a copy: the callback appends meanwhile
            if isinstance(frames, _Break) or need <= 0:
                break
            parts.append(frames)
            n += len(frames)
            if n >= need:
                break
        if not parts:
            return np.zeros(0, dtype=np.float32)
        x = np.concatenate(parts[::-1])[-need:]
        return x.mean(axis=1, dtype=np.float32) if x.ndim == 2 else x.astype(np.float32, copy=False)

    def take_notices(self) -> list[Notice]:
        """Messages for the user queued by the source since the last call (oldest first)."""
        out = []
        while True:
            try:
                out.append(self._notices.popleft())
            except IndexError:
                return out

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
            untrusted_frames=self._untrusted_frames,
            gaps=self._gaps,
            gap_s=self._gap_total,
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
            self._queue.append((frames.copy(), t, self._gen))  # deque.append is atomic; no lock
            self._pushed_frames += n  # only this thread writes it
        if self.wakeup is not None:
            self.wakeup.set()

    def _push_break(self, rate: int, channels: int) -> None:
        """Queue a break: audio after it is a new stretch at ``rate`` Hz x ``channels``
        (any thread; see the module docstring)."""
        self._queue.append((_Break(int(rate), int(channels)), self.clock(), self._gen))
        if self.wakeup is not None:
            self.wakeup.set()

    def _notify(self, message: str, severity: str = "warning", code: str = "") -> None:
        """Queue a user message (any thread); the live pipeline adds the source label."""
        self._notices.append(Notice(message, severity, code, self.label))
        if self.wakeup is not None:
            self.wakeup.set()

    def _fail(self, message: str) -> None:
        """Record a fatal device error (callback or finished-callback thread)."""
        self.error = message
        if self.wakeup is not None:
            self.wakeup.set()

    # -- internals ------------------------------------------------------------------------------
    def _apply_break(self, brk: "_Break") -> EdgeConverter:
        self._gap_from = self._last_audio_t
        if (brk.rate, brk.channels) != (self.native_rate, self.native_channels):
            self.native_rate, self.native_channels = brk.rate, brk.channels
            self._stats.native_rate = brk.rate
        self._converter = EdgeConverter(self.native_rate, self.native_channels, self.target_rate)
        return self._converter

    def _block(self, out: np.ndarray, captured_at: float, gap: float) -> AudioBlock:
        if gap > 0:
            self._gaps += 1
            self._gap_total += gap
        start = self._stats.samples_out / self.target_rate + self._gap_total
        self._stats.samples_out += out.size
        return AudioBlock(out, start, self.label, self.target_rate, captured_at, gap)

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
        self._untrusted_frames = 0
        self._gaps = 0
        self._gap_total = 0.0
        self._gap_from: float | None = None  # clock time of the last audio before a break
        self._last_audio_t = 0.0

    def _note_latency(self, dt: float) -> None:
        dt = max(0.0, dt)
        self._lat_sum += dt
        self._lat_n += 1
        if dt > self._lat_max:
            self._lat_max = dt

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label!r}: {self.description}>"


@dataclass(frozen=True)
class _Break:
    """Queue marker: the stream was reopened (or stalled); the audio after it is at ``rate`` x ``channels``."""

    rate: int
    channels: int


__all__ = ["MODEL_RATE", "AudioBlock", "AudioSource", "SourceError", "SourceStats"]
