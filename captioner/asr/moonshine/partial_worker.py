"""Optional re-decodes (partials) on their own thread, so finals never wait behind them.

The default model decodes a clip in one blocking call (about 0.1-0.3 s for the 1-4 s open
line of a sentence on the 2-core development machine: ~50 ms encoder plus ~8 ms per
generated token, ``bench/results/default_model_20min.json``). On the engine thread that call
would delay everything behind it: the VAD that completes lines, the final decode, the other
source. Here a :class:`PartialWorker` runs those re-decodes on a second thread, sharing the
process's one loaded model (ONNX Runtime sessions run concurrent calls; each call has its
own state), at a lower CPU priority (``nice`` +``NICE``, Linux) so that when the CPU is
short the engine thread's required work wins.

One re-decode runs at a time (a second would only compete with the first); a session
submits a job, keeps stepping, and collects the text on a later step with :meth:`poll`.
``on_done`` tells the caller the moment a job finishes, so a live engine can collect it
then instead of at its next audio step (up to one 100 ms step later, issue 27).
A job whose line has closed meanwhile is not collected (:meth:`discard`); what it cost is
still handed back (:meth:`take_discarded`) so the budget sees all the CPU partials use.

``threaded=False`` runs each job inside :meth:`submit` (tests that need the exact,
synchronous order of events, and machines with a single core).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import numpy as np

from captioner.native_calls import model_call

#: Niceness added to the partial thread (Linux: per-thread). Finals run at normal priority.
NICE = 10


@dataclass
class PartialJob:
    """One re-decode of an open line.

    Attributes:
        key: the session it belongs to.
        clip: ``[n] float32`` 16 kHz samples to decode (the open line plus padding).
        tag: whatever the session needs to match the result to its line (line id, stream
            generation, line start s, clip length s, session time s at submission).
        kwargs: keyword arguments of the decode besides the clip (the default model's
            ``draft``: the line's previous re-decode's tokens).
        text: the decoded text once done (None before).
        cost_s: wall seconds the decode took once done.
        error: the exception the decode raised, if any.
    """

    key: Hashable
    clip: np.ndarray
    tag: Any
    kwargs: dict = field(default_factory=dict)
    text: str | None = None
    cost_s: float = 0.0
    error: BaseException | None = None
    discarded: bool = False


def usable_cpus() -> int:
    """CPUs this process may run on (affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class PartialWorker:
    """Runs :class:`PartialJob` re-decodes one at a time, off the caller's thread.

    Args:
        decode: ``decode(clip [n] float32, **job.kwargs) -> str``; called on the worker thread only
            (it must be safe to call next to the caller's own decodes: the default
            model's is).
        threaded: False runs each job synchronously inside :meth:`submit`.
        name: the thread's name (seen in the benchmark's per-thread CPU times).
        on_done: called with no arguments on the worker thread right after a job finished
            and can be collected (:meth:`done`, :meth:`poll`); not for discarded jobs, nor
            in synchronous mode. It must return at once (set an event).
    """

    def __init__(self, decode: Callable[..., str], *, threaded: bool = True, name: str = "captioner-partial",
                 on_done: Callable[[], None] | None = None) -> None:
        self._decode = decode
        self._on_done = on_done
        self.threaded = bool(threaded)
        self._cond = threading.Condition()
        self._pending: PartialJob | None = None  # waiting for the thread
        self._running: PartialJob | None = None
        self._done: dict[Hashable, PartialJob] = {}
        self._spent: list[PartialJob] = []  # discarded after they ran: their cost still counts
        self._closed = False
        self._thread: threading.Thread | None = None
        if self.threaded:
            self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
            self._thread.start()

    @property
    def busy(self) -> bool:
        """A job is waiting or running (a new one would have to wait)."""
        with self._cond:
            return self._pending is not None or self._running is not None

    def submit(self, job: PartialJob) -> bool:
        """Queue ``job``; returns False (nothing queued) while another job is busy or after close."""
        with self._cond:
            if self._closed or self._pending is not None or self._running is not None:
                return False
            self._done.pop(job.key, None)
            if self.threaded:
                self._pending = job
                self._cond.notify_all()
                return True
        self._run(job)
        with self._cond:
            self._done[job.key] = job
        return True

    def poll(self, key: Hashable) -> PartialJob | None:
        """The finished job of session ``key`` (once), or None when none has finished."""
        with self._cond:
            return self._done.pop(key, None)

    def done(self, key: Hashable) -> bool:
        """Session ``key`` has a finished job waiting for :meth:`poll`."""
        with self._cond:
            return key in self._done

    def current(self, key: Hashable) -> PartialJob | None:
        """Session ``key``'s job that is waiting or running (not finished), or None."""
        with self._cond:
            for j in (self._pending, self._running):
                if j is not None and j.key == key and not j.discarded:
                    return j
        return None

    def discard(self, key: Hashable) -> None:
        """Forget session ``key``'s jobs: a finished one, a waiting one, the result of a running one."""
        with self._cond:
            self._done.pop(key, None)
            if self._pending is not None and self._pending.key == key:
                self._pending = None
            if self._running is not None and self._running.key == key:
                self._running.discarded = True
            self._cond.notify_all()

    def take_discarded(self) -> list[PartialJob]:
        """Jobs that ran to the end after :meth:`discard` (their ``cost_s`` was spent all the
        same), each returned once; the caller reports their cost to its budget on its own
        thread. Bounded: one job runs at a time, so at most one is added per decode."""
        with self._cond:
            spent, self._spent = self._spent, []
        return spent

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no job is waiting or running (True) or ``timeout`` s passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and self._running is None, timeout)

    def close(self, timeout: float = 0.5) -> None:
        """Stop the thread after the job it is running, waiting up to ``timeout`` s for it.

        Call it before the process exits: a thread still inside the model's native call when
        the interpreter finalises aborts the process (:mod:`captioner.native_calls`). The wait
        is short because it delays the exit after Stop or Ctrl-C: a re-decode takes 0.1-0.6 s
        on the quiet 2-core machine, but up to 2.9 s was measured at load 15 (2026-12-02); one
        still running then is what ``exit_process`` ends the process around.
        """
        with self._cond:
            self._closed = True
            self._pending = None
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    # -- the thread ---------------------------------------------------------------------------
    def _run(self, job: PartialJob) -> None:
        t0 = time.perf_counter()
        try:
            with model_call():  # the process never finalises while a re-decode runs (issue 30.2)
                job.text = self._decode(job.clip, **job.kwargs)
        except BaseException as exc:  # reported to the session by poll(); never kills the thread
            job.error = exc
        job.cost_s = time.perf_counter() - t0

    def _loop(self) -> None:
        try:  # Linux: setpriority on a thread id renices just this thread
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICE))
        except (AttributeError, OSError):  # pragma: no cover - other OSes: normal priority
            pass
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._pending is not None)
                if self._closed:
                    return
                job, self._pending = self._pending, None
                self._running = job
            self._run(job)
            with self._cond:
                self._running = None
                ready = not job.discarded and not self._closed
                if ready:
                    self._done[job.key] = job
                elif job.discarded and len(self._spent) < 64:  # a caller that never collects cannot grow it
                    self._spent.append(job)
                self._cond.notify_all()
            if ready and self._on_done is not None:
                try:
                    self._on_done()
                except Exception:  # noqa: BLE001 - a caller's hook never ends the thread
                    pass
