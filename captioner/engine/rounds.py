"""Feeding several sessions from one thread in rounds, so their chunks share model calls.

Live captioning (:mod:`captioner.engine.live`) feeds the microphone and the system audio
this way: each round submits the next chunk of every session that has one in one go, and
the engine batches them (up to the backend's ``B`` rows per call).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Iterable

import numpy as np

from captioner.asr.base import StepRow
from captioner.events import Event

if TYPE_CHECKING:
    from captioner.engine.session import StreamingSession


def feed_many(blocks: Iterable[tuple[StreamingSession, np.ndarray | None]], end: bool = False) -> list[Event]:
    """Feed several sessions from one thread so their chunks share model calls.

    Each round submits the next chunk of every session that has one, in one go, so
    the engine can batch them (up to ``B`` per call); rounds repeat until no session
    has a whole chunk left.

    Args:
        blocks: ``(session, block)`` pairs; ``block`` may be ``None`` (nothing new).
        end: when True, flush and reset every session as :meth:`StreamingSession.end` does.

    Returns:
        All events, in round order (each session's own events stay in order).
    """
    sessions: list[StreamingSession] = []
    for s, block in blocks:
        if block is not None:
            s._push(block)
        if end:
            s._begin_end()
        sessions.append(s)
    events: list[Event] = []
    try:
        while True:
            rows = [(s, r) for s in sessions if (r := s._next_row()) is not None]
            if not rows:
                break
            by_engine: dict[int, list[tuple[StreamingSession, StepRow]]] = {}
            for s, r in rows:
                by_engine.setdefault(id(s.engine), []).append((s, r))
            pending = []
            t0 = time.perf_counter()
            for group in by_engine.values():
                futs = group[0][0].engine.submit_many([(r, s) for s, r in group])
                pending += [(s, r, f) for (s, r), f in zip(group, futs)]
            first_error: BaseException | None = None
            for s, r, f in pending:
                try:
                    res = f.result()
                except BaseException as exc:  # keep the other sessions consistent
                    first_error = first_error or exc
                    continue
                events += s._apply(r, res, time.perf_counter() - t0)
            if first_error is not None:
                raise first_error
        if end:
            for s in sessions:
                events += s._end_events()
    finally:
        if end:
            for s in sessions:
                s.start()
    return events
