"""Completed lines decoded on a small pool of threads while the stream goes on (a file, issue 30.3).

A line-cutting backend (the default model, :mod:`captioner.asr.moonshine.backend`) decodes each
completed line as one clip, and that decode is most of a file's CPU time. The text of a line
depends only on the line's own audio, so two lines can be read at once on two cores. In the
file path (``captioner transcribe``, no partials) the backend therefore hands a completed
line to a :class:`LinePool` and puts a :class:`~captioner.asr.base.PendingLine` in the step's
events where the line's events would have been; the engine goes on cutting the next chunks
meanwhile. The session turns every ``PendingLine`` back into the line's events
(:func:`~captioner.asr.base.resolve_lines`, part of the backend contract) in
stream order, just before its turn rules see them (``StreamingSession._post``), so the events
are exactly those of decoding each line in place: same texts, same times, same order.

What a line's events depend on besides its text (the previous final text it is joined to,
where the last final ended) is only read and written by the ``PendingLine`` continuations,
which run one after the other in stream order on the session's consumer thread.

ONNX Runtime's ``run`` releases the GIL and one session takes concurrent calls; each decode
runs on one intra-op thread (``ort_options.session_options``), so two decodes use two
cores instead of sharing one.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

import numpy as np

from captioner.native_calls import model_call

#: Decode threads (measured 2026-12-02 on 2 cores, ``bench/transcribe_rtf.py``).
WORKERS = 2
#: Lines submitted but not yet decoded before :meth:`LinePool.submit` waits: two running, two
#: queued keeps both threads busy across a short line, and bounds the work a Stop waits for
#: (the queued lines' decodes, ~0.2-1 s each on 2 cores).
MAX_PENDING = 4


class LinePool:
    """Runs ``read(clip, at_end) -> str`` for completed lines on ``workers`` threads.

    Args:
        read: the line reader (:meth:`captioner.asr.moonshine.line_framing.LineReader.read`); safe to
            call from several threads at once.
        workers: decode threads.
        max_pending: lines submitted and not yet decoded before :meth:`submit` waits.
    """

    def __init__(self, read: Callable[[np.ndarray, bool], str], workers: int = WORKERS,
                 max_pending: int = MAX_PENDING) -> None:
        self._read = read
        self.workers = max(1, int(workers))
        self._room = threading.BoundedSemaphore(max(self.workers, int(max_pending)))
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="captioner-lines")

    def submit(self, clip: np.ndarray, at_end: bool) -> Future:
        """Start reading one line's ``[n] float32`` samples; waits while ``max_pending`` lines are
        not decoded yet (they finish on their own, so the wait ends).

        Returns:
            A future of the line's text.

        Raises:
            RuntimeError: the pool was closed.
        """
        self._room.acquire()
        try:
            return self._pool.submit(self._run, clip, at_end)
        except BaseException:
            self._room.release()
            raise

    def _run(self, clip: np.ndarray, at_end: bool) -> str:
        try:
            with model_call():  # the process never finalises while a decode runs (issue 30.2)
                return self._read(clip, at_end)
        finally:
            self._room.release()

    def close(self) -> None:
        """Drop the lines not started yet and wait for the running decodes; idempotent."""
        self._pool.shutdown(wait=True, cancel_futures=True)
