"""The loop-thread half of a remote stream: server sessions, reconnects, sending and receiving.

:class:`SessionLoop` is mixed into :class:`~captioner.asr.remote.stream.RemoteStream` (the
caller-thread half, which owns the state it uses); everything here runs on the shared
asyncio loop thread. One task per stream (:meth:`SessionLoop._run`) opens a session
(:func:`~captioner.asr.remote.connection.open_session`), runs one generation on it with a
sender and a receiver task, and on a transient fault rewinds the resend buffer and opens the
next session after a backoff; it never opens one after Stop (``_stopping``), and at most
``MAX_RECONNECTS_AFTER_END`` after the input ended.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import numpy as np

from captioner.asr.base import BackendError
from captioner.asr.remote import protocol as P
from captioner.asr.remote.connection import abort, check_quiet, close_reason, open_session
from captioner.asr.remote.faults import EndedWithoutDone, Fatal, Transient
from captioner.asr.remote.generation import Generation
from captioner.asr.remote.resend import Piece
from captioner.events import Notice, TurnBoundary

log = logging.getLogger("captioner.asr.remote.stream")

#: Sessions in a row that may fail before producing a single delta, before giving up.
MAX_FRUITLESS_SESSIONS = 3
#: New sessions allowed after the input ended (``finish``) to flush the rest after a lost connection.
MAX_RECONNECTS_AFTER_END = 1
#: After an outage was told to the user, further ones within this long only mark the transcript
#: (a server that keeps closing would print two warnings every second); the next one told
#: says how many there were meanwhile (s).
RETELL_AFTER_S = 60.0


class SessionLoop:
    """Loop-thread methods of :class:`~captioner.asr.remote.stream.RemoteStream` (a mixin: the
    attributes it uses are created by ``RemoteStream.__init__``)."""

    _cond: Any
    _lock: Any

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
        tell = True  # the outage under way was told to the user
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
                with self._cond:  # before open() returns: the first steps wait for their answers
                    self._connected = True
                    self._cond.notify_all()
                if first:
                    self._greeted()
                elif outage_since is not None:
                    self._reconnected(seam or 0, time.monotonic() - outage_since, reason, tell)
                outage_since = None
                clean = False  # True only after transcription.done: then the close handshake is polite
                try:
                    await self._generation(ws, Generation(self, None if first else seam), first)
                    clean = True
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
                    log.info("caption server %s: %s; reconnecting", self.url, reason)
                    now = time.monotonic()
                    tell = self._told_at is None or now - self._told_at >= RETELL_AFTER_S
                    if tell:
                        more = (f" ({self._untold} more reconnects since the last notice; each is marked in the "
                                "transcript)" if self._untold else "")
                        self._told_at, self._untold = now, 0
                        self._emit(Notice(f"Lost the caption server {self.url} ({reason}); reconnecting. "
                                          f"Audio is kept meanwhile.{more}", "warning", "remote_reconnecting"))
                    else:
                        self._untold += 1
                finally:
                    with self._cond:
                        self._connected = False
                        self._cond.notify_all()
                    if clean:
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
        log.info("caption server %s: %s; ending the stream", self.url, why)
        if self._stopping:  # the Stop cut the flush short (a stalled path, a slow server)
            with self._lock:
                untranscribed = max(0, self.fed_samples - self._buffer.transcribed) / P.SAMPLE_RATE
            self._emit(Notice(f"Stopped before caption server {self.url} finished the stream ({why}): the last "
                              f"{untranscribed:.1f} s of audio may be missing from the transcript.", "warning",
                              "remote_stopped"))
        else:
            self._emit(Notice(f"Caption server {self.url} did not confirm the end of the stream ({why}); "
                              "the text received so far is kept.", "warning", "remote_no_done"))
        self._done.set()

    def _lost_after_end(self, reason: str) -> None:
        with self._lock:
            untranscribed = max(0, self.fed_samples - self._buffer.transcribed) / P.SAMPLE_RATE
        log.info("caption server %s: %s after the input ended; not reconnecting", self.url, reason)
        why = "Stop was asked" if self._stopping else "the input had ended"
        self._emit(Notice(f"Lost the caption server {self.url} ({reason}) after {why}; no new session was "
                          f"opened. The last {untranscribed:.1f} s of audio may be missing.", "warning",
                          "remote_lost_at_end"))
        self._done.set()

    def _reconnected(self, gap_at: int, outage_s: float, reason: str, tell: bool = True) -> None:
        """Mark the seam; say so when the loss was told (or audio was dropped meanwhile)."""
        t = gap_at / P.SAMPLE_RATE
        with self._lock:  # push() counts drops under the lock
            dropped = self._outage_dropped / P.SAMPLE_RATE
            self._outage_dropped = 0
            self._dropping_reported = False
        lost = (f" {dropped:.1f} s of audio captured during the outage did not fit the buffer and were dropped."
                if dropped else " Audio captured during the outage was sent after reconnecting.")
        if not (tell or dropped):
            self._emit(TurnBoundary(t, "connection_gap", 1.0))
            return
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
                    log.info("caption server %s: no audio for %.0f s; ending the stream", self.url, idle)
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
