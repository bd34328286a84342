"""A scripted, protocol-faithful Audio8 ``/v1/realtime`` server for tests (loopback only).

Behaves like the reference deployment (``audio8_asr_infinite/vllm_serve/vllm0271/realtime``,
DESIGN section 2 "Remote"), on the same ``websockets`` library the client uses:

* ``session.created`` on accept; ``session.update`` needs ``model`` on the first one
  (``invalid_event``), a served name (``model_not_found``); language defaults to zh;
* ``append``: base64 PCM16; bad base64, odd byte count or empty -> ``invalid_audio``;
* ``commit final=false`` before a valid update -> ``model_not_validated``; else starts a
  generation; ``final=true`` -> (delay + 1 + 10) steps of padding, then ``transcription.done``;
* the reference schedule (``Audio8RealtimeAudioTokenBuffer``: a 32-step left pad is
  prefilled with the prompt, then one window per 80 ms step): delta ``j`` (0-based) is sent
  as soon as the server holds ``j * 1280 + 40`` samples of the generation (its step plus the
  2.5 ms look-ahead), and a delayed-streams model's token describes the audio one delay
  (``d = target_delay_ms / 80`` steps) before: delta ``j`` says the text of audio step
  ``j - d``, the first ``d`` deltas describe the left pad (empty). After ``final`` the
  ``d + 1 + 10`` steps of right padding let it finish: N steps of audio give N + d + 11
  deltas. Per delta: ``metrics.delta``, ``semantic_vad.delta`` (when the script has VAD),
  then exactly one ``transcription.delta`` (empty ones included);
* errors are flat ``{type:error, error, code}`` and never close the socket; unknown types ->
  ``unknown_event``; invalid JSON -> ``invalid_json``; a binary frame ends the connection
  without an error event.

What it says is scripted (:class:`Script`): text per step (or decoded from the audio: a
step whose samples hold the constant ``k / 1000`` says word ``wk``), VAD probabilities per
step, and faults (close with a code, abrupt drop, silence, slow reading, error events with
any code, malformed frames, no ``transcription.done``). Every received sample is counted per
connection, so tests can prove nothing was lost or sent twice.

:class:`Relay` is a loopback TCP relay in front of it that can stop forwarding while keeping
both sockets open: the half-open connection a flaky network or a hung proxy leaves behind.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

STEP = 1280
LOOKAHEAD = 40  # 2.5 ms
HORIZONS = [0.5, 1.0, 2.0, 3.0]
SERVED = "audio8-asr-infinite"


def word_audio(words: list[int], steps_each: int = 1) -> np.ndarray:
    """``[len(words) * steps_each * 1280] float32`` audio that the word decoder reads back:
    step samples hold ``k / 1000`` for word ``k`` (0 = silence)."""
    return np.concatenate([np.full(STEP * steps_each, k / 1000.0, dtype=np.float32) for k in words])


@dataclass
class Script:
    """What the server says and does.

    Attributes:
        text: token index (0-based, per generation) -> delta text; tokens not listed send "".
        words_from_audio: token ``k`` says the word held by audio step ``k`` (see
            :func:`word_audio`) instead.
        word_at_end: with ``words_from_audio``, a word held by several steps in a row is said
            once, by the token of its last step, and only when this generation heard its first
            step after something else (silence or another word): a session that starts in the
            middle of a word cannot recognise it, as a real model cannot.
        text_by_connection: connection number -> ``text`` for that connection instead.
        vad: step -> eot probabilities per horizon (None = no VAD heads: no VAD events).
        close_after_steps: (steps, code) close the socket once a connection sent the text of
            that many audio steps (``d`` deltas more: the first ``d`` describe the left pad).
        drop_after_steps: abort the TCP connection after that many steps (counted the same way).
        binary_after_steps: after that many steps end the connection the way the reference does
            after a binary frame (its ``receive_text`` fails): a normal close, no error event.
        binary_frame_at_step: send a binary frame to the client at that step (then go on).
        error_at_step: (step, code) send that error event at that step of the first generation.
        errors: step -> code: error events at those steps (any code, also unknown ones).
        bad_frame_at_step: step -> raw text frame sent after that step's delta (not JSON, ...).
        no_done: after ``final`` send every delta but never ``transcription.done``.
        processing_error_at_step: fail the first generation there (error, no done).
        processing_error_always: ... and every later generation too (a broken server).
        silent: send session.created and then never anything else.
        greet: send ``session.created`` on accept (False: accept and say nothing at all).
        read_pause_s: stop reading for this long after the first append (slow reader).
        faults_on_connection: apply the fault scripts on this connection number only (0-based).
        faults_on_every_connection: ... on every connection instead (a server that keeps failing).
        step_ms: server-side delay per step (simulated model time).
    """

    text: dict[int, str] = field(default_factory=dict)
    words_from_audio: bool = False
    word_at_end: bool = False
    text_by_connection: dict[int, dict[int, str]] = field(default_factory=dict)
    vad: dict[int, list[float]] | Callable[[int], list[float]] | None = None
    close_after_steps: tuple[int, int] | None = None
    drop_after_steps: int | None = None
    binary_after_steps: int | None = None
    binary_frame_at_step: int | None = None
    error_at_step: tuple[int, str] | None = None
    errors: dict[int, str] = field(default_factory=dict)
    bad_frame_at_step: dict[int, str] = field(default_factory=dict)
    no_done: bool = False
    processing_error_at_step: int | None = None
    processing_error_always: bool = False
    silent: bool = False
    greet: bool = True
    read_pause_s: float = 0.0
    faults_on_connection: int = 0
    faults_on_every_connection: bool = False
    step_ms: float = 0.0


@dataclass
class ConnectionLog:
    """What one connection received."""

    updates: list[dict] = field(default_factory=list)
    samples: list[np.ndarray] = field(default_factory=list)
    commits: list[bool] = field(default_factory=list)
    headers: dict = field(default_factory=dict)
    steps: int = 0
    #: generation audio step of every token this connection produced, per generation
    transcribed: list[list[int]] = field(default_factory=list)
    done_sent: int = 0
    closed: bool = False

    @property
    def received(self) -> np.ndarray:
        return np.concatenate(self.samples) if self.samples else np.zeros(0, dtype=np.float32)


class ScriptedServer:
    """Run :class:`Script` on ``ws://127.0.0.1:PORT/v1/realtime`` in a background thread.

    Use as a context manager; ``url`` is the address; ``connections`` logs each connection.
    """

    def __init__(self, script: Script | None = None, *, token: str | None = None,
                 rcvbuf: int | None = None, ssl_context=None) -> None:
        self.script = script or Script()
        self.token = token
        self.rcvbuf = rcvbuf
        self.ssl_context = ssl_context
        self.connections: list[ConnectionLog] = []
        #: while this returns True, new connections get HTTP 503 (the server is "down")
        self.refuse: Callable[[], bool] = lambda: False
        #: when set, every handshake is answered with a 302 redirect to this URL
        self.redirect_to: str | None = None
        self.changed = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"{'wss' if self.ssl_context else 'ws'}://127.0.0.1:{self.port}/v1/realtime"

    def __enter__(self) -> "ScriptedServer":
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Block until ``predicate()`` (checked whenever a connection changes) or timeout."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True

    def total_received(self) -> np.ndarray:
        return np.concatenate([c.received for c in self.connections]) if self.connections else np.zeros(0)

    async def _start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if self.rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._server = await serve(self._handle, sock=sock, process_request=self._check_auth,
                                   ssl=self.ssl_context, max_size=2**24, ping_interval=None, compression=None)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _check_auth(self, connection, request):
        if request.path.split("?")[0] != "/v1/realtime":
            return connection.respond(404, "Not Found\n")
        if self.redirect_to:
            response = connection.respond(302, "")
            response.headers["Location"] = self.redirect_to
            return response
        if self.refuse():
            return connection.respond(503, "Service Unavailable\n")
        if self.token and request.headers.get("Authorization") != f"Bearer {self.token}":
            return connection.respond(401, "Unauthorized\n")
        return None

    def _notify(self) -> None:
        with self.changed:
            self.changed.notify_all()

    async def _handle(self, ws) -> None:
        # like uvicorn's sockets (asyncio skips it for a socket passed in with sock=): no Nagle delay
        ws.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        number = len(self.connections)
        conn = ConnectionLog(headers=dict(ws.request.headers))
        self.connections.append(conn)
        faults = self.script.faults_on_every_connection or number == self.script.faults_on_connection
        s = self.script
        if s.greet or not faults:
            await ws.send(json.dumps({"type": "session.created", "id": f"sess-{number}",
                                      "created": int(time.time())}))
        self._notify()
        state = {"validated": False, "language": "zh", "delay": None, "generation": None, "number": number}
        try:
            while True:
                if s.read_pause_s and faults and conn.samples and not state.get("paused"):
                    state["paused"] = True
                    await asyncio.sleep(s.read_pause_s)
                message = await ws.recv()
                if isinstance(message, bytes):  # starlette's receive_text fails: connection ends, no error event
                    return
                try:
                    ev = json.loads(message)
                except ValueError:
                    await self._error(ws, "Invalid JSON", "invalid_json")
                    continue
                try:
                    await self._event(ws, conn, state, ev, faults, number)
                except _Drop:
                    ws.transport.abort()
                    return
                except _Close as c:
                    await ws.close(c.code, "scripted close")
                    return
                except _Stop:
                    return
                self._notify()
        except ConnectionClosed:
            return
        finally:
            conn.closed = True
            self._notify()

    async def _error(self, ws, message: str, code: str) -> None:
        await ws.send(json.dumps({"type": "error", "error": message, "code": code}))

    async def _event(self, ws, conn: ConnectionLog, state: dict, ev: dict, faults: bool, number: int) -> None:
        s = self.script
        kind = ev.get("type")
        if s.silent and faults:
            if kind == "input_audio_buffer.append":
                conn.samples.append(_decode(ev.get("audio", "")) if _decode(ev.get("audio", "")) is not None
                                    else np.zeros(0, np.float32))
            return
        if kind == "session.update":
            conn.updates.append(ev)
            model = ev.get("model")
            if model is None and not state["validated"]:
                return await self._error(ws, "Missing required field: model", "invalid_event")
            if model is not None and model != SERVED:
                return await self._error(ws, f"The model `{model}` does not exist.", "model_not_found")
            if not isinstance(ev.get("target_delay_ms", 0), int):
                return await self._error(ws, "target_delay_ms must be an integer", "processing_error")
            if ev.get("language") is not None:
                state["language"] = ev["language"]
            if ev.get("target_delay_ms") is not None:
                state["delay"] = ev["target_delay_ms"]
            state["validated"] = True
        elif kind == "input_audio_buffer.append":
            audio = _decode(ev.get("audio"))
            if audio is None or audio.size == 0:
                return await self._error(ws, "Invalid audio data", "invalid_audio")
            conn.samples.append(audio)
            gen = state["generation"]
            if gen is not None:
                gen["audio"] = np.concatenate([gen["audio"], audio])
                while state["generation"] is gen and gen["steps"] * STEP + LOOKAHEAD <= len(gen["audio"]):
                    await self._step(ws, conn, state, faults)
        elif kind == "input_audio_buffer.commit":
            if not state["validated"]:
                return await self._error(ws, "Model not validated. Make sure to validate the model by sending "
                                         "a session.update event.", "model_not_validated")
            conn.commits.append(bool(ev.get("final")))
            if ev.get("final"):
                gen = state["generation"]
                if gen is None:
                    return
                # the right padding: every window that fits in audio + (d + 1 + 10) steps
                total = (len(gen["audio"]) + (self._delay_steps(state) + 11) * STEP - LOOKAHEAD) // STEP + 1
                while state["generation"] is gen and gen["steps"] < total:
                    await self._step(ws, conn, state, faults)
                if state["generation"] is gen and s.no_done:
                    return  # the generation never ends (a server that loses the done)
                if state["generation"] is gen:
                    await ws.send(json.dumps({"type": "transcription.done", "text": gen["text"],
                                              "usage": {"prompt_tokens": 16, "completion_tokens": gen["steps"],
                                                        "total_tokens": 16 + gen["steps"]}}))
                    conn.done_sent += 1
                    state["generation"] = None
            elif state["generation"] is None:
                state["generation"] = {"audio": np.zeros(0, np.float32), "steps": 0, "text": "", "failed": False}
                conn.transcribed.append([])
        else:
            await self._error(ws, f"Unknown event type: {kind}", "unknown_event")

    def _delay_steps(self, state: dict) -> int:
        return int(state["delay"] or 480) // 80

    async def _step(self, ws, conn: ConnectionLog, state: dict, faults: bool) -> None:
        """Send delta ``j = gen["steps"]``: the text of audio step ``k = j - d`` (nothing while
        ``k < 0``: the left pad; zeros past the audio). Faults keyed by step use ``k``."""
        s = self.script
        gen = state["generation"]
        if gen is None or gen["failed"]:
            return
        k = gen["steps"] - self._delay_steps(state)
        chunk = gen["audio"][k * STEP : (k + 1) * STEP] if k >= 0 else gen["audio"][:0]
        if s.step_ms:
            await asyncio.sleep(s.step_ms / 1000)
        conn.steps += 1
        if s.processing_error_at_step == k and (faults or s.processing_error_always):
            gen["failed"] = True
            state["generation"] = None
            return await self._error(ws, "CUDA error: scripted failure", "processing_error")
        if faults and s.error_at_step and s.error_at_step[0] == k:
            await self._error(ws, "scripted error", s.error_at_step[1])
        if faults and k in s.errors:
            await self._error(ws, "scripted error", s.errors[k])
        await ws.send(json.dumps({"type": "metrics.delta", "step_index": k, "step_ms": 21.5, "audio_ms": 80.0,
                                  "rtf": 0.27, "rtf_ema": 0.26, "gpu_memory_used_bytes": 12_900_000_000,
                                  "gpu_memory_total_bytes": 24_000_000_000, "gpu_memory_used_ratio": 0.54}))
        if s.vad is not None:
            eot = s.vad(k) if callable(s.vad) else s.vad.get(k, [0.05, 0.05, 0.05, 0.05])
            probs = [[p] + [(1 - p) / 7] * 7 for p in eot]
            await ws.send(json.dumps({"type": "semantic_vad.delta", "step_index": k, "horizons_seconds": HORIZONS,
                                      "predicted_classes": [0 if p > 0.5 else 1 for p in eot],
                                      "probabilities": probs, "eot_probabilities": eot,
                                      "selected_eot_horizon_seconds": 1.0, "selected_eot_probability": eot[1]}))
        if k < 0:
            delta = ""
        elif s.words_from_audio and s.word_at_end:
            delta = _word_at_end(gen["audio"], k)
        elif s.words_from_audio:
            word = int(round(float(np.median(chunk)) * 1000)) if len(chunk) else 0
            delta = f" w{word}" if word > 0 else ""
        else:
            delta = s.text_by_connection.get(state["number"], s.text).get(k, "")
        gen["text"] += delta
        gen["steps"] += 1
        if k >= 0:
            conn.transcribed[-1].append(k)
        await ws.send(json.dumps({"type": "transcription.delta", "delta": delta}))
        if faults and k in s.bad_frame_at_step:
            await ws.send(s.bad_frame_at_step[k])
        said = conn.steps - self._delay_steps(state)  # deltas about real audio (not the left pad)
        if faults and s.binary_frame_at_step == said:
            await ws.send(b"\x00\x01")
        if faults and s.binary_after_steps == said:
            raise _Close(1000)
        if faults and s.close_after_steps and s.close_after_steps[0] == said:
            raise _Close(s.close_after_steps[1])
        if faults and s.drop_after_steps == said:
            raise _Drop()


def _step_word(audio: np.ndarray, k: int) -> int:
    chunk = audio[k * STEP : (k + 1) * STEP]
    return int(round(float(np.median(chunk)) * 1000)) if len(chunk) else 0


def _word_at_end(audio: np.ndarray, k: int) -> str:
    """Token ``k`` of the ``word_at_end`` decoder: the word whose last step is ``k``, if heard from its start."""
    word = _step_word(audio, k)
    if word <= 0 or _step_word(audio, k + 1) == word:
        return ""
    first = k
    while first > 0 and _step_word(audio, first - 1) == word:
        first -= 1
    return f" w{word}" if first > 0 else ""  # first == 0: the generation began inside the word


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``upstream_port`` (a thread per direction).

    :meth:`stall` makes every open connection stop forwarding in both directions while both
    sockets stay open (nothing is read, nothing closed: a half-open path). ``hold_new`` makes
    new connections hang the same way from the start (a connect that never completes its
    handshake). Use as a context manager; ``url`` is the relayed server address.
    """

    def __init__(self, upstream_port: int, path: str = "/v1/realtime") -> None:
        self.upstream_port = upstream_port
        self.path = path
        self.hold_new = False
        self.accepted = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._pairs: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._markers: set[tuple[str, int]] = set()
        self._marker_seen = threading.Event()

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}{self.path}"

    def __enter__(self) -> "Relay":
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self._threads.append(t)
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        with self._lock:
            pairs = list(self._pairs)
        for a, b, _ in pairs:
            for sock in (a, b):
                try:
                    sock.close()
                except OSError:
                    pass
        for t in self._threads:
            t.join(5)
        self._listener.close()

    def stall(self) -> None:
        """Stop forwarding on every open connection; keep both sockets open."""
        with self._lock:
            for _, _, frozen in self._pairs:
                frozen.set()

    def settle(self, timeout: float = 5.0) -> int:
        """:attr:`accepted` once every connection made before this call has been accepted.

        A client's TCP connect to 127.0.0.1 completes in the kernel at once; this relay's thread
        accepts it later. So a connect made before the client's Stop returned can be counted after
        it. A marker connection goes in behind the others (the listen backlog is first in, first
        out) and is not counted; when the relay has seen it, every earlier connect is counted.

        Raises:
            TimeoutError: the relay did not reach the marker within ``timeout`` s.
        """
        marker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            marker.bind(("127.0.0.1", 0))
            with self._lock:
                self._markers.add(marker.getsockname())
                self._marker_seen.clear()
            marker.connect(("127.0.0.1", self.port))
            if not self._marker_seen.wait(timeout):
                raise TimeoutError(f"the relay did not accept its marker connection within {timeout} s")
        finally:
            marker.close()
        with self._lock:
            return self.accepted

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, peer = self._listener.accept()
            except (TimeoutError, socket.timeout):
                continue
            except OSError:
                return
            with self._lock:
                marker = tuple(peer) in self._markers
            if marker:
                client.close()
                self._marker_seen.set()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            frozen = threading.Event()
            if self.hold_new:
                frozen.set()
            with self._lock:
                self._pairs.append((client, upstream, frozen))
                self.accepted += 1
            for src, dst in ((client, upstream), (upstream, client)):
                t = threading.Thread(target=self._pump, args=(src, dst, frozen), daemon=True)
                t.start()
                self._threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, frozen: threading.Event) -> None:
        import select

        while not self._closing.is_set():
            if frozen.is_set():
                self._closing.wait(0.05)  # hold everything: read nothing, close nothing
                continue
            try:
                ready, _, _ = select.select([src], [], [], 0.05)
                if not ready or frozen.is_set():
                    continue
                data = src.recv(65536)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
            except OSError:
                return


class _Drop(Exception):
    pass


class _Stop(Exception):
    pass


class _Close(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _decode(audio) -> np.ndarray | None:
    if not isinstance(audio, str):
        return None
    try:
        raw = base64.b64decode(audio, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) % 2:
        return None
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0
