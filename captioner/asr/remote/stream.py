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
from dataclasses import dataclass
from typing import Any

import numpy as np

from captioner.asr.audio8.vad import DEFAULT_HYSTERESIS, TurnHysteresis
from captioner.asr.base import BackendError
from captioner.asr.remote import protocol as P
from captioner.asr.remote.connection import (EndedWithoutDone, Fatal, Transient, abort, close_reason, end_wait_s,
                                             check_quiet, open_session)
from captioner.asr.remote.generation import SEAM_WORDS, Generation, words
from captioner.asr.remote.resend import Piece, ResendBuffer
from captioner.events import Event, Notice, TurnBoundary

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StreamConfig:
    """Settings of one remote stream.

    Attributes:
        url: the server.
        model_name: served model name sent in ``session.update``.
        language: "en" or "zh" (always sent: the server defaults to zh).
        delay_ms: ``target_delay_ms``.
        hotwords, hotword_boost: optional contextual biasing.
        token: bearer token for the handshake (``Authorization: Bearer``), or None.
        ca_file: PEM file of CA(s) that sign the ``wss://`` server certificate (a self-signed
            server certificate itself works), or None for the system store.
        connect_timeout_s: TCP + TLS + HTTP handshake limit (s).
        greet_timeout_s: wait for ``session.created`` (s).
        busy_timeout_s: no event at all this long after audio was sent on the first
            connection means the server serves another stream (s).
        stall_timeout_s: no message this long while audio waits for its tokens is a stalled
            connection: abort it and reconnect (s; the server sends a delta every 80 ms).
        end_margin_s: after the final commit, a quiet server gets the delay + look-ahead plus
            this long to send ``transcription.done`` (s; covers a few slow GPU steps, p99 73 ms,
            and network jitter: the padding steps come back to back, not at 80 ms).
        stop_flush_s: after Stop, the final flush gets at most this long (s; Stop must end
            within 2 s).
        reconnect_give_up_s: stop trying after the server was unreachable this long (s).
        backoff_s: first reconnect wait; doubles up to ``backoff_max_s`` (s).
        outage_buffer_s: audio kept while disconnected, sent after reconnecting (s of audio).
        resend_keep_s: sent audio kept before the transcribed point for a resend (s).
        max_pending_s: unsent audio while connected before ``push`` blocks (backpressure).
        keepalive_after_s: idle time before silence is sent to keep the generation alive (s).
        abandon_after_s: no audio at all for this long (the session was dropped without
            ``end()``): finish the generation and close, so the server is free again (s).
        answer_wait_s: how long a step waits for the delta of the audio it just sent, so text
            reaches the engine in the same step instead of the next one (s; 0 = never wait).
        vad_horizon_s, vad_threshold, vad_hysteresis: turn detection, as for local Audio8.
    """

    url: P.ServerURL
    model_name: str = P.DEFAULT_MODEL_NAME
    language: str = "en"
    delay_ms: int = 480
    hotwords: tuple[str, ...] = ()
    hotword_boost: float | None = None
    token: str | None = None
    ca_file: str | None = None
    connect_timeout_s: float = 5.0
    greet_timeout_s: float = 5.0
    busy_timeout_s: float = 5.0
    stall_timeout_s: float = 2.0
    end_margin_s: float = 0.5
    stop_flush_s: float = 1.2
    reconnect_give_up_s: float = 60.0
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    outage_buffer_s: float = 30.0
    resend_keep_s: float = 3.0
    max_pending_s: float = 2.0
    keepalive_after_s: float = 2.0
    answer_wait_s: float = 0.06
    abandon_after_s: float = 30.0
    vad_horizon_s: float = 1.0
    vad_threshold: float = 0.5
    vad_hysteresis: float = DEFAULT_HYSTERESIS

    def __repr__(self) -> str:  # never show the token
        return f"StreamConfig(url={self.url.url!r}, model={self.model_name!r}, language={self.language!r})"


#: Sessions in a row that may fail before producing a single delta, before giving up.
MAX_FRUITLESS_SESSIONS = 3
#: New sessions allowed after the input ended (``finish``) to flush the rest after a lost connection.
MAX_RECONNECTS_AFTER_END = 1


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


class RemoteStream:
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
        self._said_words: collections.deque[str] = collections.deque(maxlen=SEAM_WORDS)
        self._open_word: int | None = None  # stream sample where the last word said began
        self.url_index = 0  # which of the backend's URLs this stream holds
        self._fruitless = 0  # sessions in a row that ended in a fault before any delta
        self._vad = TurnHysteresis(config.vad_threshold, config.vad_hysteresis)
        self._vad_index: int | None = None
        self._loop = _Loop.get()
        self._wake: asyncio.Event | None = None
        self._task: Any = None
        self._ws: Any = None
        self._last_push = time.monotonic()
        self._lag = (config.delay_ms // P.STEP_MS + 1) * P.STEP_SAMPLES + P.LOOKAHEAD_SAMPLES
        #: audio sent again after a reconnect: the delay plus look-ahead, in whole steps
        self._overlap = -(-(self._lag - P.STEP_SAMPLES) // P.STEP_SAMPLES) * P.STEP_SAMPLES
        self._sent_gen = 0  # generation samples sent so far (current generation)
        self._next_need = self._lag  # generation samples the next delta needs (deltas + delay + look-ahead)

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
        while not self._over.wait(0.02):
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
            if i == 0:
                self._open_word = stream_pos
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

    # -- loop thread: sessions ------------------------------------------------------------------
    def _fail(self, message: str) -> None:
        with self._cond:
            if self._failure is None:
                self._failure = BackendError(message)
            self._connected = False
            self._cond.notify_all()
        self._ready.set()

    def _set_ws(self, ws: Any) -> None:
        self._ws = ws

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        first = True
        outage_since: float | None = None
        reason = ""
        attempt = 0
        late_reconnects = 0
        seam: int | None = None
        try:
            while not self._stopping:
                try:
                    ws = await open_session(self.config, self._set_ws)
                except Fatal as exc:
                    self._fail(str(exc))
                    return
                except Transient as exc:
                    if first:
                        self._fail(str(exc))
                        return
                    waited = time.monotonic() - (outage_since or time.monotonic())
                    if waited > self.config.reconnect_give_up_s:
                        self._fail(f"{exc}; gave up after {waited:.0f} s of reconnecting ({reason})")
                        return
                    delay = min(self.config.backoff_s * 2 ** attempt, self.config.backoff_max_s)
                    attempt += 1
                    await asyncio.sleep(delay)
                    continue
                attempt = 0
                if first:
                    self._greeted()
                elif outage_since is not None:
                    self._reconnected(seam or 0, time.monotonic() - outage_since, reason)
                outage_since = None
                try:
                    await self._generation(ws, Generation(self, None if first else seam), first)
                    self._done.set()
                    return
                except EndedWithoutDone as exc:
                    self._ended_without_done(str(exc))
                    return
                except Fatal as exc:
                    self._fail(str(exc))
                    return
                except Transient as exc:
                    abort(ws)
                    first = False
                    reason = str(exc)
                    self._fruitless += 1
                    if self._fruitless > MAX_FRUITLESS_SESSIONS:
                        self._fail(f"Caption server {self.url} failed {self._fruitless} sessions in a row without "
                                   f"transcribing anything ({reason}); check the server's log")
                        return
                    with self._cond:
                        self._connected = False
                        _, seam = self._buffer.rewind(self._overlap, self._open_word)
                        finishing = self._finishing
                        self._cond.notify_all()
                    if self._stopping or (finishing and late_reconnects >= MAX_RECONNECTS_AFTER_END):
                        self._lost_after_end(reason)
                        return
                    late_reconnects += finishing
                    outage_since = time.monotonic()
                    self.reconnects += 1
                    log.warning("caption server %s: %s; reconnecting", self.url, reason)
                    self._emit(Notice(f"Lost the caption server {self.url} ({reason}); reconnecting. "
                                      "Audio is kept meanwhile.", "warning", "remote_reconnecting"))
                finally:
                    with self._cond:
                        self._connected = False
                        self._cond.notify_all()
                    if self._done.is_set():
                        try:
                            await asyncio.wait_for(ws.close(), 0.5)
                        except Exception:  # noqa: BLE001 - a slow close handshake: drop it
                            abort(ws)
                    else:
                        abort(ws)
        except asyncio.CancelledError:
            ws = self._ws
            if ws is not None:
                abort(ws)
            raise
        except Exception as exc:  # noqa: BLE001 - never leave the caller waiting
            log.exception("remote stream failed")
            self._fail(f"Caption server {self.url}: unexpected client failure ({type(exc).__name__}: {exc})")
        finally:
            with self._cond:
                self._connected = False
                self._cond.notify_all()
            self._ready.set()
            self._over.set()

    def _greeted(self) -> None:
        self._emit(Notice(f"Connected to caption server {self.url}.", "info", "remote_connected"))
        c = self.config
        if c.token and not c.url.secure and c.url.host not in ("127.0.0.1", "::1", "localhost"):
            self._emit(Notice(f"The server key travels unencrypted to {self.url} (ws://); use the "
                              "wss:// address of the server's TLS proxy on other networks than "
                              "your own.", "warning", "remote_plain_key"))
        self._ready.set()

    def _ended_without_done(self, why: str) -> None:
        log.warning("caption server %s: %s; ending the stream", self.url, why)
        self._emit(Notice(f"Caption server {self.url} did not confirm the end of the stream ({why}); "
                          "the text received so far is kept.", "warning", "remote_no_done"))
        self._done.set()

    def _lost_after_end(self, reason: str) -> None:
        with self._lock:
            untranscribed = max(0, self.fed_samples - self._buffer.transcribed) / P.SAMPLE_RATE
        log.warning("caption server %s: %s after the input ended; not reconnecting", self.url, reason)
        why = "Stop was asked" if self._stopping else "the input had ended"
        self._emit(Notice(f"Lost the caption server {self.url} ({reason}) after {why}; no new session was "
                          f"opened. The last {untranscribed:.1f} s of audio may be missing.", "warning",
                          "remote_lost_at_end"))
        self._done.set()

    def _reconnected(self, gap_at: int, outage_s: float, reason: str) -> None:
        t = gap_at / P.SAMPLE_RATE
        with self._lock:  # push() counts drops under the lock
            dropped = self._outage_dropped / P.SAMPLE_RATE
            self._outage_dropped = 0
            self._dropping_reported = False
        lost = (f" {dropped:.1f} s of audio captured during the outage did not fit the buffer and were dropped."
                if dropped else " Audio captured during the outage was sent after reconnecting.")
        self._emit(
            TurnBoundary(t, "connection_gap", 1.0),
            Notice(f"Reconnected to caption server {self.url} after {outage_s:.1f} s ({reason}). The audio "
                   f"around the cut was sent again and repeated words dropped; the transcript is marked at "
                   f"{t:.1f} s, where a new server session begins.{lost}", "warning", "remote_reconnected"),
        )

    # -- loop thread: one generation ----------------------------------------------------------
    async def _generation(self, ws: Any, gen: Generation, first: bool) -> None:
        """Send queued audio and read events until ``transcription.done``.

        Raises:
            Transient: the connection broke, stalled or sent garbage (the caller reconnects).
            Fatal: the server refused the session for good (the message says why).
            EndedWithoutDone: the end rule fired after the final commit.
        """
        with self._cond:
            self._connected = True
            self._cond.notify_all()
        sender = asyncio.ensure_future(self._send_loop(ws, gen))
        receiver = asyncio.ensure_future(self._recv_loop(ws, gen, first))
        try:
            done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_EXCEPTION)
            for t in done:
                if t.exception() is not None:
                    raise t.exception()
            if receiver not in done:
                await receiver
        finally:
            for t in (sender, receiver):
                if not t.done():
                    t.cancel()
            await asyncio.gather(sender, receiver, return_exceptions=True)

    async def _send_loop(self, ws: Any, gen: Generation) -> None:
        assert self._wake is not None
        c = self.config
        filler = P.to_pcm16(np.zeros(P.STEP_SAMPLES, dtype=np.float32))  # one 80 ms step
        try:
            while True:
                self._wake.clear()  # before looking at the queue: a push after the look sets it again
                with self._cond:
                    piece = self._buffer.pop()
                    if piece is not None:
                        self._cond.notify_all()
                    finishing = self._finishing
                    idle = time.monotonic() - self._last_push
                if (piece is None and not finishing and c.keepalive_after_s <= idle < c.abandon_after_s
                        and gen.map.gen_end):
                    piece = Piece(filler, None, time.perf_counter())
                if piece is not None:
                    was_waiting = gen.unanswered()
                    piece.gen_start = gen.map.add(piece.samples, piece.stream_pos)
                    if not was_waiting:
                        gen.sent_at = time.monotonic()
                    with self._lock:
                        gen.inflight.append(piece)
                        self._buffer.mark_sent(piece)
                        self._sent_gen = gen.map.gen_end
                    await ws.send(P.append(piece.pcm))
                    if piece.stream_pos is None:  # pace the silence in real time unless real audio arrives
                        try:
                            await asyncio.wait_for(self._wake.wait(), P.STEP_MS / 1000)
                        except (TimeoutError, asyncio.TimeoutError):
                            pass
                    continue
                if finishing:
                    await ws.send(P.commit(True))
                    gen.final_sent = True
                    gen.final_at = gen.sent_at = time.monotonic()
                    return
                if idle >= c.abandon_after_s:  # nobody feeds this stream any more: free the server
                    log.warning("caption server %s: no audio for %.0f s; ending the stream", self.url, idle)
                    with self._cond:
                        self._finishing = True
                        self._abandoned = True
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), max(0.05, c.keepalive_after_s - idle))
                except (TimeoutError, asyncio.TimeoutError):
                    pass
        except Exception as exc:  # ConnectionClosed
            raise Transient(close_reason(exc)) from None

    async def _recv_loop(self, ws: Any, gen: Generation, first: bool) -> None:
        c = self.config
        while True:
            try:
                message = await asyncio.wait_for(ws.recv(), 0.05)
            except (TimeoutError, asyncio.TimeoutError):
                now = time.monotonic()
                try:
                    check_quiet(gen, c, self.url, first, now)
                except Transient:
                    self.stall_detected_s.append(now - gen.last_event)
                    raise
                continue
            except Exception as exc:  # ConnectionClosed
                raise Transient(close_reason(exc)) from None
            gen.last_event = time.monotonic()
            try:
                ev = P.parse_event(message)
            except P.ProtocolError as exc:
                gen.bad_frame(str(exc))
                continue
            if gen.handle(ev):
                return


__all__ = ["RemoteStream", "StreamConfig", "StreamStopped", "end_wait_s"]
