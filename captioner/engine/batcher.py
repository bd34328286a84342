"""One worker thread per loaded model that steps up to ``B`` sessions per model call.

This follows the shared-engine design of the TensorFlowASR inference page (section 5):
the worker takes the first request from the queue, waits up to ``max_wait_ms`` for
more until it has ``B``, decodes them in one call, and hands each session its own
result. Chunks of the same session never share a call. A model error is raised in
every session waiting on that call, and the worker keeps running.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Sequence

from captioner.asr.base import Backend, StepResult, StepRow
from captioner.native_calls import model_call

#: Default batching wait (TensorFlowASR ``max_wait_ms`` default, 5 ms).
DEFAULT_MAX_WAIT_MS = 5.0


@dataclass
class _Request:
    owner: int  # id() of the submitting session
    row: StepRow
    future: Future


_STOP = object()


class BatchEngine:
    """Batches :class:`StepRow` requests from many sessions into ``backend.step`` calls.

    Args:
        backend: the loaded model; only this engine's worker thread calls ``step``.
        max_wait_ms: how long (ms) the worker waits after the first request for
            more requests to fill the batch. 0 decodes whatever is queued at once.

    Attributes:
        calls: number of model calls made so far.
        rows: number of rows decoded so far (``rows / calls`` = mean batch fill).
        last_step_ms: wall-clock ms of the most recent model call.
        busy_s: total seconds spent inside ``backend.step``.
    """

    _shared: "weakref.WeakKeyDictionary[Backend, BatchEngine]" = weakref.WeakKeyDictionary()
    _shared_lock = threading.Lock()

    def __init__(self, backend: Backend, max_wait_ms: float = DEFAULT_MAX_WAIT_MS) -> None:
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self.backend = backend
        self.max_wait_ms = float(max_wait_ms)
        self.calls = 0
        self.rows = 0
        self.last_step_ms = 0.0
        self.busy_s = 0.0
        self._queue: "queue.Queue[object]" = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name=f"captioner-{backend.name}", daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls, backend: Backend, max_wait_ms: float = DEFAULT_MAX_WAIT_MS) -> "BatchEngine":
        """The one engine of ``backend`` (created on first use), so sessions share one worker.

        ``max_wait_ms`` only applies when this call creates the engine.
        """
        with cls._shared_lock:
            engine = cls._shared.get(backend)
            if engine is None or engine._closed:
                engine = cls(backend, max_wait_ms)
                cls._shared[backend] = engine
            return engine

    @property
    def batch_size(self) -> int:
        """``B`` of the backend: the most rows one call decodes."""
        return max(1, int(self.backend.batch_size))

    def submit(self, row: StepRow, owner: object) -> Future:
        """Queue one row for decoding.

        Args:
            row: the session's next chunk and state.
            owner: the submitting session; two rows of one owner never share a call.

        Returns:
            A future resolving to the row's :class:`StepResult`, or raising the
            model's exception.

        Raises:
            RuntimeError: the engine was closed.
        """
        return self.submit_many([(row, owner)])[0]

    def submit_many(self, items: Sequence[tuple[StepRow, object]]) -> list[Future]:
        """Queue several rows at once (one per owner) so they can share one call."""
        if self._closed:
            raise RuntimeError("the caption engine is closed; start a new one")
        futures = []
        for row, owner in items:
            fut: Future = Future()
            self._queue.put(_Request(id(owner), row, fut))
            futures.append(fut)
        return futures

    def close(self, timeout: float = 5.0) -> None:
        """Stop the worker after the queued requests; idempotent. Does not close the backend."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    # -- worker ---------------------------------------------------------------------------
    def _collect(self, first: _Request, carry: "collections.deque[_Request]") -> tuple[list[_Request], bool]:
        batch = [first]
        owners = {first.owner}
        stop = False
        deadline = time.monotonic() + self.max_wait_ms / 1000.0

        def take(req: _Request) -> None:
            if req.owner in owners:
                carry.append(req)  # same session: next call, in order
            else:
                owners.add(req.owner)
                batch.append(req)

        while carry and len(batch) < self.batch_size:
            take(carry.popleft())
        while len(batch) < self.batch_size and not stop:
            remaining = deadline - time.monotonic()
            try:
                item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                stop = True
            else:
                take(item)  # type: ignore[arg-type]
        return batch, stop

    def _work(self) -> None:
        carry: "collections.deque[_Request]" = collections.deque()
        stop = False
        while True:
            if carry:
                first = carry.popleft()
            elif stop:
                return
            else:
                item = self._queue.get()
                if item is _STOP:
                    stop = True
                    # drain what is left so no caller waits forever
                    while True:
                        try:
                            nxt = self._queue.get_nowait()
                        except queue.Empty:
                            break
                        if nxt is not _STOP:
                            carry.append(nxt)  # type: ignore[arg-type]
                    continue
                first = item  # type: ignore[assignment]
            batch, got_stop = self._collect(first, carry)
            stop = stop or got_stop
            self._run(batch)

    def _run(self, batch: list[_Request]) -> None:
        live = [r for r in batch if r.future.set_running_or_notify_cancel()]
        if not live:
            return
        t0 = time.perf_counter()
        try:
            with model_call():  # the process never finalises while a step runs (issue 30.2)
                results = self.backend.step([r.row for r in live])
            if len(results) != len(live):
                raise RuntimeError(
                    f"backend {self.backend.name} returned {len(results)} results for {len(live)} rows"
                )
        except BaseException as exc:  # every waiting session gets the error; the worker lives on
            for r in live:
                r.future.set_exception(exc)
            return
        finally:
            dt = time.perf_counter() - t0
            self.busy_s += dt
            self.last_step_ms = dt * 1000.0
            self.calls += 1
            self.rows += len(live)
        for r, res in zip(live, results):
            if not isinstance(res, StepResult):
                r.future.set_exception(TypeError(f"backend returned {type(res).__name__}, not StepResult"))
            else:
                r.future.set_result(res)
