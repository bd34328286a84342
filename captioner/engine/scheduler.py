"""How much optional work (partial re-decodes) one shared backend can afford right now.

Finals are *required* work: every second of audio must be segmented and every finished
line decoded once, whatever it costs. Partials are *optional*: re-decoding the open line
only to show the user an earlier, unstable guess. A :class:`DecodeBudget` is shared by all
sessions of one backend (microphone and system audio) and decides, call by call, whether
a session may spend time on a partial now:

* the required load (busy seconds per wall second over the last ``window_s``) is
  measured; what is left up to ``target_load`` is the headroom for partials -- unless
  partials run on a thread of their own (``parallel``, see
  :mod:`captioner.asr.moonshine.partial_worker`): then ``PARALLEL_LOAD`` of that thread is;
* a partial's cost is predicted from the measured cost of earlier ones (per second of
  the audio it re-decodes, plus a fixed part);
* every session that wants partials gets an equal share of the headroom, so its
  interval is ``cost * n_sessions / headroom`` (never below ``min_interval_s``);
* while the engine is behind (``report_backlog`` above ``shed_backlog_s``), or the
  headroom is too small for a useful interval, partials are shed -- finals never are.

:attr:`overloaded` says the required work alone does not fit (the model is too slow on
this machine): the engine turns that into a plain notice.

Times come from ``clock`` (seconds, monotonic) and from the costs the caller reports, so
tests drive it with a fake clock and injected costs, without sleeping.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass
from typing import Callable, Hashable

#: Busy fraction the partial thread may reach when partials run on their own thread
#: (``parallel``). That thread runs at a lower CPU priority, so it only takes CPU time
#: the finals, the capture and the UI leave over.
PARALLEL_LOAD = 0.9


@dataclass(frozen=True)
class BudgetStats:
    """A snapshot of the budget (for the Stats event and the benchmark).

    Attributes:
        load: required busy seconds per wall second over the window (0..1+).
        optional_load: optional (partial) busy seconds per wall second over the window.
        granted: partial decodes allowed so far.
        shed: partial decodes refused because the engine was behind or had no headroom.
        backlog_s: the last backlog reported (s).
        overloaded: required work alone exceeds ``overload_load``.
    """

    load: float = 0.0
    optional_load: float = 0.0
    granted: int = 0
    shed: int = 0
    backlog_s: float = 0.0
    overloaded: bool = False


class DecodeBudget:
    """Shares one backend's spare compute among its sessions' optional work.

    Args:
        target_load: fraction of one wall second the backend may be busy in total
            (required + optional); the rest is left for capture, UI and noise.
        min_interval_s: shortest interval between two partials of one session (s).
        max_interval_s: partials rarer than this are useless; shed them instead (s).
        shed_backlog_s: backlog (s) above which every partial is shed.
        overload_load: required load above which :attr:`overloaded` is true.
        window_s: length of the load measurement window (s).
        active_s: a session that asked within this many seconds counts as wanting
            partials (for the fair share).
        parallel: partials run on their own thread (and core), not between the finals:
            their headroom is ``PARALLEL_LOAD`` of that thread, whatever the required load.
        clock: monotonic clock (s).
    """

    def __init__(
        self,
        *,
        target_load: float = 0.75,
        min_interval_s: float = 0.3,
        max_interval_s: float = 4.0,
        shed_backlog_s: float = 0.6,
        overload_load: float = 0.9,
        window_s: float = 10.0,
        active_s: float = 2.0,
        parallel: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target_load = float(target_load)
        self.min_interval_s = float(min_interval_s)
        self.max_interval_s = float(max_interval_s)
        self.shed_backlog_s = float(shed_backlog_s)
        self.overload_load = float(overload_load)
        self.window_s = float(window_s)
        self.active_s = float(active_s)
        self.parallel = bool(parallel)
        self.clock = clock
        self._t0 = clock()
        self._required: collections.deque[tuple[float, float]] = collections.deque()  # (time, cost)
        self._optional: collections.deque[tuple[float, float]] = collections.deque()
        self._last: dict[Hashable, float] = {}  # key -> time of its last partial
        self._asked: dict[Hashable, float] = {}  # key -> time it last asked
        self._rate = 0.25  # predicted partial cost per second of re-decoded audio (s/s)
        self._fixed = 0.02  # predicted fixed cost of one partial (s)
        self.backlog_s = 0.0
        self.granted = 0
        self.shed = 0

    # -- measurements ---------------------------------------------------------------------------
    def record_required(self, cost_s: float) -> None:
        """Report ``cost_s`` seconds of required work (segmentation, final decodes)."""
        self._push(self._required, cost_s)

    def record_optional(self, cost_s: float, audio_s: float) -> None:
        """Report a partial that re-decoded ``audio_s`` seconds of audio in ``cost_s`` s."""
        self._push(self._optional, cost_s)
        per_s = max(0.0, cost_s - self._fixed) / max(audio_s, 0.1)
        self._rate = 0.7 * self._rate + 0.3 * per_s

    def report_backlog(self, backlog_s: float) -> None:
        """The engine's current backlog (s of captured audio not yet decoded, worst source)."""
        self.backlog_s = max(0.0, float(backlog_s))

    def forget(self, key: Hashable) -> None:
        """A session ended: drop what the budget keeps for it."""
        self._last.pop(key, None)
        self._asked.pop(key, None)

    # -- decisions ------------------------------------------------------------------------------
    def predicted_cost(self, audio_s: float) -> float:
        """Predicted seconds a partial over ``audio_s`` seconds of audio costs."""
        return self._fixed + self._rate * max(0.0, audio_s)

    def load(self) -> float:
        """Required busy seconds per wall second over the window."""
        return self._load(self._required)

    def optional_load(self) -> float:
        """Optional busy seconds per wall second over the window."""
        return self._load(self._optional)

    def interval_s(self, audio_s: float) -> float:
        """Interval (s) between partials of one session at the current headroom (inf: none)."""
        headroom = PARALLEL_LOAD if self.parallel else self.target_load - self.load()
        if headroom <= 0:
            return float("inf")
        now = self.clock()
        n = max(1, sum(1 for t in self._asked.values() if now - t <= self.active_s))
        return max(self.min_interval_s, self.predicted_cost(audio_s) * n / headroom)

    def allow_optional(self, key: Hashable, audio_s: float) -> bool:
        """May session ``key`` re-decode ``audio_s`` seconds of its open line now?

        Returns True when a partial is due and affordable (and counts it as granted);
        False when it is not due yet, or when it is shed (engine behind, no headroom).
        """
        now = self.clock()
        self._asked[key] = now
        self._prune(now)
        if self.backlog_s > self.shed_backlog_s:
            self.shed += 1
            return False
        interval = self.interval_s(audio_s)
        if interval > self.max_interval_s:
            self.shed += 1
            return False
        last = self._last.get(key)
        if last is not None and now - last < interval:
            return False
        self._last[key] = now
        self.granted += 1
        return True

    @property
    def overloaded(self) -> bool:
        """The required work alone does not fit in real time (measured over a full window)."""
        return self.clock() - self._t0 >= self.window_s and self.load() > self.overload_load

    def stats(self) -> BudgetStats:
        """A snapshot of the counters and loads."""
        return BudgetStats(self.load(), self.optional_load(), self.granted, self.shed, self.backlog_s, self.overloaded)

    # -- internals ------------------------------------------------------------------------------
    def _push(self, dq: collections.deque, cost_s: float) -> None:
        now = self.clock()
        dq.append((now, max(0.0, float(cost_s))))
        self._prune(now)

    def _prune(self, now: float) -> None:
        for dq in (self._required, self._optional):
            while dq and now - dq[0][0] > self.window_s:
                dq.popleft()
        stale = [k for k, t in self._asked.items() if now - t > 60.0]
        for k in stale:
            self.forget(k)

    def _load(self, dq: collections.deque) -> float:
        now = self.clock()
        span = min(self.window_s, max(now - self._t0, 1e-3))
        return sum(c for t, c in dq if now - t <= self.window_s) / span
