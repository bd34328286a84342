"""Live captioning: audio sources -> one streaming session each -> events, on one thread.

:class:`LiveCaptioner` owns a set of :class:`~captioner.audio.source.AudioSource`
objects (microphone "You", system audio "Meeting", files) and one
:class:`~captioner.engine.session.StreamingSession` per source, all on one shared
backend. Its thread pulls every queued block from every source, feeds them with
:func:`~captioner.engine.session.feed_many` (so the sources share model calls, up
to the backend's ``B`` rows per call), and hands every event to ``on_event``:

* :class:`~captioner.events.TextDelta` / ``TurnBoundary`` / ``VadProbabilities``
  from the sessions, labelled with the source's current label;
* :class:`~captioner.events.Level` per source, about 20 per second;
* :class:`~captioner.events.Stats` per source about once a second (backlog =
  audio queued at the source + audio waiting in the session; dropped seconds and
  device overflows, never silent);
* :class:`~captioner.events.Notice` for a lost device (``device_lost``), dropped
  audio (``dropped``), a backend failure (``backend_error``), a finished file
  (``source_ended``) and, as the very last event of every run, ``stopped``.

A lost device stops only its own source: its session is ended so its last words
appear, every word already decoded is kept, and the other sources go on. When no
source is left, the run ends by itself. ``stop(drain=True)`` stops capture,
decodes what was still queued and ends every session so the last words appear.

Stream times continue across runs: a second :meth:`LiveCaptioner.start` shifts
event times by the stream time already captured, so a transcript (and its SRT/VTT
cue times) stays monotonic after a device loss and restart.

This module is Qt-free; the UI wraps it in a Qt worker and turns ``on_event``
calls (made on this class's thread) into signals.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable, Sequence

from captioner.asr.base import Backend
from captioner.audio.levels import LevelMeter
from captioner.audio.source import AudioSource, SourceError, SourceStats
from captioner.audio.watchdog import DEFAULT_STARTUP_S, DEFAULT_TIMEOUT_S, Watchdog
from captioner.engine.session import StreamingSession, feed_many
from captioner.events import Event, Notice, Stats, TextDelta, TurnBoundary, VadProbabilities

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Lane:
    """One source with its session and meter."""

    source: AudioSource
    session: StreamingSession
    meter: LevelMeter
    dropped_reported: int = 0
    active: bool = True


class LiveCaptioner:
    """Runs sources through one shared backend on a background thread.

    Args:
        backend: the loaded model (shared by every source's session).
        sources: sources with distinct labels, not started; their ``target_rate``
            must equal ``backend.sample_rate``.
        on_event: called with every event, on the captioner's thread; it must return
            quickly (queue or emit a signal). Exceptions it raises are logged.
        watchdog_s: seconds without a device callback that count as a lost device.
        startup_s: seconds a device may take to deliver its first callback.
        stats_interval_s: seconds between Stats events per source.
        level_interval_s: window of a Level event (0.05 s -> 20 per second).
        poll_s: longest sleep between loops when no audio arrives (s); sources wake
            the thread earlier as soon as they queue audio.
        clock: monotonic clock (s), shared with the sources' watchdog times.

    Raises:
        ValueError: no sources, duplicate labels, or a rate mismatch.
    """

    def __init__(
        self,
        backend: Backend,
        sources: Sequence[AudioSource],
        on_event: Callable[[Event], None],
        *,
        watchdog_s: float = DEFAULT_TIMEOUT_S,
        startup_s: float = DEFAULT_STARTUP_S,
        stats_interval_s: float = 1.0,
        level_interval_s: float = 0.05,
        poll_s: float = 0.02,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not sources:
            raise ValueError("LiveCaptioner needs at least one source")
        labels = [s.label for s in sources]
        if len(set(labels)) != len(labels):
            raise ValueError(f"source labels must differ, got {labels}; rename one")
        for s in sources:
            if s.target_rate != backend.sample_rate:
                raise ValueError(
                    f"source {s.label!r} delivers {s.target_rate} Hz but backend {backend.name!r} "
                    f"takes {backend.sample_rate} Hz"
                )
        self.backend = backend
        self.sources = list(sources)
        self.on_event = on_event
        self.watchdog = Watchdog(watchdog_s, startup_s)
        self.stats_interval_s = float(stats_interval_s)
        self.level_interval_s = float(level_interval_s)
        self.poll_s = float(poll_s)
        self.clock = clock
        self.time_offset = 0.0
        self._lanes: list[_Lane] = []
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()
        self._wakeup = threading.Event()
        self._drain = True
        self._done = threading.Event()
        self._done.set()
        self._run_end = 0.0

    # -- public API ------------------------------------------------------------------------------
    @property
    def is_running(self) -> bool:
        """True from :meth:`start` until the run has ended (stopped, or every source gone)."""
        return not self._done.is_set()

    def start(self) -> None:
        """Start every source and the captioning thread.

        Raises:
            RuntimeError: already running.
            SourceError: a source cannot be opened; sources already started are
                stopped again and nothing runs.
        """
        if self.is_running:
            raise RuntimeError("LiveCaptioner is already running; stop() it first")
        self.time_offset += self._run_end
        self._run_end = 0.0
        started: list[AudioSource] = []
        try:
            for s in self.sources:
                s.wakeup = self._wakeup
                s.start()
                started.append(s)
        except SourceError:
            for s in started:
                s.stop()
            raise
        self._lanes = [
            _Lane(s, StreamingSession(self.backend, s.label), LevelMeter(s.label, s.target_rate, self.level_interval_s))
            for s in self.sources
        ]
        self._halt.clear()
        self._done.clear()
        self._thread = threading.Thread(target=self._run, name="captioner-live", daemon=True)
        self._thread.start()

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool:
        """Stop capture and end every session so the last words appear.

        Args:
            drain: decode the audio still queued at the sources first (True), or
                discard it (False; the sessions are still ended).
            timeout: seconds to wait for the thread (None = until done).

        Returns:
            True when the run has ended.
        """
        self._drain = drain
        self._halt.set()
        self._wakeup.set()
        return self.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends by itself or by :meth:`stop`; True when it has."""
        return self._done.wait(timeout)

    def backlog_s(self) -> float:
        """Seconds of captured audio not yet decoded, worst source (queue + session)."""
        worst = 0.0
        for lane in self._lanes:
            worst = max(worst, self._backlog(lane))
        return worst

    def source_stats(self) -> dict[str, SourceStats]:
        """Capture counters per source label (latency, overflows, drops)."""
        return {lane.source.label: lane.source.stats() for lane in self._lanes}

    # -- the thread ---------------------------------------------------------------------------------
    def _run(self) -> None:
        next_stats = self.clock() + self.stats_interval_s
        try:
            while not self._halt.is_set():
                active = [lane for lane in self._lanes if lane.active]
                if not active:
                    break
                self._wakeup.clear()
                got = self._pull(active, flush_finished=True)
                if got:
                    self._emit_all(feed_many(got))
                ended = [lane for lane in active if self._check_end(lane)]
                if ended:
                    self._end_lanes(ended)
                now = self.clock()
                if now >= next_stats:
                    next_stats = now + self.stats_interval_s
                    self._emit_stats()
                if not got and not ended:
                    self._wakeup.wait(self._sleep_s(active))
            self._finish()
        except Exception as exc:  # noqa: BLE001 - a backend failure must not kill silently
            log.exception("live captioning failed")
            self._emit(Notice(f"Captioning stopped: {exc}. Text so far is kept.", "error", "backend_error"))
            for lane in self._lanes:
                lane.source.stop()
        finally:
            self._run_end = max((lane.session.stream_time for lane in self._lanes), default=0.0)
            self._run_end = max(self._run_end, max((self._source_time(lane) for lane in self._lanes), default=0.0))
            self._emit(Notice("Captioning stopped.", "info", "stopped"))
            self._done.set()

    def _pull(self, lanes: list[_Lane], flush_finished: bool) -> list:
        got = []
        for lane in lanes:
            src = lane.source
            lane.session.source = src.label
            lane.meter.source = src.label
            block = src.read(flush=flush_finished and (src.finished or not src.is_running))
            if block is None:
                continue
            for level in lane.meter.feed(block.samples):
                self._emit(level)
            got.append((lane.session, block.samples))
        return got

    def _check_end(self, lane: _Lane) -> bool:
        src = lane.source
        message = self.watchdog.check(src, self.clock())
        if message:
            src.stop()
            self._drain_lane(lane)
            self._emit(Notice(message, "error", "device_lost", src.label))
            return True
        if src.finished and src.stats().queued_frames == 0:
            src.stop()
            self._drain_lane(lane)
            self._emit(Notice(f"{src.description} has ended.", "info", "source_ended", src.label))
            return True
        return False

    def _drain_lane(self, lane: _Lane) -> None:
        block = lane.source.read(flush=True)
        if block is not None:
            self._emit_all(feed_many([(lane.session, block.samples)]))

    def _end_lanes(self, lanes: list[_Lane]) -> None:
        for lane in lanes:
            lane.active = False
        before = {id(lane): lane.session.stats() for lane in lanes}  # end() resets the sessions
        self._emit_all(feed_many([(lane.session, None) for lane in lanes], end=True))
        self._emit_stats(lanes, before)

    def _finish(self) -> None:
        active = [lane for lane in self._lanes if lane.active]
        for lane in active:
            lane.source.stop()
        if active and self._drain:
            got = self._pull(active, flush_finished=True)
            if got:
                self._emit_all(feed_many(got))
        if active:
            self._end_lanes(active)

    # -- events -------------------------------------------------------------------------------------------
    def _emit_stats(self, lanes: list[_Lane] | None = None, ended: dict | None = None) -> None:
        for lane in lanes or [lane for lane in self._lanes if lane.active]:
            st = lane.source.stats()
            ss = ended[id(lane)] if ended else lane.session.stats()
            self._emit(
                Stats(
                    step_ms=ss.step_ms,
                    rtf=ss.rtf,
                    backlog_s=0.0 if ended else self._backlog(lane),
                    audio_s=ss.audio_s,
                    dropped_s=st.dropped_s,
                    overflows=st.overflows,
                    nonfinite_samples=ss.nonfinite_samples,
                    source=lane.source.label,
                )
            )
            if st.dropped_blocks > lane.dropped_reported:
                lane.dropped_reported = st.dropped_blocks
                self._emit(
                    Notice(
                        f"{st.dropped_s:.1f} s of {lane.source.label} audio were dropped because decoding fell "
                        f"{lane.source.max_queue_s:.0f} s behind; choose a faster model or fewer sources.",
                        "warning",
                        "dropped",
                        lane.source.label,
                    )
                )

    def _emit_all(self, events: list[Event]) -> None:
        for ev in events:
            self._emit(ev)

    def _emit(self, event: Event) -> None:
        if self.time_offset:
            event = _shift(event, self.time_offset)
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a broken consumer must not stop captioning
            log.exception("on_event raised for %r", event)

    # -- helpers -------------------------------------------------------------------------------------------
    def _backlog(self, lane: _Lane) -> float:
        return lane.source.stats().queued_s + lane.session.pending_samples / lane.session.sample_rate

    @staticmethod
    def _source_time(lane: _Lane) -> float:
        return lane.source.stats().samples_out / lane.source.target_rate

    def _sleep_s(self, lanes: list[_Lane]) -> float:
        waits = [self.poll_s]
        for lane in lanes:
            due = getattr(lane.source, "seconds_until_due", None)
            if due is not None:
                waits.append(due())
        return max(0.0, min(waits))


def _shift(event: Event, offset: float) -> Event:
    """``event`` with its stream times moved by ``offset`` seconds (continued runs)."""
    if isinstance(event, TextDelta):
        return dataclasses.replace(event, start=event.start + offset, end=event.end + offset)
    if isinstance(event, (TurnBoundary, VadProbabilities)):
        return dataclasses.replace(event, time=event.time + offset)
    return event
