"""The bounded stop shared by ``captioner listen`` and the GUI: Stop returns within 2 s.

DESIGN: "Stop, Ctrl-C and Quit return within 2 s whatever a device, a server or a
model is doing, and the files are written." A live pipeline is stopped in two
bounded phases: the audio still queued is decoded for at most :data:`DRAIN_S`
seconds; if that is not enough, the rest of the queue is skipped and the sessions
get :data:`FLUSH_S` more seconds for their last words. A model call still running
after that (a hung model, a slow end-of-stream flush) is left behind on its daemon
thread; the caller writes what was decoded and ignores whatever that call delivers
later.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol

#: Seconds to decode the audio still queued at Stop (listen measured 1.67-1.73 s to exit
#: with a hung model at 1.0 s, 1.82-1.97 s at 1.2 s, interpreter exit included)...
DRAIN_S = 1.0
#: ...then seconds for the sessions' last words with the rest of the queue skipped.
FLUSH_S = 0.5


class Stoppable(Protocol):
    """What the bounded stop needs (``LiveCaptioner`` has this shape)."""

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool: ...

    def backlog_s(self) -> float: ...

    def skip_backlog(self) -> float: ...


@dataclass(frozen=True)
class StopOutcome:
    """How a bounded stop went.

    Attributes:
        drained: every queued second was decoded and the sessions ended in time.
        skipped_s: seconds of audio never captioned (0.0 when drained): what was discarded when
            the drain ran out, plus, when the model did not answer, what it was still decoding.
        ended: the run ended within the bound; False = a model call was left running
            (whatever it delivers later must be ignored, and the backend is still busy).
    """

    drained: bool
    skipped_s: float
    ended: bool

    def message(self) -> str:
        """The one sentence that tells the user what was lost, or ``""`` when nothing was."""
        if self.drained:
            return ""
        text = f"The last {self.skipped_s:.1f} s of audio could not be captioned in time"
        if not self.ended:
            text += "; the model did not answer, so the text decoded before it is kept"
        return text + "."


def stop_within(live: Stoppable, on_skip: Callable[[float], None] | None = None,
                drain_s: float = DRAIN_S, flush_s: float = FLUSH_S) -> StopOutcome:
    """Stop ``live`` within ``drain_s + flush_s`` seconds, decoding what the time allows.

    Args:
        live: the running pipeline.
        on_skip: called with the skipped seconds when the drain runs out, before the
            flush phase (``listen`` prints its line there and stops treating a second
            Ctrl-C as "skip the queue").
        drain_s, flush_s: the two bounds (s).

    Returns:
        A :class:`StopOutcome`. A ``KeyboardInterrupt`` during the drain (a second
        Ctrl-C) skips the rest of the queue like a timeout; one during the flush propagates.

    The skipped seconds are those :meth:`LiveCaptioner.skip_backlog` discards, not the
    backlog when the drain ran out: that also holds the audio the model is decoding at that
    moment, whose words still appear during the flush (counting it overstated the notice by
    up to 0.4 s). Only when the flush does not end is that audio lost too, and added.
    """
    try:
        if live.stop(drain=True, timeout=drain_s):
            return StopOutcome(True, 0.0, True)
    except KeyboardInterrupt:
        pass
    skipped = live.skip_backlog()
    if on_skip is not None:
        on_skip(skipped)
    if live.stop(drain=False, timeout=flush_s):
        return StopOutcome(False, skipped, True)
    return StopOutcome(False, skipped + live.backlog_s(), False)


class EventGate:
    """One run's events pass until :meth:`close`, never after it (thread-safe).

    A model call left running by a bounded stop may deliver text later; closing the gate
    before telling the run has stopped keeps that text out of the finished transcript
    and out of the next run.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open = True

    def wrap(self, on_event: Callable[[Any], None]) -> Callable[[Any], None]:
        """``on_event``, called only while the gate is open."""

        def gated(ev: Any) -> None:
            with self._lock:
                if self._open:
                    on_event(ev)

        return gated

    def close(self) -> None:
        """Let nothing more through; returns once an event being delivered is through."""
        with self._lock:
            self._open = False
