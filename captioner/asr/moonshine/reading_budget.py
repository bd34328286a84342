"""How many readings of a completed line live captioning can afford now (issue 48.3).

Live, a completed line is read as cut on the engine thread while the audio that follows waits
(:class:`~captioner.asr.moonshine.line_framing.LineReader`): unless the model is sure of that
reading, with silence around it (the *framed* reading) and, unless still sure of neither, at
three playback rates (the *retimed* readings), on two helper threads. On a quiet 2-core machine
a line read five times has its final ~0.7-0.9 s after it is cut (``bench/reading_cost.py``).
When another program takes a core (a video call) the same readings share the one core left:
measured 2026-12-07 on the 2-minute meeting with a process spinning on one core
(``bench/latency.py --nice -10 --runs before-busy,nobudget-busy,busy``), the audio waiting to be
read reached 1.56-1.74 s and a sentence's final came at p95 1.48-1.73 s; on a machine loaded
further (other people's jobs besides), 2.7-4.1 s and 2.4-3.4 s, with the partial re-decodes
(lower CPU priority) starved: 2-3 partials in two minutes against 50-70.

So live reading is *load-aware*. The signal is the audio waiting to be read: the backlog the
live engine reports to the backend before each step (``DecodeBudget.backlog_s``), plus the wall
time since the line's reading began (the engine thread reads the line; the audio after it keeps
arriving). Three levels, most readings first (:class:`Level`):

* ``ALL``: every reading (today's behaviour, the same text);
* ``NO_RETIMED``: the reading as cut and the framed one;
* ``CUT_ONLY``: the reading as cut.

Each line gets a :class:`LinePlan` (:meth:`ReadingBudget.plan`):

1. **A cap on the waiting audio** (:data:`CAP_S`): readings still running when the waiting audio
   reaches it are cancelled and the line keeps the surest of the readings done (the reading as
   cut at least). This alone bounds the waiting audio, whatever the load.
2. **The level of the line**: the stored level (below), made stricter when the audio waiting at
   the line's start already leaves no room (:data:`NO_RETIMED_AT_S`, :data:`CUT_ONLY_AT_S`).
3. **The stored level**, with hysteresis: :data:`OVERRUNS_UP` lines the cap cut short among the
   last :data:`LINES_SEEN` lines that needed more than the reading as cut raise it one level; it
   comes down one level (a probe) after :data:`HOLD_S` without such an overrun. A probe that
   fails (it is raised again within its hold) doubles the hold, up to :data:`HOLD_MAX_S`; one that
   holds resets it. So a lasting load costs a couple of capped lines every few minutes, not every
   line, and one long line on an idle machine loses only its own late readings.

The partial re-decodes are shed by :class:`~captioner.engine.scheduler.DecodeBudget` once the
waiting audio passes its ``shed_backlog_s`` (0.6 s): the retimed readings go first (0.4 s at a
line's start, or after repeated overruns), then the framed one (0.6 s, with the partials), and the
cap keeps the waiting audio under :data:`CAP_S` unless the reading as cut alone takes longer.

Measured with it (``bench/results/latency_busy_core.json``, two runs each, the same code with the
budget off beside it): one core busy, waiting audio at most 0.86 / 0.80 s (1.72 / 1.56 s without),
a sentence's final p95 0.84 / 0.82 s (1.63 / 1.48 s), 5 of 21 lines cut short by the cap and the
level at ``NO_RETIMED`` for about half the lines (two probes back to ``ALL`` in two minutes);
idle, final p95 0.80 / 0.81 s (0.84 / 0.87 s), 3 of 21 lines capped; partials, erasure and
dropped audio (none) unchanged; live WER 5.9-6.3 % against 7.7 % without (one line's five
readings chose "on Emma Urgent." over "of them are urgent."; one-pass 7.7 %). No Qt, no model:
a clock and a callable.
"""

from __future__ import annotations

import collections
import enum
import time
from dataclasses import dataclass
from typing import Callable

#: Most seconds of audio waiting to be read while a line is read (the engine's backlog at the
#: line's start plus the wall time since): readings still running then are cancelled. Issue 48's
#: targets are at most 1.0 s waiting with a core busy and a sentence's final at p95 at most
#: 0.9 s on an idle machine (the final comes ~0.05-0.1 s after the waiting audio peaks); on the
#: idle machine a line read five times takes 0.7-0.9 s (``bench/reading_cost.py``'s floor), so
#: the cap leaves most of them whole and cuts the slowest few.
CAP_S = 0.85
#: Audio waiting (s) at a line's start from which it is not read retimed: the five readings need
#: ~0.7 s of two idle cores, more than the cap leaves. Measured: the audio waiting at a line's
#: start was at most 0.14 s in every run, idle or busy (the engine catches up in the pause before
#: it), so this and :data:`CUT_ONLY_AT_S` act only when the engine is behind for another reason
#: (audio queued while the model loaded, a stall, lines with no pause between them).
NO_RETIMED_AT_S = 0.4
#: Audio waiting (s) at a line's start from which it is read as cut only: the framed reading
#: needs ~0.3 s, and the partials are shed from 0.6 s (``DecodeBudget.shed_backlog_s``).
CUT_ONLY_AT_S = 0.6
#: Lines the cap cut short, among the last :data:`LINES_SEEN` that needed more than the reading
#: as cut at the current level, that raise the level: one long line on an idle machine does not.
OVERRUNS_UP = 2
#: See :data:`OVERRUNS_UP`.
LINES_SEEN = 4
#: Seconds at a raised level without an overrun before one level down is tried (a probe); a
#: failed probe doubles it, up to :data:`HOLD_MAX_S`.
HOLD_S = 20.0
#: Longest hold (s) between two probes.
HOLD_MAX_S = 160.0


class Level(enum.IntEnum):
    """Which readings of a completed line start (higher: fewer)."""

    ALL = 0  #: as cut, framed, retimed
    NO_RETIMED = 1  #: as cut and framed
    CUT_ONLY = 2  #: as cut


@dataclass(frozen=True)
class LinePlan:
    """What one line may read.

    Attributes:
        level: which readings start (:class:`Level`).
        deadline: clock time (s, the budget's clock) at which the waiting audio reaches the cap:
            readings still running then are cancelled.
        waiting_s: audio waiting to be read when the line's reading began (s).
        start: clock time (s) the line's reading began.
    """

    level: Level
    deadline: float
    waiting_s: float
    start: float = 0.0


class ReadingBudget:
    """The load-aware reading budget of one live :class:`~captioner.asr.moonshine.line_framing.LineReader`
    (see the module docstring). Called from the engine thread only (one line at a time).

    Args:
        waiting: seconds of audio waiting to be read now (the live engine's last backlog report);
            default: none, so only the readings' own wall time counts.
        cap_s: :data:`CAP_S`.
        clock: monotonic clock (s); the deadlines are in its time.
    """

    def __init__(self, waiting: Callable[[], float] | None = None, *, cap_s: float = CAP_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.waiting = waiting or (lambda: 0.0)
        self.cap_s = float(cap_s)
        self.clock = clock
        #: the stored level (the level of a line can be stricter: :meth:`plan`)
        self.level = Level.ALL
        self.hold_s = HOLD_S
        self._since = clock()  # last level change or overrun
        self._probe_at: float | None = None  # when the level last came down, until it holds
        self._seen: collections.deque[bool] = collections.deque(maxlen=LINES_SEEN)
        #: lines planned at each level (by name), for the benchmark
        self.line_levels: dict[str, int] = {level.name: 0 for level in Level}
        #: level changes so far, ``(clock s, level name)``, the last 100
        self.changes: collections.deque[tuple[float, str]] = collections.deque(maxlen=100)
        #: the last 2000 lines: ``(level name, audio waiting at the start s, wall s the reading
        #: took, needed more than the reading as cut, cut short by the cap)`` (the benchmark's)
        self.lines: collections.deque[tuple[str, float, float, bool, bool]] = collections.deque(maxlen=2000)

    def plan(self) -> LinePlan:
        """The plan of a line whose reading begins now (a probe down first, when one is due)."""
        now = self.clock()
        self._probe_held(now)
        if self.level > Level.ALL and now - self._since >= self.hold_s:
            self._set(Level(self.level - 1), now)
            self._probe_at = now
        try:
            waiting = max(0.0, float(self.waiting()))
        except (TypeError, ValueError):  # a broken report reads as nothing waiting
            waiting = 0.0
        level = self.level
        if waiting >= CUT_ONLY_AT_S:
            level = Level.CUT_ONLY
        elif waiting >= NO_RETIMED_AT_S:
            level = max(level, Level.NO_RETIMED)
        self.line_levels[level.name] += 1
        return LinePlan(level, now + max(0.0, self.cap_s - waiting), waiting, now)

    def done(self, plan: LinePlan, *, extra: bool, overran: bool) -> None:
        """A line read with ``plan`` has its final: ``extra``: it needed more than the reading as
        cut (unsure of it); ``overran``: the cap cut its readings short."""
        self.lines.append((plan.level.name, round(plan.waiting_s, 3), round(self.clock() - plan.start, 3),
                           bool(extra), bool(overran)))
        if not extra or plan.level < self.level or (plan.level > self.level and not overran):
            return  # a sure line says nothing, nor does one that read more or fewer readings and fit
        now = self.clock()
        self._seen.append(bool(overran))
        if overran:
            self._since = now
        if sum(self._seen) >= OVERRUNS_UP and self.level < Level.CUT_ONLY:
            if self._probe_at is not None and now - self._probe_at < self.hold_s:
                self.hold_s = min(2 * self.hold_s, HOLD_MAX_S)  # the probe failed
            else:
                self.hold_s = HOLD_S
            self._probe_at = None
            self._set(Level(self.level + 1), now)
        else:
            self._probe_held(now)

    def _probe_held(self, now: float) -> None:
        """A probe down that lasted its hold without being raised again resets the hold."""
        if self._probe_at is not None and now - self._probe_at >= self.hold_s:
            self._probe_at = None
            self.hold_s = HOLD_S

    def _set(self, level: Level, now: float) -> None:
        self.level = level
        self._since = now
        self._seen.clear()
        self.changes.append((round(now, 3), level.name))
