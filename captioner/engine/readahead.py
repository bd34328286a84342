"""Reading a file ahead: the decoding of one chunk overlaps the turn detection of the previous ones.

``StreamingSession.feed`` decodes a chunk on the engine thread and then, on the calling
thread, runs the turn rules and the turn detector (smart-turn, whose ONNX call and
features release the GIL) on it, while the engine thread waits for the next chunk. A
file does not have to wait: :class:`ReadAhead` feeds the blocks of a file to the session
on a *reader* thread (which submits each chunk to the engine as soon as the previous one
is decoded, and meanwhile runs the session's VAD pass on the next block, see
``Backend.speech_pass``) and hands every decoded chunk to the calling thread, which applies the turn
half (:meth:`StreamingSession._post`) in stream order. The two halves touch disjoint
parts of the session (the reader: buffer, backend state and counters; the caller: turn
state and detector), and each chunk's turn half gets the stream time its ``feed`` would
have seen, so the events are exactly those of ``for block in blocks: session.feed(block)``
(the transcript of the 20-minute meeting is identical, ``bench/transcribe_rtf.py``).

With the default model the completed lines themselves are read on a pool of two threads
(:mod:`captioner.asr.moonshine.line_pool`): the reader runs up to :data:`MAX_AHEAD` chunks ahead, so
the next lines are cut and read while the caller waits for the text of an earlier one.

Live sources never use this: they have nothing to read ahead, and their partials and
finals must not wait for a queue.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Iterable

import numpy as np

from captioner.events import Event
from captioner.native_calls import model_call

if TYPE_CHECKING:
    from captioner.engine.session import StreamingSession

#: Decoded chunks that may wait for their turn half: each holds one chunk's audio and events.
#: The default model's chunks are 0.1 s, so 300 is 30 s of audio: room for the next lines of a
#: file to be cut and read on the line pool (:mod:`captioner.asr.moonshine.line_pool`; a line is at most
#: 8 s, ``MAX_LINE_S``) while the caller waits for the text of an earlier one. Measured
#: 2026-12-02 on the 2-minute meeting (``bench/transcribe_rtf.py``): with 50 (5 s) the reader
#: never reached the next line's end and no two lines were read at once. A Stop hands them
#: all out (their turn halves run then: ~0.3 s of work for 30 s of the 20-minute meeting, plus
#: the pool's at most ``MAX_PENDING`` line decodes).
MAX_AHEAD = 300
#: Seconds between the reader's checks for a stop while the queue is full.
POLL_S = 0.1


class ReadAhead:
    """Iterate the session's events of each block of ``blocks``, decoded on a reader thread.

    ``next()`` returns the events of the next block, in order (the list
    ``session.feed(block)`` would have returned). Call :meth:`close` to stop early (a Stop,
    Ctrl-C); it returns what was decoded but not yet handed out. After the last block (or
    :meth:`close`) the session is idle again and ``session.end()`` may follow.

    Args:
        session: a started session; nothing else may feed it meanwhile.
        blocks: ``[n] float32`` mono blocks at the session's rate, read lazily.
        max_ahead: decoded chunks that may wait for the caller (see :data:`MAX_AHEAD`).

    Raises (from ``next()``):
        ValueError: a block is not mono.
        Exception: whatever the model raised, after the events decoded before it.
    """

    def __init__(self, session: StreamingSession, blocks: Iterable[np.ndarray], max_ahead: int = MAX_AHEAD) -> None:
        self.session = session
        self._blocks = iter(blocks)
        self._queue: queue.Queue = queue.Queue(max(1, int(max_ahead)))
        self._halt = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._read, name="captioner-read-ahead", daemon=True)
        self._thread.start()

    def __iter__(self) -> ReadAhead:
        return self

    def __next__(self) -> list[Event]:
        events: list[Event] = []
        while not self._done:
            kind, value = self._queue.get()
            if kind == "row":
                events += self._post(value)
            elif kind == "block":
                return events
            elif kind == "error":
                self._finish()
                raise value
            else:  # "done"
                self._finish()
        raise StopIteration

    def close(self) -> list[Event]:
        """Stop reading (after the chunk being decoded) and return the events of every chunk
        decoded so far that ``next()`` did not return yet."""
        self._halt.set()
        events: list[Event] = []
        while not self._done:
            kind, value = self._queue.get()
            if kind == "row":
                events += self._post(value)
            elif kind != "block":  # "done", or an error after a stop: the stop is the story
                self._finish()
        return events

    def abandon(self) -> None:
        """Stop reading without waiting or handing anything out (after an error; a no-op once
        the last block or :meth:`close` was handled)."""
        self._halt.set()
        self._done = True

    def _post(self, value: tuple) -> list[Event]:
        try:
            return self.session._post(*value)
        except BaseException:
            self._halt.set()
            self._done = True  # the reader stops at its next chunk instead of waiting for room
            raise

    # -- the reader thread ---------------------------------------------------------------------
    def _read(self) -> None:
        s = self.session
        try:
            upcoming = next(self._blocks, None)
            while upcoming is not None and not self._halt.is_set():
                block, upcoming = upcoming, next(self._blocks, None)
                with model_call():  # the push runs the VAD pass in ONNX Runtime (issue 30.2)
                    s._push(block)
                ahead = upcoming is not None  # its VAD pass waits for the first chunk in flight
                while (row := s._next_row()) is not None:
                    t0 = time.perf_counter()
                    future = s.engine.submit(row, s)
                    if ahead:
                        with model_call():
                            s._speech_ahead(upcoming)  # while the engine decodes this chunk
                        ahead = False
                    result = future.result()
                    events, audio, speech = s._advance(row, result, time.perf_counter() - t0)
                    self._put(("row", (events, audio, speech, s.stream_time)))
                    if self._halt.is_set():
                        break
                self._put(("block", None))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller in stream order
            self._put(("error", exc))
            return
        self._put(("done", None))

    def _put(self, item: tuple) -> None:
        while not self._done:  # the caller drains until "done" (next() or close()); gone only after an error
            try:
                self._queue.put(item, timeout=POLL_S)
                return
            except queue.Full:
                continue

    def _finish(self) -> None:
        self._done = True
        self._thread.join()
