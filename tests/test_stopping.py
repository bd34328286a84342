"""The bounded stop rule shared by `captioner listen` and the GUI (captioner.engine.stopping)."""

from __future__ import annotations

import threading

from captioner.engine.stopping import DRAIN_S, FLUSH_S, EventGate, StopOutcome, stop_within


class FakeLive:
    """Answers each ``stop`` with the next scripted result; records the calls."""

    def __init__(self, results, backlog=3.25, queued=None):
        self.results = list(results)
        self.calls = []
        self.backlog = backlog  # not decoded yet, the audio inside the model call included
        self.queued = backlog if queued is None else queued  # not handed to the model yet

    def stop(self, drain=True, timeout=None):
        self.calls.append((drain, timeout))
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result

    def backlog_s(self):
        return self.backlog

    def skip_backlog(self):
        self.calls.append("skip")
        self.backlog -= self.queued
        return self.queued


def test_drained_in_time_is_one_call_and_says_nothing():
    live = FakeLive([True])
    outcome = stop_within(live, on_skip=lambda s: (_ for _ in ()).throw(AssertionError("no skip")))
    assert outcome == StopOutcome(True, 0.0, True) and outcome.message() == ""
    assert live.calls == [(True, DRAIN_S)]


def test_a_backlog_is_skipped_after_the_drain_bound_and_told():
    live = FakeLive([False, True])
    told = []
    outcome = stop_within(live, on_skip=told.append)
    assert live.calls == [(True, DRAIN_S), "skip", (False, FLUSH_S)] and told == [3.25]
    assert outcome == StopOutcome(False, 3.25, True)
    assert outcome.message() == "The last 3.2 s of audio could not be captioned in time."


def test_audio_inside_the_model_call_is_not_told_as_skipped():
    """Issue 30.1: when the drain runs out, 0.2 s is inside the model call and 3.0 s still queued;
    the flush decodes the 0.2 s, so 3.0 s (not the 3.2 s backlog) could not be captioned."""
    told = []
    outcome = stop_within(FakeLive([False, True], backlog=3.2, queued=3.0), on_skip=told.append)
    assert told == [3.0] and outcome == StopOutcome(False, 3.0, True)


def test_a_hung_model_is_left_behind_and_said_once():
    outcome = stop_within(FakeLive([False, False], backlog=1.3, queued=1.0))  # 0.3 s stuck in the model
    assert not outcome.ended
    assert outcome.message() == ("The last 1.3 s of audio could not be captioned in time; the model did not "
                                 "answer, so the text decoded before it is kept.")


def test_a_second_ctrl_c_during_the_drain_skips_the_queue():
    live = FakeLive([KeyboardInterrupt(), True])
    assert stop_within(live) == StopOutcome(False, 3.25, True)


def test_the_gate_drops_events_after_close_and_waits_for_one_in_flight():
    seen = []
    inside, release = threading.Event(), threading.Event()

    def slow(ev):
        inside.set()
        release.wait(5)
        seen.append(ev)

    gate = EventGate()
    deliver = gate.wrap(slow)
    t = threading.Thread(target=deliver, args=("first",))
    t.start()
    assert inside.wait(5)
    closer = threading.Thread(target=gate.close)
    closer.start()
    closer.join(0.05)
    assert closer.is_alive()  # close() waits for the event being delivered
    release.set()
    closer.join(5)
    t.join(5)
    deliver("late")
    assert seen == ["first"]
