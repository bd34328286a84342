"""One source's websocket stream to an Audio8 realtime server, with reconnects (no Qt).

:class:`RemoteStream` is called from the engine worker thread (``push``, ``drain``,
``finish``) and does its network work on one shared asyncio loop thread (:class:`_Loop`).

Timing: the server sends one ``transcription.delta`` per 80 ms step, empty ones included,
and nothing carries a time. Delta ``n`` (1-based) of a generation is the model's token for
generation audio step ``n - 1``, so it covers audio ``[0, n * 1280)`` samples (the same rule
as the local Audio8 backend: token ``k`` ends at ``(k + 1)`` clocks). The server can only
produce it once it holds the delay's worth of audio after that step plus a 2.5 ms look-ahead
(``(n + delay_steps) * 1280 + 40`` samples; reference ``buffer_realtime_audio``), and after
``final`` it pads ``delay + 1 + 10`` steps of silence: N steps of audio give N + 11 deltas.
A per-generation map (:class:`_TimeMap`) turns a generation sample position into stream
time, so keep-alive silence, audio dropped during an outage and the restart point after a
reconnect never shift the times of the words.

Faults (DESIGN section 2):

* connect refused / DNS / TLS / HTTP status on the *first* connect: fail at once with a
  message that names the URL;
* a dropped connection, a close (1011 included), a binary frame or ``processing_error``
  during a generation: reconnect with backoff as a new session; audio whose tokens the
  server had not sent yet (the last ``delay + 1`` steps it held, and whatever was in
  flight) is sent again from the first untranscribed step, so no word is lost or repeated;
  audio captured during the outage is buffered up to
  ``outage_buffer_s`` and then counted as dropped with a notice; a ``connection_gap`` turn
  boundary marks the place in the transcript;
* a server that greets but then never answers (it serves another stream): busy error after
  ``busy_timeout_s``; a server that stops answering mid-stream: reconnect after
  ``answer_timeout_s``;
* no audio for ``keepalive_after_s``: real-time silence is sent so the server's 60 s input
  timeout never fires.

Nothing here logs audio, the token or event payloads.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import logging
import socket
import ssl
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from captioner.asr.audio8.vad import DEFAULT_HYSTERESIS, TurnHysteresis, horizon_index
from captioner.asr.base import BackendError
from captioner.asr.remote import protocol as P
from captioner.events import Event, Notice, TextDelta, TurnBoundary, VadProbabilities

log = logging.getLogger(__name__)
#: The websockets library logs every frame and handshake header (audio, the key) at DEBUG:
#: give it a logger that never goes below INFO, whatever the application's logging level.
_WIRE_LOG = logging.getLogger(__name__ + ".wire")
_WIRE_LOG.setLevel(logging.INFO)


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
        busy_timeout_s: no event at all this long after audio was sent on a new connection
            means the server serves another stream (s).
        answer_timeout_s: no event this long while audio is unanswered mid-stream means a
            stalled server: reconnect (s).
        reconnect_give_up_s: stop trying after the server was unreachable this long (s).
        backoff_s: first reconnect wait; doubles up to ``backoff_max_s`` (s).
        outage_buffer_s: audio kept while disconnected, sent after reconnecting (s of audio).
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
    answer_timeout_s: float = 10.0
    reconnect_give_up_s: float = 60.0
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    outage_buffer_s: float = 30.0
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


class _Transient(Exception):
    """The connection is gone or stalled: reconnect."""


class _Fatal(Exception):
    """Give up: the message is for the user."""


@dataclass
class _Piece:
    """Audio waiting to be sent or to be confirmed. ``stream_pos`` None = keep-alive silence."""

    pcm: bytes
    stream_pos: int | None
    pushed_at: float = 0.0
    gen_start: int = 0

    @property
    def samples(self) -> int:
        return len(self.pcm) // 2


class _TimeMap:
    """Generation sample position -> stream sample position, for one generation."""

    def __init__(self) -> None:
        self.gen_starts: list[int] = []
        self.spans: list[tuple[int, int, bool]] = []  # (gen_start, stream_start, real)
        self.gen_end = 0
        self.stream_end = 0

    def add(self, n: int, stream_pos: int | None) -> int:
        """Record ``n`` samples sent; returns their generation start position."""
        g = self.gen_end
        real = stream_pos is not None
        if self.spans and real and self.spans[-1][2] and stream_pos == self.stream_end:
            pass  # contiguous with the previous real span
        else:
            anchor = stream_pos if real else self.stream_end
            self.gen_starts.append(g)
            self.spans.append((g, anchor, real))
        self.gen_end += n
        if real:
            self.stream_end = stream_pos + n
        return g

    def stream_at(self, g: int) -> int:
        """Stream sample of generation sample ``g`` (clipped to the real audio sent)."""
        if not self.spans:
            return self.stream_end
        i = max(0, bisect.bisect_right(self.gen_starts, g) - 1)
        g0, s0, real = self.spans[i]
        if not real:
            return s0
        nxt = self.gen_starts[i + 1] if i + 1 < len(self.gen_starts) else self.gen_end
        return s0 + min(g, nxt) - g0


class RemoteStream:
    """One source's stream: connects on :meth:`open`, sends :meth:`push` audio, ends with :meth:`finish`.

    Thread use: ``open``/``push``/``drain``/``finish``/``close`` from one caller thread (the
    engine worker); everything else runs on the loop thread.

    Attributes:
        fed_samples: stream samples pushed so far (16 kHz).
        dropped_samples: samples dropped during an outage (reported).
        reconnects: new sessions opened after a fault.
        metrics: the last ``metrics.delta`` payload (server step ms, RTF, GPU memory).
        step_ms_recent: the server's step ms of the last 25 steps.
        latencies_ms: client-side ms from ``push`` of a step to its delta being ready.
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
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._out: collections.deque[_Piece] = collections.deque()
        self._out_samples = 0
        self._inflight: collections.deque[_Piece] = collections.deque()
        self._events: list[Event] = []
        self._failure: BackendError | None = None
        self._finishing = False
        self._connected = False
        self._done = threading.Event()
        self._ready = threading.Event()
        self._dropping_reported = False
        self._outage_dropped = 0
        self._abandoned = False
        self.url_index = 0  # which of the backend's URLs this stream holds
        self._fruitless = 0  # sessions in a row that ended in a fault before any delta
        self._vad = TurnHysteresis(config.vad_threshold, config.vad_hysteresis)
        self._vad_index: int | None = None
        self._vad_warned = False
        self._loop = _Loop.get()
        self._wake: asyncio.Event | None = None
        self._task: Any = None
        self._ws: Any = None
        self._last_push = time.monotonic()
        self._lag = (config.delay_ms // P.STEP_MS + 1) * P.STEP_SAMPLES + P.LOOKAHEAD_SAMPLES
        self._sent_gen = 0  # generation samples sent so far (current generation)
        self._next_need = self._lag  # generation samples the next delta needs (deltas + delay + look-ahead)

    # -- caller thread ------------------------------------------------------------------------
    def open(self) -> None:
        """Connect and wait for ``session.created``.

        Raises:
            BackendError: connection refused, unknown host, TLS/HTTP failure, or no greeting,
                within ``connect_timeout_s + greet_timeout_s``; the message names the URL.
        """
        self._task = asyncio.run_coroutine_threadsafe(self._run(), self._loop.loop)
        limit = self.config.connect_timeout_s + self.config.greet_timeout_s + 2.0
        if not self._ready.wait(limit) and self._failure is None:
            self.close()
            raise BackendError(f"Caption server {self.url} did not answer within {limit:.0f} s")
        if self._failure is not None and not self._connected:
            raise self._failure

    def push(self, samples: np.ndarray) -> None:
        """Queue ``[n] float32`` 16 kHz samples as one append (one clock step or less).

        Blocks while more than ``max_pending_s`` of audio is unsent on a live connection
        (backpressure); while disconnected keeps up to ``outage_buffer_s`` and drops (and
        reports) the rest.

        Raises:
            BackendError: the stream has failed.
        """
        n = int(len(samples))
        if n == 0:
            return
        piece = _Piece(P.to_pcm16(samples), self.fed_samples, time.perf_counter())
        self.fed_samples += n
        limit = int(self.config.max_pending_s * P.SAMPLE_RATE)
        with self._cond:
            while self._connected and self._failure is None and self._out_samples > limit:
                self._cond.wait(0.1)
            if self._failure is not None:
                raise self._failure
            if self._abandoned:
                raise BackendError(f"the stream to caption server {self.url} was closed after "
                                   f"{self.config.abandon_after_s:g} s without audio")
            if not self._connected and self._out_samples + n > self.config.outage_buffer_s * P.SAMPLE_RATE:
                self.dropped_samples += n
                self._outage_dropped += n
                if not self._dropping_reported:
                    self._dropping_reported = True
                    self._events.append(Notice(
                        f"Caption server {self.url} is still unreachable: audio beyond "
                        f"{self.config.outage_buffer_s:g} s of buffer is being dropped (counted in the stats).",
                        "warning", "remote_dropped"))
                return
            self._out.append(piece)
            self._out_samples += n
            self._last_push = time.monotonic()
        self._poke()

    def wait_answered(self, deadline: float) -> None:
        """Block until the server answered every step that the audio pushed so far allows
        (all of it sent, and a delta for each step it completes), the stream is not
        connected, or ``time.monotonic()`` passes ``deadline``."""
        with self._cond:
            while ((self._out or self._sent_gen >= self._next_need) and self._connected
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

        Returns:
            Every remaining event; a failure during the flush becomes a final error ``Notice``
            so the words received before it are still delivered.
        """
        with self._cond:
            self._finishing = True
            pending_s = self._out_samples / P.SAMPLE_RATE
        self._poke()
        c = self.config
        cap = c.reconnect_give_up_s + c.answer_timeout_s * 3 + c.connect_timeout_s + c.greet_timeout_s + 2 * pending_s
        self._done.wait(cap)
        with self._lock:
            events, self._events = self._events, []
            failure = self._failure
        if not self._done.is_set() and failure is None:
            failure = BackendError(f"Caption server {self.url} did not finish the stream within {cap:.0f} s")
        self.close()
        if failure is not None:
            events.append(Notice(f"{failure} The text received so far is kept.", "error", "remote_error"))
        return events

    def close(self) -> None:
        """Drop the connection at once (no flush). Idempotent."""
        task = self._task
        if task is not None and not task.done():
            self._loop.loop.call_soon_threadsafe(task.cancel)

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

    # -- loop thread: connection management ---------------------------------------------------
    def _fail(self, message: str) -> None:
        with self._cond:
            if self._failure is None:
                self._failure = BackendError(message)
            self._connected = False
            self._cond.notify_all()
        self._ready.set()
        self._done.set()

    def _emit(self, *events: Event) -> None:
        with self._lock:
            self._events.extend(events)

    async def _run(self) -> None:
        self._wake = asyncio.Event()
        first = True
        outage_since: float | None = None
        reason = ""
        attempt = 0
        gap_at = 0
        try:
            while True:
                try:
                    ws = await self._open_session()
                except _Fatal as exc:
                    self._fail(str(exc))
                    return
                except _Transient as exc:
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
                    first = False
                    self._emit(Notice(f"Connected to caption server {self.url}.", "info", "remote_connected"))
                    c = self.config
                    if c.token and not c.url.secure and c.url.host not in ("127.0.0.1", "::1", "localhost"):
                        self._emit(Notice(f"The server key travels unencrypted to {self.url} (ws://); use the "
                                          "wss:// address of the server's TLS proxy on other networks than "
                                          "your own.", "warning", "remote_plain_key"))
                    self._ready.set()
                elif outage_since is not None:
                    self._reconnected(gap_at, time.monotonic() - outage_since, reason)
                outage_since = None
                try:
                    await self._generation(ws)
                    self._done.set()
                    return
                except _Fatal as exc:
                    self._fail(str(exc))
                    return
                except _Transient as exc:
                    reason = str(exc)
                    self._fruitless += 1
                    if self._fruitless > MAX_FRUITLESS_SESSIONS:
                        self._fail(f"Caption server {self.url} failed {self._fruitless} sessions in a row without "
                                   f"transcribing anything ({reason}); check the server's log")
                        return
                    outage_since = time.monotonic()
                    gap_at = self._requeue()
                    self.reconnects += 1
                    log.warning("caption server %s: %s; reconnecting", self.url, reason)
                    self._emit(Notice(f"Lost the caption server {self.url} ({reason}); reconnecting. "
                                      "Audio is kept meanwhile.", "warning", "remote_reconnecting"))
                finally:
                    with self._cond:
                        self._connected = False
                        self._cond.notify_all()
                    await ws.close()
        except asyncio.CancelledError:
            ws = self._ws
            if ws is not None:
                ws.transport.abort()
            raise
        except Exception as exc:  # noqa: BLE001 - never leave the caller waiting
            log.exception("remote stream failed")
            self._fail(f"Caption server {self.url}: unexpected client failure ({type(exc).__name__}: {exc})")

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
            Notice(f"Reconnected to caption server {self.url} after {outage_s:.1f} s ({reason}). Audio the server "
                   f"had not transcribed yet was sent again; the transcript is marked at {t:.1f} s, where a new "
                   f"server session begins (a word cut there may be misheard).{lost}", "warning",
                   "remote_reconnected"),
        )

    def _requeue(self) -> int:
        """Put audio the server did not confirm back in front of the queue; returns the stream
        position of the first sample to resend (the gap)."""
        with self._cond:
            real = [p for p in self._inflight if p.stream_pos is not None]
            self._inflight.clear()
            for p in reversed(real):
                self._out.appendleft(p)
                self._out_samples += p.samples
            head = next((p.stream_pos for p in self._out if p.stream_pos is not None), self.fed_samples)
            self._cond.notify_all()
        return int(head)

    async def _open_session(self) -> Any:
        """Connect, wait for ``session.created``, send the settings and start a generation."""
        from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

        c = self.config
        kwargs: dict[str, Any] = dict(open_timeout=c.connect_timeout_s, ping_interval=None, max_size=2**22,
                                      write_limit=2**16, proxy=None, compression=None,
                                      close_timeout=1.0, logger=_WIRE_LOG)
        if c.token:
            kwargs["additional_headers"] = {"Authorization": f"Bearer {c.token}"}
        if c.url.secure:
            try:
                kwargs["ssl"] = ssl.create_default_context(cafile=c.ca_file) if c.ca_file else ssl.create_default_context()
            except (OSError, ssl.SSLError) as exc:
                raise _Fatal(f"cannot read the CA file {c.ca_file} for {self.url}: {exc}") from None
        url = self.url
        try:
            ws = await _connect(url, **kwargs)
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                raise _Fatal(f"Caption server {url} refused the key (HTTP {status}): set the server key "
                             "(CAPTIONER_REMOTE_TOKEN or the app's key field)") from None
            if 300 <= status < 400:
                where = exc.response.headers.get("Location", "?")
                raise _Fatal(f"Caption server {url} redirects to {where}; captioner sends audio only where you "
                             "point it: configure that URL directly") from None
            if status == 404:
                raise _Fatal(f"Caption server {url} has no realtime endpoint (HTTP 404): check the path "
                             f"(usually {P.DEFAULT_PATH})") from None
            raise _Transient(f"Caption server {url} answered HTTP {status}") from None
        except InvalidURI as exc:
            raise _Fatal(f"invalid server URL {url}: {exc}") from None
        except ssl.SSLCertVerificationError as exc:
            raise _Fatal(f"Caption server {url}: its TLS certificate is not trusted ({exc.verify_message}); "
                         "give the server's certificate or CA with --ca-file") from None
        except socket.gaierror:
            raise _Transient(f"Cannot connect to caption server {url}: the host {c.url.host!r} is unknown "
                             "(DNS lookup failed)") from None
        except ConnectionRefusedError:
            raise _Transient(f"Cannot connect to caption server {url}: connection refused (is the server "
                             f"running and listening on port {c.url.port}?)") from None
        except (TimeoutError, asyncio.TimeoutError):
            raise _Transient(f"Cannot connect to caption server {url}: no answer within "
                             f"{c.connect_timeout_s:g} s") from None
        except (InvalidHandshake, OSError, ssl.SSLError) as exc:
            raise _Transient(f"Cannot connect to caption server {url}: {type(exc).__name__}: {exc}") from None
        self._ws = ws
        try:
            try:
                first = await asyncio.wait_for(ws.recv(), c.greet_timeout_s)
                ev = P.parse_event(first)
            except (TimeoutError, asyncio.TimeoutError):
                raise _Fatal(f"Caption server {url} accepted the connection but sent no session.created within "
                             f"{c.greet_timeout_s:g} s: is it an Audio8 realtime server?") from None
            except P.ProtocolError as exc:
                raise _Fatal(f"Caption server {url}: {exc}") from None
            if ev["type"] == "error":
                raise _Fatal(P.error_message(ev, url))
            if ev["type"] != "session.created":
                raise _Fatal(f"Caption server {url} began with {ev['type']!r} instead of session.created: is it an "
                             "Audio8 realtime server?")
            await ws.send(P.session_update(c.model_name, c.language, c.delay_ms, c.hotwords, c.hotword_boost))
            await ws.send(P.commit(False))
        except _Fatal:
            await ws.close()
            raise
        except Exception as exc:  # ConnectionClosed while greeting
            await ws.close()
            raise _Transient(f"connection closed during the greeting ({_close_reason(exc)})") from None
        with self._cond:
            self._connected = True
            self._cond.notify_all()
        return ws

    # -- loop thread: one generation ----------------------------------------------------------
    async def _generation(self, ws: Any) -> None:
        """Send queued audio and read events until ``transcription.done``.

        Raises:
            _Transient: the connection broke or stalled (the caller reconnects).
            _Fatal: the server refused the session for good (the message says why).
        """
        gen = _Generation(self)
        sender = asyncio.ensure_future(self._send_loop(ws, gen))
        receiver = asyncio.ensure_future(self._recv_loop(ws, gen))
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

    async def _send_loop(self, ws: Any, gen: "_Generation") -> None:
        assert self._wake is not None
        c = self.config
        filler = P.to_pcm16(np.zeros(P.STEP_SAMPLES, dtype=np.float32))  # one 80 ms step
        try:
            while True:
                self._wake.clear()  # before looking at the queue: a push after the look sets it again
                with self._cond:
                    piece = self._out.popleft() if self._out else None
                    if piece is not None:
                        self._out_samples -= piece.samples
                        self._cond.notify_all()
                    finishing = self._finishing
                    idle = time.monotonic() - self._last_push
                if piece is not None:
                    was_waiting = gen.unanswered()
                    piece.gen_start = gen.map.add(piece.samples, piece.stream_pos)
                    if not was_waiting:
                        gen.sent_at = time.monotonic()
                    with self._lock:
                        self._inflight.append(piece)
                        self._sent_gen = gen.map.gen_end
                    await ws.send(P.append(piece.pcm))
                    continue
                if finishing:
                    await ws.send(P.commit(True))
                    gen.final_sent = True
                    gen.sent_at = time.monotonic()
                    return
                if idle >= c.abandon_after_s:  # nobody feeds this stream any more: free the server
                    log.warning("caption server %s: no audio for %.0f s; ending the stream", self.url, idle)
                    with self._cond:
                        self._finishing = True
                        self._abandoned = True
                    continue
                if idle >= c.keepalive_after_s and gen.map.gen_end:
                    was_waiting = gen.unanswered()
                    g = gen.map.add(P.STEP_SAMPLES, None)
                    if not was_waiting:
                        gen.sent_at = time.monotonic()
                    with self._lock:
                        self._inflight.append(_Piece(filler, None, time.perf_counter(), g))
                        self._sent_gen = gen.map.gen_end
                    await ws.send(P.append(filler))
                    try:  # pace the silence in real time unless real audio arrives
                        await asyncio.wait_for(self._wake.wait(), P.STEP_MS / 1000)
                    except (TimeoutError, asyncio.TimeoutError):
                        pass
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), max(0.05, c.keepalive_after_s - idle))
                except (TimeoutError, asyncio.TimeoutError):
                    pass
        except _Fatal:
            raise
        except Exception as exc:  # ConnectionClosed
            raise _Transient(_close_reason(exc)) from None

    async def _recv_loop(self, ws: Any, gen: "_Generation") -> None:
        c = self.config
        while True:
            try:
                message = await asyncio.wait_for(ws.recv(), 0.25)
            except (TimeoutError, asyncio.TimeoutError):
                if gen.unanswered():
                    quiet = time.monotonic() - max(gen.sent_at, gen.last_event)
                    if not gen.answered_once and quiet > c.busy_timeout_s:
                        raise _Fatal(
                            f"Caption server {self.url} accepted the stream but sent nothing for {quiet:.0f} s: it "
                            "is busy serving another stream (one stream per server as deployed). Start a second "
                            "server (docker compose --profile second) or stop the other client."
                        ) from None
                    if gen.answered_once and quiet > c.answer_timeout_s:
                        raise _Transient(f"no answer for {quiet:.0f} s") from None
                continue
            except Exception as exc:  # ConnectionClosed
                raise _Transient(_close_reason(exc)) from None
            gen.last_event = time.monotonic()
            try:
                ev = P.parse_event(message)
            except P.ProtocolError as exc:
                raise _Transient(str(exc)) from None
            if gen.handle(ev):
                return


class _Generation:
    """Per-generation bookkeeping on the loop thread: time map, delta count, held text."""

    def __init__(self, stream: RemoteStream) -> None:
        self.s = stream
        self.map = _TimeMap()
        self.deltas = 0
        self.held = ""
        self.held_from = 0
        self.pending_vad: dict | None = None
        self.final_sent = False
        self.answered_once = False
        self.sent_at = time.monotonic()
        self.last_event = time.monotonic()
        stream._vad.armed = False
        with stream._cond:
            stream._sent_gen, stream._next_need = 0, stream._lag

    def unanswered(self) -> bool:
        """Audio (or the final commit) is waiting for an answer: a whole step more than the
        next delta needs (delay + look-ahead) was sent."""
        return self.final_sent or self.map.gen_end >= self.deltas * P.STEP_SAMPLES + self.s._lag + P.STEP_SAMPLES

    def time_at(self, g: int) -> float:
        return self.map.stream_at(g) / P.SAMPLE_RATE

    def handle(self, ev: dict) -> bool:
        """Apply one server event; True on ``transcription.done``."""
        kind = ev["type"]
        s = self.s
        if kind == "transcription.delta":
            self._delta(str(ev.get("delta") or ""))
        elif kind == "semantic_vad.delta":
            self.pending_vad = ev
        elif kind == "metrics.delta":
            s.metrics = {k: ev.get(k) for k in ("step_ms", "rtf", "rtf_ema", "gpu_memory_used_bytes",
                                                 "gpu_memory_total_bytes", "gpu_memory_used_ratio")}
            with s._lock:
                s.step_ms_recent.append(float(ev.get("step_ms") or 0.0))
        elif kind == "transcription.done":
            if not self.final_sent:
                raise _Transient("the server ended the generation before captioner did")
            self._flush()
            with s._lock:
                s._inflight.clear()
            return True
        elif kind == "error":
            if ev.get("code") == "processing_error" and not self.final_sent:
                raise _Transient(f"server processing error: {str(ev.get('error') or '')[:120]}")
            raise _Fatal(P.error_message(ev, s.url))
        elif kind == "session.created":
            pass
        else:
            log.debug("caption server sent an unknown event type %r", kind)
        return False

    def _delta(self, delta: str) -> None:
        s = self.s
        s._fruitless = 0
        self.deltas += 1
        self.answered_once = True
        g_end = self.deltas * P.STEP_SAMPLES
        t_end = self.time_at(g_end)
        events: list[Event] = []
        fired = None
        vad = self.pending_vad
        self.pending_vad = None
        if vad is not None:
            horizons = tuple(float(h) for h in vad.get("horizons_seconds") or ())
            eot = tuple(float(p) for p in vad.get("eot_probabilities") or ())
            if horizons and len(eot) == len(horizons):
                events.append(VadProbabilities(t_end, horizons, eot))
                if s._vad_index is None:
                    try:
                        s._vad_index = horizon_index(horizons, s.config.vad_horizon_s)
                    except ValueError as exc:
                        if not s._vad_warned:
                            s._vad_warned = True
                            events.append(Notice(f"{exc}; turn ends use the server's selected horizon.",
                                                 "warning", "remote_vad"))
                p = eot[s._vad_index] if s._vad_index is not None else float(vad.get("selected_eot_probability") or 0)
                if s._vad.update(p):
                    fired = p
        if not self.held:
            self.held_from = self.deltas - 1
        text = self.held + delta
        self.held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":  # half of a surrogate pair: wait for the rest
            self.held, text = text[-1], text[:-1]
        if text:
            events.append(TextDelta(_clean(text), self.time_at(self.held_from * P.STEP_SAMPLES), t_end, True))
        if fired is not None:
            events.append(TurnBoundary(t_end, "semantic_vad", fired))
        now = time.perf_counter()
        with s._cond:
            needed = g_end - P.STEP_SAMPLES + s._lag  # the audio this delta needed
            s._next_need = needed + P.STEP_SAMPLES
            s._cond.notify_all()
            while s._inflight and s._inflight[0].gen_start + s._inflight[0].samples <= g_end:
                s._inflight.popleft()  # transcribed: never sent again
            for p in s._inflight:  # client latency: from pushing the piece that completed this step's need
                if p.gen_start + p.samples >= needed:
                    if p.stream_pos is not None and p.gen_start < needed:
                        s.latencies_ms.append((now - p.pushed_at) * 1000.0)
                    break
            s._events.extend(events)

    def _flush(self) -> None:
        if self.held:
            t = self.time_at(self.deltas * P.STEP_SAMPLES)
            self.s._emit(TextDelta(_clean(self.held), self.time_at(self.held_from * P.STEP_SAMPLES), t, True))
            self.held = ""


def _clean(text: str) -> str:
    """Text with any lone surrogate (a character the server split badly) replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _close_reason(exc: BaseException) -> str:
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is not None:
        reason = f": {rcvd.reason}" if rcvd.reason else ""
        return f"the server closed the connection (code {rcvd.code}{reason})"
    if type(exc).__name__.startswith("ConnectionClosed"):
        return "the connection dropped"
    return f"{type(exc).__name__}: {exc}"


_NO_REDIRECT: Any = None


def _connect(url: str, **kwargs: Any) -> Any:
    """``websockets.asyncio.client.connect(url, **kwargs)`` that refuses HTTP redirects, so
    audio (and the key) go only to the URL the user configured. Await it for the connection."""
    global _NO_REDIRECT
    if _NO_REDIRECT is None:
        from websockets.asyncio.client import connect

        class NoRedirect(connect):
            def process_redirect(self, exc: Exception) -> Exception:  # type: ignore[override]
                return exc  # "not a redirect": connect() raises the 3xx InvalidStatus

        _NO_REDIRECT = NoRedirect
    return _NO_REDIRECT(url, **kwargs)
