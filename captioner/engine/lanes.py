"""A live source's lane: its session, its level meter, and the captured audio waiting for the decoder.

:class:`~captioner.engine.live.LiveCaptioner` runs two threads per run: the *capture*
thread reads each source and queues its blocks on the source's :class:`Lane`; the
*decode* thread takes them off in steps and feeds the lane's session. The queue holds
``[n] float32`` blocks at the model's sample rate and :class:`Gap` markers (a stall the
source reported, with the notice that tells its true times), in capture order.

The counters make the backlog exact without locking the capture thread: ``pushed`` is
written by the capture thread only, ``popped``/``skipped`` under :attr:`Lane.lock`, so
``pending_samples = pushed - popped`` (issue 30.1: a stop notice that counted audio the
model was already decoding overstated the skipped audio by 0.2-0.4 s).

Qt-free, model-free.
"""

from __future__ import annotations

import collections
import dataclasses
import threading

import numpy as np

from captioner.audio.levels import LevelMeter
from captioner.audio.source import AudioSource
from captioner.engine.session import StreamingSession
from captioner.engine.sound_captions import SoundTracker
from captioner.events import Notice


@dataclasses.dataclass(frozen=True)
class Gap:
    """Queue marker: ``seconds`` of real time without audio and the notice that tells it."""

    seconds: float
    notice: Notice


@dataclasses.dataclass
class Lane:
    """One source with its session, meter and the audio waiting for the decoder.

    Attributes:
        pushed: samples queued by the capture thread (only it writes this).
        popped: samples taken off the queue (decoded or skipped; under :attr:`lock`).
        dropped: samples dropped because the backlog was full (capture thread), in
            ``drops`` separate times.
        skipped: samples discarded undecoded by a stop without drain (under :attr:`lock`).
        capture_done: the capture thread will queue nothing more; ``end_notice`` says why.
        ended: the decode thread ended the session.
        gaps_decoded: seconds of gaps the decode thread has passed.
        shift: stream time (s) of the session's t=0 (samples before it + gaps).
        sounds: the source's sound detector (issue 49), fed by the capture thread as the audio is
            queued, so a sound's caption never waits for the speech model; ``None``: off.
        gap_samples: samples of gaps the capture thread has queued markers for (at the source's
            rate): ``pushed + gap_samples`` is the stream index of the next queued sample, in the
            times the session's events take once :attr:`shift` is added.
    """

    source: AudioSource
    session: StreamingSession
    meter: LevelMeter
    pending: collections.deque = dataclasses.field(default_factory=collections.deque)
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)
    pushed: int = 0
    popped: int = 0
    dropped: int = 0
    skipped: int = 0
    drops: int = 0
    capture_done: bool = False
    end_notice: Notice | None = None
    ended: bool = False
    drops_reported: int = 0
    gaps_decoded: float = 0.0
    shift: float = 0.0
    sounds: SoundTracker | None = None
    gap_samples: int = 0

    @property
    def pending_samples(self) -> int:
        """Samples queued and not yet taken (decoded or skipped)."""
        return self.pushed - self.popped

    def enqueue(self, samples: np.ndarray, max_pending: int) -> np.ndarray:
        """Queue ``[n] float32`` samples (capture thread); past ``max_pending`` queued samples the
        rest is dropped and counted (``dropped``, ``drops``), never silently.

        Returns:
            The samples queued (``samples`` or its first part; ``[0]`` when all were dropped).
        """
        room = max_pending - self.pending_samples
        if len(samples) > room:  # keep what fits, drop (and count) the rest
            self.dropped += len(samples) - max(0, room)
            self.drops += 1
            samples = samples[: max(0, room)]
        if len(samples):
            self.pending.append(samples)
            self.pushed += len(samples)
        return samples

    def mark_gap(self, gap: Gap) -> None:
        """Queue a gap marker (capture thread): the decoder restarts the session there."""
        self.pending.append(gap)

    def take(self, most: int | None = None, skip: bool = False) -> np.ndarray | None:
        """The audio queued before the next gap, at most ``most`` samples of it (None = all),
        as one ``[n] float32`` array, or None when there is none; with ``skip`` it is counted
        as skipped (never decoded) and None is returned."""
        parts, n = [], 0
        with self.lock:  # skip_all() may empty the queue from another thread
            while self.pending and not isinstance(self.pending[0], Gap) and (most is None or n < most):
                part = self.pending.popleft()
                if most is not None and n + len(part) > most:  # the rest stays first in the queue
                    self.pending.appendleft(part[most - n:])
                    part = part[: most - n]
                parts.append(part)
                n += len(part)
            self.popped += n
            if skip:
                self.skipped += n
        if skip or not parts:
            return None
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def take_gap(self) -> Gap | None:
        """The gap marker first in the queue, taken off it, or None."""
        with self.lock:
            if self.pending and isinstance(self.pending[0], Gap):
                return self.pending.popleft()
        return None

    def skip_all(self) -> float:
        """Discard every queued sample now (any thread), keeping the gap markers (their notices
        still tell the gaps' true times); returns the seconds skipped in this run so far."""
        with self.lock:
            kept, n = [], 0
            while self.pending:
                part = self.pending.popleft()
                if isinstance(part, Gap):
                    kept.append(part)
                else:
                    n += len(part)
            self.pending.extendleft(reversed(kept))
            self.popped += n
            self.skipped += n
            return self.skipped / self.source.target_rate
