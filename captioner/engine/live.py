"""Live captioning: audio sources -> one streaming session each -> events, on one thread.

:class:`LiveCaptioner` owns a set of :class:`~captioner.audio.source.AudioSource`
objects (microphone "You", system audio "Meeting", files) and one
:class:`~captioner.engine.session.StreamingSession` per source, all on one shared
backend. Its thread pulls every queued block from every source, feeds them with
:func:`~captioner.engine.rounds.feed_many` (so the sources share model calls, up
to the backend's ``B`` rows per call), and hands every event to ``on_event``:

* :class:`~captioner.events.TextDelta` / ``TurnBoundary`` / ``VadProbabilities`` /
  ``VoiceActivity`` from the sessions, labelled with the source's current label, and
  :class:`~captioner.events.SoundEvent` (a sound that is not speech started, issue 49) when
  sound captions are on, from the capture thread as soon as the detector decides (see
  :mod:`captioner.engine.live_capture`), so it may come before the final text of words said
  before it; its times put it in order in the transcript;
* :class:`~captioner.events.Level` per source, about 20 per second;
* :class:`~captioner.events.Stats` per source about once a second (backlog =
  audio queued at the source + audio waiting in the session; dropped seconds and
  device overflows, never silent);
* :class:`~captioner.events.Notice` for a lost device (``device_lost``), dropped
  audio (``dropped``), a backend failure (``backend_error``), a finished file
  (``source_ended``) and, as the very last event of every run, ``stopped``.

Two threads keep capture independent of decoding speed: the *capture* thread
reads every source (about every 10-20 ms: conversion, levels, watchdog) into a
per-source pending queue, and the *decode* thread feeds what is pending to the
sessions. A slow model therefore never delays level meters, device-loss detection
or the capture queues; its lag shows up as ``Stats.backlog_s``, and past
``max_backlog_s`` new audio is dropped with a ``dropped`` notice (never silently;
stream time then counts decoded audio only).

A lost device stops only its own source: its session is ended so its last words
appear, every word already decoded is kept, and the other sources go on. A source
that stalls and resumes by itself (a sound-server stream, see
:mod:`captioner.audio.recovery`) keeps its lane: its notices are passed on, and a
block that follows a gap (``AudioBlock.gap_before``) ends that source's session at
the gap (its last words appear) and restarts it with its times moved by the real
length of the gap, with a ``gap`` notice giving the true times. When no
source is left, the run ends by itself. ``stop(drain=True)`` stops capture,
decodes what was still queued and ends every session so the last words appear.

Stream times continue across runs: a second :meth:`LiveCaptioner.start` shifts
event times by the stream time already captured, so a transcript (and its SRT/VTT
cue times) stays monotonic after a device loss and restart.

This module is Qt-free; the UI wraps it in a Qt worker and turns ``on_event``
calls (made on this class's threads, one at a time) into signals. The capture thread's
methods are in :mod:`captioner.engine.live_capture`, the statistics in
:mod:`captioner.engine.live_stats`.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Callable, Sequence

from captioner.asr.base import Backend
from captioner.asr.base import BackendError
from captioner.audio.levels import LevelMeter
from captioner.audio.source import AudioSource, SourceError, SourceStats
from captioner.audio.watchdog import DEFAULT_STARTUP_S, DEFAULT_TIMEOUT_S, Watchdog
from captioner.engine.lanes import Gap, Lane
from captioner.engine.live_capture import CaptureThread
from captioner.engine.live_stats import LiveStats
from captioner.engine.rounds import feed_many
from captioner.engine.session import StreamingSession
from captioner.engine.sound_captions import SoundOptions, new_sound_models
from captioner.speakers.options import SpeakerOptions
from captioner.speakers.registry import new_registry
from captioner.speakers.tracker import make_tracker
from captioner.engine.too_slow import TooSlow
from captioner.engine.turns import TurnSettings
from captioner.events import (
    Event, Notice, SoundEvent, SpeakerFix, TextDelta, TurnBoundary, VadProbabilities, VoiceActivity,
)
from captioner.native_calls import model_call

log = logging.getLogger(__name__)


#: Most seconds of queued audio the decode thread hands a session per pass. A model that is
#: behind used to get the whole backlog in one ``feed_many`` call, which a Stop could not cut
#: short (a 10 s backlog at half real time held Stop for 5 s) and whose text came only at its
#: end; in 0.2 s steps a stop is seen after at most 0.2 s of audio (two 100 ms chunks, one
#: round of model calls each: batching across sources is unchanged).
TAKE_S = 0.2


class LiveCaptioner(CaptureThread, LiveStats):
    """Runs sources through one shared backend on two background threads.

    Args:
        backend: the loaded model (shared by every source's session).
        sources: sources with distinct labels, not started; their ``target_rate``
            must equal ``backend.sample_rate``.
        on_event: called with every event, from the captioner's threads but never
            concurrently; it must return quickly (queue or emit a signal).
            Exceptions it raises are logged and ignored.
        watchdog_s: seconds without a device callback that count as a lost device.
        startup_s: seconds a device may take to deliver its first callback.
        stats_interval_s: seconds between Stats events per source.
        level_interval_s: window of a Level event (0.05 s -> 20 per second).
        max_backlog_s: most seconds of captured audio waiting for the decoder per
            source; beyond it new audio is dropped and reported (120 s of 16 kHz
            float32 is 7.7 MB per source: bounded).
        too_slow_backlog_s: backlog (s) past which the user is told the model is too
            slow here (``Notice(code="too_slow")``, once per run); also sent when the
            backend's ``budget`` reports that its required work alone does not fit.
        poll_s: longest sleep of the capture thread when no audio arrives (s);
            sources wake it earlier as soon as they queue audio.
        clock: monotonic clock (s), shared with the sources' watchdog times.
        turns: how turns end in every session (``None``: the defaults; see
            :class:`~captioner.engine.turns.TurnSettings`).
        speakers: who is speaking (issue 38): attribution of the system and file sources
            (never the microphone), their speakers numbered across the run and kept over
            Stop/Start; ``None``: off.
        sounds: sound captions (issue 49): one sound detector per source session, loaded on a
            background thread from now on (a model that cannot load is one ``sounds_unavailable``
            notice, and captions go on); ``None``: off.

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
        max_backlog_s: float = 120.0,
        too_slow_backlog_s: float = 10.0,
        poll_s: float = 0.02,
        clock: Callable[[], float] = time.monotonic,
        turns: TurnSettings | None = None,
        speakers: SpeakerOptions | None = None,
        sounds: SoundOptions | None = None,
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
        if max_backlog_s <= 0:
            raise ValueError(f"max_backlog_s must be > 0, got {max_backlog_s}")
        self.backend = backend
        self.sources = list(sources)
        self.on_event = on_event
        self.watchdog = Watchdog(watchdog_s, startup_s)
        self.stats_interval_s = float(stats_interval_s)
        self.level_interval_s = float(level_interval_s)
        self.max_backlog_s = float(max_backlog_s)
        self._too_slow = TooSlow(too_slow_backlog_s, max_backlog_s)
        self.poll_s = float(poll_s)
        self.clock = clock
        self.turns = turns
        self.speakers = speakers
        attributed = speakers is not None and any(speakers.applies_to(s.kind) for s in sources)
        self._speaker_registry = new_registry(speakers) if attributed else None
        self.sounds = sounds
        self._sound_models = new_sound_models(sounds, len(self.sources))
        self.time_offset = 0.0
        self._lanes: list[Lane] = []
        self._threads: list[threading.Thread] = []
        self._halt = threading.Event()
        self._wakeup = threading.Event()  # capture thread: a source queued audio
        self._decode_wakeup = threading.Event()  # decode thread: audio is pending
        self._emit_lock = threading.RLock()
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
        """Start every source and the capture and decode threads.

        Raises:
            RuntimeError: already running.
            SourceError: a source cannot be opened; sources already started are
                stopped again and nothing runs.
        """
        if self.is_running:
            raise RuntimeError("LiveCaptioner is already running; stop() it first")
        self.time_offset += self._run_end
        self._run_end = 0.0
        if self._speaker_registry is not None:  # a correction names times of its own run only
            self._speaker_registry.stretches.clear()
        _backend_hook(self.backend, "resume")()
        _set_wakeup(self.backend, self._decode_wakeup.set)
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
        models = self._sound_models
        self._lanes = [
            Lane(s, StreamingSession(self.backend, s.label, self.turns,
                                     make_tracker(self.speakers, s.kind, s.target_rate, self._speaker_registry)),
                 LevelMeter(s.label, s.target_rate, self.level_interval_s),
                 sounds=models.tracker(i, s.label, s.target_rate) if models is not None else None)
            for i, s in enumerate(self.sources)
        ]
        self._halt.clear()
        # audio the sources queued before this start (opened while the model loaded, see
        # captioner.engine.capture_first): a backlog to catch up on, not a sign of a slow model
        self._too_slow.start(max((s.stats().queued_s for s in self.sources), default=0.0))
        self._drain = True
        self._done.clear()
        capture = threading.Thread(target=self._capture_loop, name="captioner-capture", daemon=True)
        decode = threading.Thread(target=self._decode_loop, args=(capture,), name="captioner-decode", daemon=True)
        self._threads = [capture, decode]
        capture.start()
        decode.start()

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool:
        """Stop capture and end every session so the last words appear.

        Args:
            drain: decode the audio already captured first (True), or discard it
                (False; the sessions are still ended, flushing what they hold).
            timeout: seconds to wait for the threads (None = until done).

        Returns:
            True when the run has ended.
        """
        self._drain = drain
        self._halt.set()
        _backend_hook(self.backend, "interrupt")()  # a remote server ends its flush or outage now
        self._wakeup.set()
        self._decode_wakeup.set()
        return self.wait(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the run ends by itself or by :meth:`stop`; True when it has."""
        return self._done.wait(timeout)

    def backlog_s(self) -> float:
        """Seconds of captured audio not yet decoded, worst source (queues + session)."""
        return max((self._backlog(lane) for lane in self._lanes), default=0.0)

    def skip_backlog(self) -> float:
        """Stop capture and discard, now, the audio not yet handed to the model; say how much.

        What the model is decoding at this moment (at most :data:`TAKE_S` per source, already
        in the session) is kept: a following ``stop(drain=False)`` still ends every session, so
        those words appear. The return value is therefore exactly the audio that will not be
        captioned (the stop notice's number): counting :meth:`backlog_s` instead, which includes
        that audio, overstated it by up to 0.4 s (issue 30.1).

        Returns:
            Seconds discarded by stops without drain in this run so far, worst source.
            Audio a source still holds (its capture pass not finished) is counted too,
            since the decode thread discards it when it arrives.
        """
        self._drain = False
        self._halt.set()
        self._wakeup.set()
        self._decode_wakeup.set()
        worst = 0.0
        for lane in self._lanes:
            seconds = lane.skip_all()
            if not lane.capture_done:  # its last read is still to come: discarded on arrival
                seconds += lane.source.stats().queued_s
            worst = max(worst, seconds)
        return worst

    def source_stats(self) -> dict[str, SourceStats]:
        """Capture counters per source label (latency, overflows, drops at the device queue)."""
        return {lane.source.label: lane.source.stats() for lane in self._lanes}

    # -- decode thread ----------------------------------------------------------------------------------
    def _decode_loop(self, capture: threading.Thread) -> None:
        next_stats = self.clock() + self.stats_interval_s
        try:
            while True:
                lanes = [lane for lane in self._lanes if not lane.ended]
                if not lanes:
                    break
                self._decode_wakeup.clear()
                if self._halt.is_set() and not self._drain:
                    for lane in lanes:
                        self._take(lane, skip=True)  # discard what was captured but not decoded
                budget = getattr(self.backend, "budget", None)
                if budget is not None:  # optional work (partials) is shed while behind
                    budget.report_backlog(max((self._backlog(lane) for lane in lanes), default=0.0))
                rows = [(lane.session, x) for lane in lanes if (x := self._take(lane, TAKE_S)) is not None]
                if rows:
                    self._emit_all(_feed(rows))
                collected = False
                for lane in lanes:  # a re-decode finished between chunks: show it now (Backend.wakeup)
                    if events := _collect(lane.session):
                        collected = True
                        self._emit_all(events)
                for lane in lanes:
                    if (gap := lane.take_gap()) is not None:
                        self._restart_at_gap(lane, gap)
                finishing = [lane for lane in lanes if lane.capture_done and not lane.pending]
                if finishing:
                    self._end_lanes(finishing)
                now = self.clock()
                if now >= next_stats:
                    next_stats = now + self.stats_interval_s
                    self._emit_stats()
                if not rows and not finishing and not collected:
                    self._decode_wakeup.wait(self.stats_interval_s)
        except Exception as exc:  # noqa: BLE001 - a backend failure must not end silently
            if isinstance(exc, BackendError):  # an expected failure with its own clear message
                log.info("live captioning stopped: %s", exc)
            else:
                log.exception("live captioning failed")
            self._emit(Notice(f"Captioning stopped: {exc}. Text so far is kept.", "error", "backend_error"))
            self._halt.set()
            self._wakeup.set()
        finally:
            capture.join()
            for lane in self._lanes:
                lane.source.stop()
            self._run_end = max(
                [lane.shift + lane.session.stream_time for lane in self._lanes]
                + [self._source_time(lane) for lane in self._lanes],
                default=0.0,
            )
            self._emit(Notice("Captioning stopped.", "info", "stopped"))
            self._done.set()

    def _take(self, lane: Lane, most_s: float | None = None, skip: bool = False):
        """The audio queued before the next gap, at most ``most_s`` seconds of it (None = all);
        with ``skip`` it is counted as skipped (never decoded)."""
        most = None if most_s is None else max(1, int(most_s * lane.source.target_rate))
        return lane.take(most, skip)

    def _restart_at_gap(self, lane: Lane, gap: Gap) -> None:
        """End ``lane``'s session at a gap (its last words appear) and restart its times after it."""
        self._emit_all(_feed([(lane.session, None)], end=True))
        self._emit(gap.notice)  # after the last words before the gap (a transcript pane shows it between)
        lane.gaps_decoded += gap.seconds
        lane.shift = lane.popped / lane.session.sample_rate + lane.gaps_decoded

    def _end_lanes(self, lanes: list[Lane]) -> None:
        for lane in lanes:
            lane.ended = True
        before = {id(lane): lane.session.stats() for lane in lanes}  # end() resets the sessions
        self._emit_all(_feed([(lane.session, None) for lane in lanes], end=True))
        for lane in lanes:
            if lane.sounds is not None:  # capture is done: the detector is this thread's now
                with model_call():
                    for ev in lane.sounds.finish():
                        self._emit(ev)
            if lane.end_notice is not None:
                self._emit(lane.end_notice)
        self._emit_stats(lanes, before)

    # -- events -------------------------------------------------------------------------------------------
    def _emit_all(self, events: list[Event]) -> None:
        shifts = {lane.session.source: lane.shift for lane in self._lanes if lane.shift}
        for ev in events:
            offset = shifts.get(getattr(ev, "source", None), 0.0) if shifts else 0.0
            self._emit(_shift(ev, offset) if offset else ev)

    def _emit(self, event: Event) -> None:
        if self.time_offset:
            event = _shift(event, self.time_offset)
        with self._emit_lock:
            try:
                self.on_event(event)
            except Exception:  # noqa: BLE001 - a broken consumer must not stop captioning
                log.exception("on_event raised for %r", event)

    # -- helpers -------------------------------------------------------------------------------------------
    @staticmethod
    def _source_time(lane: Lane) -> float:
        st = lane.source.stats()
        return st.samples_out / lane.source.target_rate + st.gap_s



def _feed(rows, end: bool = False) -> list[Event]:
    """:func:`feed_many` marked as a model call: the turn detector's ONNX Runtime calls run on
    the decode thread itself (see :mod:`captioner.native_calls`)."""
    with model_call():
        return feed_many(rows, end=end)


def _collect(session) -> list[Event]:
    """:meth:`StreamingSession.collect`, marked as a model call like :func:`_feed`."""
    with model_call():
        return session.collect()


def _backend_hook(backend: object, name: str) -> Callable[[], None]:
    """``backend.name`` (or that of the backend a batching engine wraps), else a no-op: the
    remote backend's ``interrupt`` (Stop is final: no new server session, a bounded flush)
    and ``resume`` (a new run)."""
    for obj in (backend, getattr(backend, "backend", None)):
        hook = getattr(obj, name, None)
        if callable(hook):
            return hook
    return lambda: None


def _set_wakeup(backend: object, wakeup: Callable[[], None]) -> None:
    """Point :attr:`Backend.wakeup` of ``backend`` (or of the backend a batching engine wraps)
    at this run's decode thread."""
    for obj in (backend, getattr(backend, "backend", None)):
        if isinstance(obj, Backend):
            obj.wakeup = wakeup
            return


def _shift(event: Event, offset: float) -> Event:
    """``event`` with its stream times moved by ``offset`` seconds (continued runs)."""
    if isinstance(event, TextDelta):
        return dataclasses.replace(event, start=event.start + offset, end=event.end + offset,
                                   heard=None if event.heard is None else event.heard + offset)
    if isinstance(event, (TurnBoundary, VadProbabilities, VoiceActivity)):
        return dataclasses.replace(event, time=event.time + offset)
    if isinstance(event, (SpeakerFix, SoundEvent)):
        return dataclasses.replace(event, start=event.start + offset, end=event.end + offset)
    return event
