"""Model calls into native code, counted, so the process never finalises while one runs.

Python 3.11 ends the threads still running at interpreter exit with ``pthread_exit`` as soon
as they next take the GIL. A thread coming back from a C++ call that released the GIL (ONNX
Runtime's ``run``/``run_with_iobinding`` through pybind11, torch) unwinds through pybind11's
``gil_scoped_release`` destructor, which is ``noexcept``: the C++ runtime calls
``std::terminate`` and the process dies with status 134 and "terminate called without an
active exception" on stderr, after the transcript was written. Issue 30.2 found it as the
partial worker's re-decode (``PartialWorker``) still inside ``run_with_iobinding`` when
``captioner listen --file`` returned (gdb on the core dump): 1 run in 6 on a quiet
2-core machine, 1 in 2 with one core kept busy.

So every thread that makes such calls wraps them in :func:`model_call` and is ended in order
before exit (``LiveCaptioner.stop``, ``Backend.close`` joining the partial thread). A call
that cannot be ended -- one a bounded Stop left running on a hung model, a re-decode past its
join bound -- is the exception: :func:`exit_process` then ends the process with ``os._exit``
(after flushing and running the ``atexit`` handlers) instead of finalising the interpreter
around it. Python 3.14 parks such threads instead (gh-87135); 3.11 does not.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
import time
from typing import Iterator

log = logging.getLogger(__name__)

_cond = threading.Condition()
_in_flight: dict[int, int] = {}  # thread ident -> nesting depth of model calls it is inside
_closing = False


class ProcessExiting(RuntimeError):
    """A model call was started after :func:`exit_process` began ending the process."""


@contextlib.contextmanager
def model_call() -> Iterator[None]:
    """Mark the calling thread as inside a native model call for the ``with`` block.

    Nested blocks on one thread count once.

    Raises:
        ProcessExiting: the process is ending (no new call may start; the caller's thread
            reports it like any model error and ends).
    """
    me = threading.get_ident()
    with _cond:
        if _closing and me not in _in_flight:
            raise ProcessExiting("the process is exiting; no new model call")
        _in_flight[me] = _in_flight.get(me, 0) + 1
    try:
        yield
    finally:
        with _cond:
            depth = _in_flight.pop(me) - 1
            if depth:
                _in_flight[me] = depth
            else:
                _cond.notify_all()


def in_flight() -> int:
    """How many threads are inside a model call now."""
    with _cond:
        return len(_in_flight)


def wait_idle(timeout: float) -> bool:
    """Block until no thread is inside a model call (True) or ``timeout`` s passed (False)."""
    with _cond:
        return _cond.wait_for(lambda: not _in_flight, timeout)


def exit_process(code: int, grace_s: float = 0.1) -> int:
    """End the process with ``code``, safely whatever model calls are still running.

    Waits up to ``grace_s`` seconds for running model calls to return, and lets no new one
    start. With none left it returns ``code`` (the caller returns it from ``main``; the
    interpreter exits normally). Otherwise it flushes ``sys.stdout``/``sys.stderr``, runs the
    ``atexit`` handlers (logging, the stderr filter) and calls ``os._exit(code)``: the threads
    are never resumed, so none can abort the process. Call it only as the process's last step
    (``captioner.cli.main`` run as the program), never from a library or a test.

    Args:
        code: the exit status.
        grace_s: seconds to wait for running calls. Short: the threads that can be ended were
            joined before (the partial thread by ``Backend.close``), and a call still running
            now was left behind by a bounded stop that already waited its 1.5 s.
    """
    global _closing
    deadline = time.monotonic() + grace_s
    try:
        with _cond:
            _closing = True
            if _cond.wait_for(lambda: not _in_flight, max(0.0, deadline - time.monotonic())):
                return code
            names = sorted(t.name for t in threading.enumerate() if t.ident in _in_flight)
    except KeyboardInterrupt:  # a further Ctrl-C during the grace: end now (it printed a traceback)
        names = ["(interrupted)"]
    log.info("ending the process around model calls still running on %s", ", ".join(names))
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is not None:
        with contextlib.suppress(Exception):
            run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


__all__ = ["ProcessExiting", "exit_process", "in_flight", "model_call", "wait_idle"]
