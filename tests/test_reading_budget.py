"""Live, a line reads less while the audio waiting to be read grows (issue 48.3).

:class:`ReadingBudget` is driven by a fake clock and a scripted waiting audio; the
:class:`LineReader` tests use the scripted model of ``test_further_framings`` (its readings told
apart by their length) and a budget held at one level.
"""

from __future__ import annotations

import threading

import pytest

from captioner.asr.moonshine import reading_budget as rb
from captioner.asr.moonshine.line_framing import LineReader
from captioner.asr.moonshine.reading_budget import Level, LinePlan, ReadingBudget
from tests.test_further_framings import Cancellable, kind_of, line


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def budget(waiting: float = 0.1) -> tuple[ReadingBudget, Clock, list[float]]:
    clock, now = Clock(), [waiting]
    return ReadingBudget(lambda: now[0], clock=clock), clock, now


def line_read(b: ReadingBudget, clock: Clock, *, overran: bool, extra: bool = True, every_s: float = 3.0) -> Level:
    """One line planned and done ``every_s`` after the previous one; returns its level."""
    clock.t += every_s
    plan = b.plan()
    b.done(plan, extra=extra, overran=overran)
    return plan.level


def test_an_idle_machine_reads_every_line_in_full_and_one_overrun_changes_nothing():
    b, clock, _ = budget(0.1)
    plan = b.plan()
    assert plan.level == Level.ALL and plan.waiting_s == pytest.approx(0.1)
    assert plan.deadline == pytest.approx(clock.t + rb.CAP_S - 0.1)  # when the waiting audio reaches the cap
    b.done(plan, extra=True, overran=False)
    assert [line_read(b, clock, overran=o) for o in (True, False, False, False, False, True, False)] == [Level.ALL] * 7
    assert b.level == Level.ALL  # one long line at a time: never two overruns among four lines


def test_repeated_overruns_drop_the_retimed_readings_then_the_framed_one():
    b, clock, _ = budget(0.1)
    assert [line_read(b, clock, overran=True) for _ in range(2)] == [Level.ALL, Level.ALL]
    assert b.level == Level.NO_RETIMED
    # sure lines (read as cut only) say nothing about the load
    assert line_read(b, clock, overran=False, extra=False) == Level.NO_RETIMED
    assert [line_read(b, clock, overran=o) for o in (True, False, True)] == [Level.NO_RETIMED] * 3
    assert b.level == Level.CUT_ONLY
    assert [line_read(b, clock, overran=True) for _ in range(3)] == [Level.CUT_ONLY] * 3  # the last level
    assert [name for _, name in b.changes] == ["NO_RETIMED", "CUT_ONLY"]


def test_the_level_comes_down_one_step_after_a_hold_and_a_failed_probe_doubles_the_hold():
    b, clock, _ = budget(0.1)
    for _ in range(2):
        line_read(b, clock, overran=True, every_s=1.0)
    assert b.level == Level.NO_RETIMED and b.hold_s == rb.HOLD_S
    clock.t += rb.HOLD_S - 1.0  # not yet: the last overrun was under HOLD_S ago
    assert b.plan().level == Level.NO_RETIMED
    clock.t += 1.0
    assert b.plan().level == Level.ALL  # a probe
    # the core is still busy: the probe overruns twice within its hold, back up, hold doubled
    line_read(b, clock, overran=True, every_s=1.0)
    line_read(b, clock, overran=True, every_s=1.0)
    assert b.level == Level.NO_RETIMED and b.hold_s == 2 * rb.HOLD_S
    clock.t += rb.HOLD_S + 1.0  # the doubled hold has not passed: no probe yet
    assert b.plan().level == Level.NO_RETIMED
    clock.t += rb.HOLD_S
    assert b.plan().level == Level.ALL  # the next probe, which holds: the hold is reset
    for _ in range(int(2 * rb.HOLD_S / 3.0) + 1):
        assert line_read(b, clock, overran=False) == Level.ALL
    assert b.hold_s == rb.HOLD_S


def test_the_hold_doubles_at_most_to_its_longest():
    b, clock, _ = budget(0.1)
    for _ in range(12):  # a core busy for good: every probe fails
        while b.level == Level.ALL:
            line_read(b, clock, overran=True, every_s=0.5)
        clock.t += b.hold_s
        b.plan()
    assert b.hold_s == rb.HOLD_MAX_S


def test_audio_already_waiting_at_a_line_start_reads_that_line_with_less():
    b, clock, now = budget(0.1)
    now[0] = rb.NO_RETIMED_AT_S + 0.01
    assert b.plan().level == Level.NO_RETIMED
    now[0] = rb.CUT_ONLY_AT_S
    plan = b.plan()
    assert plan.level == Level.CUT_ONLY and plan.deadline == pytest.approx(clock.t + rb.CAP_S - rb.CUT_ONLY_AT_S)
    b.done(plan, extra=True, overran=False)  # it fit: that says nothing about reading in full
    now[0] = 2.0  # far behind: no time for anything but the reading as cut
    assert b.plan().deadline == clock.t
    now[0] = 0.1
    assert b.level == Level.ALL and b.plan().level == Level.ALL  # the stored level never moved
    assert b.line_levels == {"ALL": 1, "NO_RETIMED": 1, "CUT_ONLY": 2}


def test_a_broken_waiting_report_reads_as_nothing_waiting():
    def broken() -> float:
        raise ValueError("no report")

    clock = Clock()
    assert ReadingBudget(broken, clock=clock).plan() == LinePlan(Level.ALL, clock.t + rb.CAP_S, 0.0, clock.t)
    assert ReadingBudget(lambda: None, clock=clock).plan().level == Level.ALL
    assert ReadingBudget(clock=clock).plan().waiting_s == 0.0


# -- the line reader under a budget --------------------------------------------------------------------
class Held(ReadingBudget):
    """A budget held at one level, whose cap is ``cap_s`` after each line starts; records the lines."""

    def __init__(self, level: Level, cap_s: float = 60.0) -> None:
        super().__init__(cap_s=cap_s)
        self.level = level
        self.seen: list[tuple[Level, bool, bool]] = []

    def plan(self) -> LinePlan:
        plan = super().plan()
        return LinePlan(self.level, plan.deadline, plan.waiting_s, plan.start)

    def done(self, plan: LinePlan, *, extra: bool, overran: bool) -> None:
        self.seen.append((plan.level, extra, overran))


ANSWERS = dict(cut=("The store engine team.", -0.45), framed=("The store in team.", -0.3),
               slower=("The storage team.", -0.04), faster=("The store team.", -0.2), fastest=("The stork team.", -0.3))


def reader(level: Level, **kw) -> tuple[LineReader, Cancellable, Held]:
    clip = line(2.0)
    model = Cancellable(len(clip), **ANSWERS)
    held = Held(level, **kw)
    return LineReader(model, at_once=True, budget=held), model, held


def test_at_level_all_a_line_reads_as_without_a_budget():
    r, model, held = reader(Level.ALL)
    plain = LineReader(Cancellable(len(line(2.0)), **ANSWERS), at_once=True)
    try:
        assert r.read(line(2.0)) == plain.read(line(2.0)) == "The storage team."
        assert r.started_at_once == plain.started_at_once == 4
        assert sorted(model.calls) == sorted(["cut", "framed", "slower", "faster", "fastest"])
        assert (r.shed_framed, r.shed_retimed, r.capped) == (0, 0, 0)
        assert held.seen == [(Level.ALL, True, False)]
    finally:
        r.close()
        plain.close()


def test_cut_only_starts_no_helper_reading():
    r, model, held = reader(Level.CUT_ONLY)
    try:
        assert r.read(line(2.0)) == "The store engine team."
        assert model.calls == ["cut"] and r.started_at_once == 0
        assert r.shed_framed == 1 and held.seen == [(Level.CUT_ONLY, True, False)]
    finally:
        r.close()


def test_no_retimed_starts_only_the_framed_reading():
    r, model, held = reader(Level.NO_RETIMED)
    try:
        assert r.read(line(2.0)) == "The store in team."  # the surer of the two framings
        assert sorted(model.calls) == ["cut", "framed"] and r.started_at_once == 1
        assert (r.shed_framed, r.shed_retimed, r.capped) == (0, 1, 0)
    finally:
        r.close()


def test_a_framed_reading_still_running_at_the_cap_is_cancelled_and_the_reading_as_cut_kept():
    clip = line(2.0)
    release = threading.Event()

    class Slow(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            if kind_of(self.n_clip, len(audio)) == "framed":  # runs until cancelled (or the test ends)
                while not stop.is_set() and not release.is_set():
                    stop.wait(0.01)
            return super().transcribe_scored(audio, stop)

    model = Slow(len(clip), **ANSWERS)
    held = Held(Level.ALL, cap_s=0.05)
    r = LineReader(model, at_once=True, budget=held)
    try:
        assert r.read(clip) == "The store engine team."
        assert r.capped == 1 and held.seen == [(Level.ALL, True, True)]
    finally:
        release.set()
        r.close()


def test_retimed_readings_still_running_at_the_cap_are_left_out():
    clip = line(2.0)
    release = threading.Event()

    class SlowRetimed(Cancellable):
        def transcribe_scored(self, audio, stop=None):
            if kind_of(self.n_clip, len(audio)) in ("slower", "faster", "fastest"):
                while not stop.is_set() and not release.is_set():
                    stop.wait(0.01)
            return super().transcribe_scored(audio, stop)

    model = SlowRetimed(len(clip), **ANSWERS)
    held = Held(Level.ALL, cap_s=0.3)
    r = LineReader(model, at_once=True, budget=held)
    try:
        assert r.read(clip) == "The store in team."  # the surest of the readings done by the cap
        assert r.capped == 1 and r.late == 3 and held.seen == [(Level.ALL, True, True)]
    finally:
        release.set()
        r.close()


def test_a_sure_line_reads_as_cut_at_every_level_and_says_nothing_to_the_budget():
    for level in Level:
        clip = line(2.0)
        model = Cancellable(len(clip), **dict(ANSWERS, cut=("Yes.", -0.01)))
        held = Held(level)
        r = LineReader(model, at_once=True, budget=held)
        try:
            assert r.read(clip) == "Yes."
            assert held.seen == [(level, False, False)]
        finally:
            r.close()
