"""The live lane's queue (captioner/engine/lanes.py) and the too-slow notice (engine/too_slow.py)."""

import numpy as np

from captioner.engine.lanes import Gap, Lane
from captioner.engine.too_slow import TooSlow
from captioner.events import Notice


class _Src:
    target_rate = 16000


def _lane() -> Lane:
    return Lane(_Src(), session=None, meter=None)


def test_take_splits_a_block_and_stops_at_a_gap():
    lane = _lane()
    lane.enqueue(np.arange(10, dtype=np.float32), max_pending=100)
    lane.mark_gap(Gap(2.0, Notice("gap", "info", "gap")))
    lane.enqueue(np.ones(5, np.float32), max_pending=100)
    first = lane.take(most=4)
    assert first.tolist() == [0, 1, 2, 3] and lane.pending_samples == 11
    assert lane.take().tolist() == [4, 5, 6, 7, 8, 9]  # up to the gap, not past it
    assert lane.take() is None
    assert lane.take_gap().seconds == 2.0 and lane.take_gap() is None
    assert lane.take().tolist() == [1.0] * 5 and lane.pending_samples == 0


def test_a_full_queue_drops_and_counts_the_rest():
    lane = _lane()
    lane.enqueue(np.zeros(8, np.float32), max_pending=10)
    lane.enqueue(np.zeros(8, np.float32), max_pending=10)
    assert (lane.pending_samples, lane.dropped, lane.drops) == (10, 6, 1)


def test_skip_all_counts_the_seconds_and_keeps_the_gap_markers():
    lane = _lane()
    lane.enqueue(np.zeros(8000, np.float32), max_pending=10**6)
    lane.mark_gap(Gap(1.0, Notice("gap", "info", "gap")))
    lane.enqueue(np.zeros(16000, np.float32), max_pending=10**6)
    assert lane.skip_all() == 1.5
    assert lane.pending_samples == 0 and lane.take_gap() is not None


class _Budget:
    overloaded = True
    window_s = 5.0

    def load(self):
        return 1.3


def test_too_slow_waits_for_the_catch_up_then_tells_once():
    ts = TooSlow(backlog_s=10.0)
    ts.start(catch_up_s=8.0)  # 8 s queued while the model loaded
    assert ts.check(12.0, _Budget(), now=0.0, model="default") is None  # 12 < 10 + 8, and catching up
    assert ts.check(0.5, _Budget(), now=1.0, model="default") is None  # caught up: one more budget window
    notice = ts.check(0.5, _Budget(), now=6.5, model="default")
    assert notice is not None and notice.code == "too_slow" and "130 %" in notice.message
    assert ts.check(30.0, _Budget(), now=7.0, model="default") is None  # once per run
