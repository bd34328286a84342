"""The remote :class:`~captioner.asr.base.Backend`: Audio8 served over ``/v1/realtime``.

Each session (source) gets its own :class:`~captioner.asr.remote.stream.RemoteStream`, which
travels in ``StepRow.state``; a step hands each chunk to its stream, waits at most
``answer_wait_s`` (60 ms, less than one 80 ms step) for the deltas of that audio, and returns
every event that arrived since the previous step, so text reaches the engine in the step that
sent its audio whenever the server keeps up. Otherwise decoding waits on the network only for
backpressure and for the final ``transcription.done``.

The server pads its own end-of-stream silence, so ``flush_chunks`` is 0 and only real audio
(never the session's end-of-stream padding) is sent.

One server serves one stream as deployed: the backend hands each new session the next free
URL of its list and says clearly when there are more sources than URLs.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.asr.remote import protocol as P
from captioner.asr.remote.config import StreamConfig
from captioner.asr.remote.stream import RemoteStream, StreamStopped


class RemoteBackend(Backend):
    """Audio8 ASR Infinite on one or more remote servers (one stream per URL).

    Args:
        urls: validated server URLs; session ``k`` running at the same time as ``k-1``
            others uses a free one (list a URL twice if that server serves two streams).
        config: settings shared by every stream (its ``url`` is replaced per stream).
        batch_size: most sessions per step (they never share a network call anyway).

    Attributes:
        streams: the streams open now.
    """

    name = "remote"
    flush_chunks = 0
    #: the server's semantic-VAD heads decide turn ends, as for local Audio8 (DESIGN section 2)
    turn_source = "model"

    def __init__(self, urls: Sequence[P.ServerURL], config: StreamConfig, batch_size: int = 2) -> None:
        if not urls:
            raise BackendError("the remote backend needs at least one server URL")
        self.urls = list(urls)
        self.config = config
        self.geometry = ChunkGeometry(P.SAMPLE_RATE, P.STEP_SAMPLES, P.STEP_SAMPLES, P.STEP_MS, config.delay_ms)
        self.batch_size = max(int(batch_size), len(self.urls))
        self._free = list(range(len(self.urls)))
        self._lock = threading.Lock()
        self._interrupted = False
        self.streams: list[RemoteStream] = []

    # -- Backend API ----------------------------------------------------------------------------
    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Send each row's real audio to its stream; return what each stream decoded so far.

        Raises:
            BackendError: a connection that could not be opened (names the URL), more sources
                than servers, or a stream that failed (after its earlier text was delivered).
        """
        streams = []
        for row in rows:  # send every row first, then wait for the answers together
            stream = row.state
            if stream is None and row.audio is not None and not self._interrupted:
                stream = self._open_stream()  # None when Stop came while it connected
            streams.append(stream)
            if stream is not None and row.audio is not None:
                n = int(round((row.end - row.start) * P.SAMPLE_RATE))
                n = max(0, min(n, len(row.audio)))
                if n:
                    stream.push(np.asarray(row.audio[:n], dtype=np.float32))
        deadline = time.monotonic() + self.config.answer_wait_s
        for row, stream in zip(rows, streams):
            if stream is not None and not row.last:
                stream.wait_answered(deadline)
        results = []
        for row, stream in zip(rows, streams):
            if stream is None:  # finish-only row of a session that never sent audio
                results.append(StepResult(None, []))
            elif row.last:
                events = stream.drain_safe() + stream.finish()
                self._release(stream)
                results.append(StepResult(None, events))
            else:
                results.append(StepResult(stream, stream.drain()))
        return results

    def state_stats(self, state: Any) -> dict:
        """Server-side stats of a session: step ms and RTF from ``metrics.delta``, GPU memory,
        client latency, reconnects and outage drops (fields of :class:`~captioner.events.Stats`)."""
        if not isinstance(state, RemoteStream):
            return {}
        m = state.metrics
        out: dict = {"reconnects": state.reconnects}
        if m:
            out.update(step_ms=state.server_step_ms(), rtf=float(m.get("rtf_ema") or m.get("rtf") or 0.0),
                       gpu_memory_used_bytes=int(m.get("gpu_memory_used_bytes") or 0),
                       gpu_memory_total_bytes=int(m.get("gpu_memory_total_bytes") or 0))
        latencies = state.latency_snapshot()
        if latencies:
            out["client_latency_ms"] = statistics.median(latencies)
        if state.dropped_samples:
            out["dropped_s"] = state.dropped_samples / P.SAMPLE_RATE
        return out

    def interrupt(self) -> None:
        """Stop is final (any thread): every open stream ends its outage or flush at once
        (:meth:`RemoteStream.interrupt`) and no new stream or server session is opened until
        :meth:`resume`; audio of a session that had no stream yet is not sent."""
        with self._lock:
            self._interrupted = True
            streams = list(self.streams)
        for s in streams:
            s.interrupt()

    def resume(self) -> None:
        """Allow new streams again (a new run starts after a Stop)."""
        with self._lock:
            self._interrupted = False

    def close(self) -> None:
        """Drop every open stream without flushing. Idempotent."""
        with self._lock:
            streams, self.streams = self.streams, []
            self._free = list(range(len(self.urls)))
        for s in streams:
            s.close()

    def describe(self) -> str:
        """Servers, delay and language in one line (never the key)."""
        servers = ", ".join(u.url for u in self.urls)
        return (f"remote: {servers}, model {self.config.model_name}, clock {P.STEP_MS} ms, "
                f"delay {self.config.delay_ms} ms, language {self.config.language}")

    # -- streams -----------------------------------------------------------------------------------
    def _open_stream(self) -> RemoteStream | None:
        with self._lock:
            if not self._free:
                n = len(self.urls)
                raise BackendError(
                    f"{len(self.streams) + 1} sources need {len(self.streams) + 1} caption servers: an Audio8 server "
                    f"serves one stream at a time, and only {n} server URL{'s are' if n > 1 else ' is'} configured "
                    f"({', '.join(u.url for u in self.urls)}). Give one URL per source, comma-separated "
                    "(e.g. ws://HOST:18191/v1/realtime,ws://HOST:18193/v1/realtime; the same URL twice only if "
                    "that server serves several streams)."
                )
            index = self._free.pop(0)
            stream = RemoteStream(replace(self.config, url=self.urls[index]))
            stream.url_index = index
            self.streams.append(stream)  # an interrupt() during open() reaches it
        try:
            stream.open()
        except BaseException as exc:
            stream.close()
            with self._lock:
                if stream in self.streams:
                    self.streams.remove(stream)
                self._free.insert(0, index)
                self._free.sort()
            if isinstance(exc, StreamStopped):
                return None
            raise
        return stream

    def _release(self, stream: RemoteStream) -> None:
        with self._lock:
            if stream in self.streams:
                self.streams.remove(stream)
                self._free.append(stream.url_index)
                self._free.sort()
