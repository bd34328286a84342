"""A file played as if it were a live device (demos, tests, benchmarks).

Decoding is soundfile's. There is no thread: every :meth:`FileSource.read` first
takes from the file the frames that are *due* by now (wall-clock time since
:meth:`start` times ``speed`` times the file's rate, in whole blocks of ``block_s``, as a
device delivers them; the last block of the file may be shorter),
pushes them through the same queue, downmix and streaming resampler as a device,
and then reads like any source. With ``realtime=False`` each read takes the next
``fast_read_s`` seconds at once (as fast as the consumer goes).
"""

from __future__ import annotations

import os
import time
from typing import Callable

import soundfile as sf

from captioner.audio.source import MODEL_RATE, AudioBlock, AudioSource, SourceError


class FileSource(AudioSource):
    """Plays an audio file of any rate and channel count as a live source.

    Args:
        path: audio file soundfile can read (WAV, FLAC, OGG, ...).
        label: source label; defaults to the file name.
        realtime: pace the file at ``speed`` x real time (True) or deliver it as fast
            as it is read (False).
        speed: playback speed factor for ``realtime`` (1.0 = live).
        block_s: size of the simulated device blocks, seconds.
        fast_read_s: seconds of audio one read takes when ``realtime`` is False.
        target_rate: delivered rate in Hz.
        clock: monotonic clock (s).

    Attributes:
        finished: True once the whole file has been queued; keep reading (with
            ``flush=True`` once) to get the rest.
    """

    kind = "file"

    def __init__(
        self,
        path: str | os.PathLike,
        label: str | None = None,
        realtime: bool = True,
        speed: float = 1.0,
        block_s: float = 0.02,
        fast_read_s: float = 1.0,
        target_rate: int = MODEL_RATE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = os.fspath(path)
        if speed <= 0 or block_s <= 0 or fast_read_s <= 0:
            raise ValueError("speed, block_s and fast_read_s must be > 0")
        super().__init__(label or os.path.basename(self.path), target_rate, max(30.0, 2 * fast_read_s), clock)
        self.realtime = realtime
        self.speed = float(speed)
        self.block_s = float(block_s)
        self.fast_read_s = float(fast_read_s)
        self._file: sf.SoundFile | None = None

    @property
    def description(self) -> str:
        """The file path."""
        return self.path

    def _open(self) -> tuple[int, int]:
        if not os.path.exists(self.path):
            raise SourceError(f"audio file not found: {self.path}")
        try:
            self._file = sf.SoundFile(self.path)
        except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
            raise SourceError(
                f"cannot read {self.path} as audio ({exc}); use WAV, FLAC or OGG, or convert it with ffmpeg/sox"
            ) from exc
        self._t0 = self.clock()
        self._frames_read = 0
        return self._file.samplerate, self._file.channels

    def _close(self) -> None:
        f, self._file = self._file, None
        if f is not None:
            f.close()

    def _pump(self) -> None:
        f = self._file
        if f is None or self.finished or not self.is_running:
            return
        rate = f.samplerate
        if self.realtime:
            due = int((self.clock() - self._t0) * self.speed * rate) - self._frames_read
        else:
            due = int(self.fast_read_s * rate)
        block = max(1, int(self.block_s * rate))
        if self.realtime:  # a device delivers whole blocks, never the few frames due so far
            due -= due % block
        while due > 0:
            data = f.read(due, dtype="float32", always_2d=True)  # one read, pushed block by block
            if len(data) == 0:
                self.finished = True
                if self.wakeup is not None:
                    self.wakeup.set()
                break
            self._frames_read += len(data)
            due -= len(data)
            for i in range(0, len(data), block):
                self._push(data[i : i + block])

    def read(self, flush: bool = False) -> AudioBlock | None:
        """Queue the frames due by now, then read as :meth:`AudioSource.read` does."""
        self._pump()
        return super().read(flush)

    def seconds_until_due(self) -> float:
        """Seconds until the next block is due (0 when not paced or finished)."""
        f = self._file
        if f is None or not self.realtime or self.finished:
            return 0.0
        next_frame = self._frames_read + max(1, int(self.block_s * f.samplerate))
        return max(0.0, self._t0 + next_frame / (self.speed * f.samplerate) - self.clock())
