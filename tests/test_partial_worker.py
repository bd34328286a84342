"""The partial worker: optional re-decodes off the engine thread (issue 10, lever "use the cores").

Synchronised with events and ``wait_idle`` (no sleeps): the fake decode blocks until the
test opens its gate, so every interleaving below is exact.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from captioner.asr.moonshine.partial_worker import PartialJob, PartialWorker


class Gate:
    """A decode that returns ``text-<n>`` once the test lets call n through."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.calls = 0
        self.thread_names: list[str] = []

    def __call__(self, clip: np.ndarray) -> str:
        self.calls += 1
        self.thread_names.append(threading.current_thread().name)
        self.entered.release()
        assert self.release.acquire(timeout=30)
        if clip.size and clip[0] < 0:
            raise RuntimeError("decoder exploded")
        return f"text-{self.calls} ({clip.size})"


def job(key, n=1600, first=0.0):
    clip = np.full(n, first, np.float32)
    return PartialJob(key, clip, tag=("line", 0))


def test_one_job_at_a_time_and_the_result_is_collected_once():
    gate = Gate()
    w = PartialWorker(gate, name="test-partial")
    try:
        assert not w.busy
        assert w.submit(job("a"))
        assert gate.entered.acquire(timeout=30)  # running on the worker thread now
        assert w.busy
        assert not w.submit(job("b"))  # one at a time: b must ask again later
        assert w.poll("a") is None  # not done yet: the caller keeps stepping
        gate.release.release()
        assert w.wait_idle(30)
        done = w.poll("a")
        assert done is not None and done.text == "text-1 (1600)" and done.error is None
        assert done.cost_s >= 0.0
        assert w.poll("a") is None  # collected once
        assert gate.thread_names == ["test-partial"]
        assert w.submit(job("b", 800))
        gate.release.release()
        assert w.wait_idle(30)
        assert w.poll("b").text == "text-2 (800)"
    finally:
        gate.release.release()
        w.close()


def test_a_discarded_job_leaves_nothing_behind():
    gate = Gate()
    w = PartialWorker(gate)
    try:
        assert w.submit(job("a"))
        assert gate.entered.acquire(timeout=30)
        w.discard("a")  # its line closed while it ran
        gate.release.release()
        assert w.wait_idle(30)
        assert w.poll("a") is None
        assert not w._done  # bounded: nothing kept for a session that will never poll
        spent = w.take_discarded()  # but its CPU was spent: the budget must still hear of it
        assert [j.key for j in spent] == ["a"] and spent[0].text is not None and spent[0].cost_s > 0
        assert w.take_discarded() == []  # handed back once
    finally:
        w.close()


def test_a_failing_decode_is_reported_and_the_thread_survives():
    gate = Gate()
    w = PartialWorker(gate)
    try:
        assert w.submit(job("a", first=-1.0))
        gate.release.release()
        assert w.wait_idle(30)
        bad = w.poll("a")
        assert isinstance(bad.error, RuntimeError) and bad.text is None
        assert w.submit(job("a"))
        gate.release.release()
        assert w.wait_idle(30)
        assert w.poll("a").text.startswith("text-2")
    finally:
        w.close()


def test_synchronous_mode_runs_inside_submit():
    calls = []
    w = PartialWorker(lambda clip: calls.append(clip.size) or "hi", threaded=False)
    assert w.submit(job("a", 320))
    assert calls == [320] and not w.busy
    assert w.poll("a").text == "hi"
    w.close()


def test_close_stops_the_thread_and_refuses_new_work():
    gate = Gate()
    w = PartialWorker(gate)
    w.close()
    assert not w._thread.is_alive()
    assert not w.submit(job("a"))


def test_close_waits_for_the_running_re_decode_which_counts_as_a_model_call():
    """Issue 30.2: a re-decode still inside the model when the interpreter exits aborts the
    process; close() (listen calls it through the backend) waits for it to return."""
    from captioner import native_calls

    gate = Gate()
    w = PartialWorker(gate)
    assert w.submit(job("a"))
    assert gate.entered.acquire(timeout=30)
    assert native_calls.in_flight() == 1  # the exit waits for it, or ends the process around it
    closer = threading.Thread(target=w.close)
    closer.start()
    closer.join(0.05)
    assert closer.is_alive()  # close() is waiting for the call...
    gate.release.release()
    closer.join(30)
    assert not closer.is_alive() and not w._thread.is_alive()  # ...which ended before it returned
    assert native_calls.in_flight() == 0


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="Linux thread priorities")
def test_the_worker_thread_runs_at_lower_priority():
    import os

    seen = {}

    def decode(clip):
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return ""

    if os.getpriority(os.PRIO_PROCESS, 0) >= 19:
        pytest.skip("already at the lowest priority")
    w = PartialWorker(decode)
    try:
        assert w.submit(job("a"))
        assert w.wait_idle(30)
        assert seen["nice"] > os.getpriority(os.PRIO_PROCESS, 0)  # finals (this thread) win the CPU
    finally:
        w.close()

