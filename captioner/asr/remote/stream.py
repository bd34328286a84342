"""One source's stream to an Audio8 realtime server: sessions, reconnects, stop (no Qt).

:class:`RemoteStream` is called from the engine worker thread (``push``, ``drain``,
``finish``), from any thread for :meth:`RemoteStream.interrupt` (Stop), and does its network
work on one shared asyncio loop thread (:class:`_Loop`). Its parts: the connection and the
liveness rule (:mod:`~captioner.asr.remote.connection`), one generation's events
(:mod:`~captioner.asr.remote.generation`), the step clock (:mod:`~captioner.asr.remote.timemap`)
and the audio kept for a resend (:mod:`~captioner.asr.remote.resend`).

What happens on each fault (DESIGN section 2, README "Faults"):

* connect refused / DNS / TLS / HTTP status on the *first* connect: fail at once with a
  message that names the URL; a server that greets and then never answers is busy
  (``busy_timeout_s``);
* a close (1000/1001/1011 ...), a dropped connection, ``processing_error``, repeated bad frames,
  or a **stall** (no message for ``stall_timeout_s`` while audio waits for its tokens: the
  socket is aborted, no close handshake): reconnect with backoff as a new session, resend the
  audio from ``delay + look-ahead`` (rounded up to whole steps) before the first untranscribed
  sample (earlier when a word was open there), drop what the new session repeats, and mark
  the place with a ``connection_gap`` turn boundary; audio captured meanwhile is buffered up
  to ``outage_buffer_s``, then dropped and reported;
* after the input ended (``finish``): the final commit is sent and ``transcription.done``
  awaited while messages keep coming; quiet for ``delay + look-ahead + end_margin_s``: the
  stream ends with the text so far and says so once; a lost connection reconnects at most
  once more to flush the rest;
* Stop (:meth:`RemoteStream.interrupt`) is final: no new session is ever opened after it,
  an outage ends at once, and the final flush gets at most ``stop_flush_s``;
* no audio for ``keepalive_after_s``: real-time silence keeps the server's 60 s input
  timeout from firing; none for ``abandon_after_s``: the generation is finished, the server freed.

Nothing here logs audio, the token or event payloads.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import re
import statistics
import threading
import time
from typing import Any

import numpy as np

from captioner.asr.audio8.vad import TurnHysteresis
from captioner.asr.base import BackendError
from captioner.asr.remote import protocol as P
from captioner.asr.remote.config import StreamConfig
from captioner.asr.remote.generation import SEAM_WORDS, words
from captioner.asr.remote.resend import Piece, ResendBuffer
from captioner.asr.remote.session import SessionLoop
from captioner.events import Event, Notice

log = logging.getLogger(__name__)


class StreamStopped(BackendError):
    """Stop came before the first connection was up: the stream never started."""


class _Loop:
    """The one asyncio loop thread every remote stream of this process runs on."""

    _instance: "_Loop | None" = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="captioner-remote", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> "_Loop":
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance


class RemoteStream(SessionLoop):
    """One source's stream: connects on :meth:`open`, sends :meth:`push` audio, ends with :meth:`finish`.

    Thread use: ``open``/``push``/``drain``/``finish``/``close`` from one caller thread (the
    engine worker), ``interrupt`` from any thread; everything else runs on the loop thread.

    Attributes:
        fed_samples: stream samples pushed so far (16 kHz).
        dropped_samples: samples dropped during an outage (reported).
        reconnects: new sessions opened after a fault.
        metrics: the last ``metrics.delta`` payload (server step ms, RTF, GPU memory).
        step_ms_recent: the server's step ms of the last 25 steps.
        latencies_ms: client-side ms from ``push`` of a step to its delta being ready.
        stall_detected_s: for each stall, seconds from the last message to the abort.
    """

    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self.url = config.url.url
        self.fed_samples = 0
        self.dropped_samples = 0
        self.reconnects = 0
        self.metrics: dict[str, Any] = {}
        self.latencies_ms: collections.deque[float] = collections.deque(maxlen=2000)
        self.step_ms_recent: collections.deque[float] = collections.deque(maxlen=25)  # last 2 s of server steps
        self.stall_detected_s: list[float] = []
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._buffer = ResendBuffer(int(config.resend_keep_s * P.SAMPLE_RATE))
        self._events: list[Event] = []
        self._failure: BackendError | None = None
        self._finishing = False
        self._stopping = False
        self._stop_at = 0.0
        self._connected = False
        self._done = threading.Event()  # the stream ended in order (done, or the end rule)
        self._over = threading.Event()  # the network task ended, whatever the reason
        self._ready = threading.Event()
        self._dropping_reported = False
        self._outage_dropped = 0
        self._abandoned = False
        self._reported: set[str] = set()
        self._told_at: float | None = None  # when an outage was last told to the user (monotonic)
        self._untold = 0  # outages since then that only marked the transcript
        self._said_words: collections.deque[str] = collections.deque(maxlen=SEAM_WORDS)
        self._open_word: int | None = None  # stream sample where the last word said began
        self.url_index = 0  # which of the backend's URLs this stream holds
        self._fruitless = 0  # sessions in a row that ended in a fault before a delta about real audio
        self._vad = TurnHysteresis(config.vad_threshold, config.vad_hysteresis)
        self._vad_index: int | None = None
        self._loop = _Loop.get()
        self._wake: asyncio.Event | None = None
        self._task: Any = None
        self._ws: Any = None
        self._last_push = time.monotonic()
        #: generation samples the first delta needs: its step comes from the server's left pad,
        #: so only the look-ahead (delta n needs n steps plus the look-ahead)
        self._lag = P.LOOKAHEAD_SAMPLES
        #: deltas a token trails the audio it describes (delta j says audio step j - delay_steps)
        self._delay_steps = config.delay_ms // P.STEP_MS
        #: audio sent again after a reconnect: the delay plus look-ahead, in whole steps
        self._overlap = -(-(self._delay_steps * P.STEP_SAMPLES + P.LOOKAHEAD_SAMPLES)
                          // P.STEP_SAMPLES) * P.STEP_SAMPLES
        self._sent_gen = 0  # generation samples sent so far (current generation)
        self._next_need = self._lag  # generation samples the next delta needs (its step + look-ahead)

    # -- caller thread ------------------------------------------------------------------------
    def open(self) -> None:
        """Connect and wait for ``session.created``.

        Raises:
            StreamStopped: :meth:`interrupt` came first.
            BackendError: connection refused, unknown host, TLS/HTTP failure, or no greeting,
                within ``connect_timeout_s + greet_timeout_s``; the message names the URL.
        """
        self._task = asyncio.run_coroutine_threadsafe(self._run(), self._loop.loop)
        limit = self.config.connect_timeout_s + self.config.greet_timeout_s + 2.0
        ready = self._ready.wait(limit)
        if self._stopping and not self._connected:
            self.close()
            raise StreamStopped(f"stopped before caption server {self.url} answered")
        if not ready and self._failure is None:
            self.close()
            raise BackendError(f"Caption server {self.url} did not answer within {limit:.0f} s")
        if self._failure is not None and not self._connected:
            raise self._failure

    def push(self, samples: np.ndarray) -> None:
        """Queue ``[n] float32`` 16 kHz samples as one append (one clock step or less).

        Blocks while more than ``max_pending_s`` of audio is unsent on a live connection
        (backpressure; never after Stop); while disconnected keeps up to ``outage_buffer_s``
        and drops (and reports) the rest.

        Raises:
            BackendError: the stream has failed.
        """
        n = int(len(samples))
        if n == 0:
            return
        piece = Piece(P.to_pcm16(samples), self.fed_samples, time.perf_counter())
        self.fed_samples += n
        limit = int(self.config.max_pending_s * P.SAMPLE_RATE)
        with self._cond:
            while (self._connected and not self._stopping and self._failure is None
                   and self._buffer.out_samples > limit):
                self._cond.wait(0.1)
            if self._failure is not None:
                raise self._failure
            if self._abandoned:
                raise BackendError(f"the stream to caption server {self.url} was closed after "
                                   f"{self.config.abandon_after_s:g} s without audio")
            kept = self._buffer.out_samples - self._buffer.overlap_samples
            if not self._connected and kept + n > self.config.outage_buffer_s * P.SAMPLE_RATE:
                self.dropped_samples += n
                self._outage_dropped += n
                if not self._dropping_reported:
                    self._dropping_reported = True
                    self._events.append(Notice(
                        f"Caption server {self.url} is still unreachable: audio beyond "
                        f"{self.config.outage_buffer_s:g} s of buffer is being dropped (counted in the stats).",
                        "warning", "remote_dropped"))
                return
            self._buffer.queue(piece)
            self._last_push = time.monotonic()
        self._poke()

    def wait_answered(self, deadline: float) -> None:
        """Block until the server answered every step that the audio pushed so far allows
        (all of it sent, and a delta for each step it completes), the stream is not
        connected, or ``time.monotonic()`` passes ``deadline``."""
        with self._cond:
            while ((self._buffer.out or self._sent_gen >= self._next_need) and self._connected
                   and self._failure is None and (left := deadline - time.monotonic()) > 0):
                self._cond.wait(left)

    def drain(self) -> list[Event]:
        """Events decoded since the last call (text, VAD, turns, notices); never blocks.

        Raises:
            BackendError: the stream failed and every event before the failure was delivered.
        """
        with self._lock:
            events, self._events = self._events, []
            if not events and self._failure is not None:
                raise self._failure
        return events

    def drain_safe(self) -> list[Event]:
        """Like :meth:`drain` but never raises (the failure is reported by :meth:`finish`)."""
        with self._lock:
            events, self._events = self._events, []
        return events

    def finish(self) -> list[Event]:
        """Send ``commit final=true`` after the queued audio and wait for ``transcription.done``.

        Bounded: the end rule ends a quiet server after ``delay + look-ahead + end_margin_s``;
        after :meth:`interrupt` the whole flush gets ``stop_flush_s``.

        Returns:
            Every remaining event; a failure during the flush becomes a final error ``Notice``
            so the words received before it are still delivered.
        """
        with self._cond:
            self._finishing = True
            pending_s = self._buffer.out_samples / P.SAMPLE_RATE
        self._poke()
        c = self.config
        t0 = time.monotonic()
        cap = c.reconnect_give_up_s + c.connect_timeout_s + c.greet_timeout_s + 2 * pending_s + 30.0
        while not (self._over.wait(0.02) or self._done.is_set()):  # done: the polite close is not waited for
            now = time.monotonic()
            if self._stopping and now > self._stop_at + c.stop_flush_s or now > t0 + cap:
                break
        with self._lock:
            events, self._events = self._events, []
            failure = self._failure
            untranscribed = max(0, self.fed_samples - self._buffer.transcribed) / P.SAMPLE_RATE
        if not self._done.is_set() and failure is None:
            if self._stopping:
                events.append(Notice(
                    f"Stopped before caption server {self.url} finished the stream: the last {untranscribed:.1f} s "
                    "of audio may be missing from the transcript.", "warning", "remote_stopped"))
            else:
                failure = BackendError(f"Caption server {self.url} did not finish the stream within {cap:.0f} s")
        self.close()
        if failure is not None:
            events.append(Notice(f"{failure} The text received so far is kept.", "error", "remote_error"))
        return events

    def interrupt(self) -> None:
        """Stop is final: never open another session; end an outage now; bound the flush.

        Callable from any thread, any number of times; :meth:`finish` still delivers the rest.
        """
        with self._cond:
            if not self._stopping:
                self._stopping = True
                self._stop_at = time.monotonic()
            connected = self._connected
            self._cond.notify_all()
        if not connected:
            self.close()  # connecting, backing off or reconnecting: nothing more can come
        self._ready.set()
        self._poke()

    def close(self) -> None:
        """Drop the connection at once (no flush, no close handshake). Idempotent."""
        task = self._task
        if task is not None and not task.done():
            self._loop.loop.call_soon_threadsafe(task.cancel)
        elif task is None:
            self._over.set()

    def latency_snapshot(self) -> list[float]:
        """A copy of :attr:`latencies_ms` (the loop thread appends to it)."""
        with self._lock:
            return list(self.latencies_ms)

    def server_step_ms(self) -> float:
        """Mean server step ms over the last 25 steps (0 before any ``metrics.delta``)."""
        with self._lock:
            return statistics.fmean(self.step_ms_recent) if self.step_ms_recent else 0.0

    @property
    def failure(self) -> BackendError | None:
        """Why the stream stopped, or None."""
        return self._failure

    def _poke(self) -> None:
        wake = self._wake
        if wake is not None:
            self._loop.loop.call_soon_threadsafe(wake.set)

    # -- shared with the generation (loop thread) --------------------------------------------
    def _emit(self, *events: Event) -> None:
        with self._lock:
            self._events.extend(events)

    def _report_once(self, key: str, notice: Notice, into: list[Event] | None = None) -> None:
        """Say ``notice`` the first time ``key`` happens on this stream."""
        if key in self._reported:
            return
        self._reported.add(key)
        if into is not None:
            into.append(notice)
        else:
            self._emit(notice)

    def _said(self, text: str, stream_pos: int) -> None:
        """Record text the user got: where its last word began, and the last words."""
        pieces = re.findall(r"\s*\S+", text)
        for i, piece in enumerate(pieces):
            w = "".join(words(piece))
            if i == 0 and not piece[:1].isspace() and self._said_words:
                self._said_words[-1] += w  # continues the word before
                continue
            self._open_word = stream_pos  # a word begins in this delta's step
            if w:
                self._said_words.append(w)

    def _drop_repeated_words(self, text: str) -> str:
        """``text`` without the leading words that repeat the last words said before a seam."""
        tail = list(self._said_words)
        pieces = re.findall(r"\s*\S+", text)
        norm = ["".join(words(p)) for p in pieces]
        for k in range(min(SEAM_WORDS, len(pieces), len(tail)), 0, -1):
            if all(norm[:k]) and norm[:k] == tail[-k:]:
                log.info("caption server %s: dropped %d repeated word(s) at a reconnect seam", self.url, k)
                return "".join(pieces[k:])
        return text


__all__ = ["RemoteStream", "StreamStopped"]
