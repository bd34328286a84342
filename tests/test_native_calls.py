"""The process never finalises while a thread is inside a native model call (issue 30.2).

The subprocesses reproduce the abort deterministically: a thread loops over ONNX Runtime
``run`` calls (a small MatMul model built here), and the interpreter's module teardown takes
0.3 s (an object whose ``__del__`` sleeps), so a call returns while the interpreter is
finalising; pybind11 then ends that thread through a ``noexcept`` destructor and the C++
runtime calls ``std::terminate`` (status 134, "terminate called without an active exception"),
as ``captioner listen`` did with its partial re-decode.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from captioner import native_calls
from captioner.native_calls import in_flight, model_call, wait_idle

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import sys, threading, time
import numpy as np
from onnx import TensorProto, helper
import onnxruntime as ort
from captioner.native_calls import exit_process
from captioner.asr.partial_worker import PartialJob, PartialWorker

n = 256
w = helper.make_tensor("w", TensorProto.FLOAT, [n, n], (np.eye(n, dtype=np.float32)).ravel())
nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{{i - 1}}", "w"], [f"h{{i}}"]) for i in range(8)]
graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])],
                          [helper.make_tensor_value_info("h7", TensorProto.FLOAT, [n, n])], [w])
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
sess = ort.InferenceSession(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(),
                            opts, providers=["CPUExecutionProvider"])
x = np.ones((n, n), np.float32)
entered = threading.Event()
forever = {forever!r}

def decode(clip):  # a re-decode: many short native calls (0.3 s in all), or never ending (a hung model)
    entered.set()
    t_end = time.monotonic() + 0.3
    while forever or time.monotonic() < t_end:
        sess.run(None, {{"x": x}})
    return "text"

worker = PartialWorker(decode)
assert worker.submit(PartialJob("s", np.zeros(16000, np.float32), tag=None))
entered.wait()

class SlowTeardown:
    def __del__(self):
        time.sleep(0.3)

_teardown = SlowTeardown()
atexit_ran = __import__("atexit").register(lambda: print("atexit ran", flush=True))
how = {how!r}
if how == "close":
    worker.close(timeout=30)  # the order under test: the re-decode ends before the exit
if how == "exit_process":
    t0 = time.monotonic()
    code = exit_process(3, grace_s={grace!r})
    print(f"returned {{code}} after {{time.monotonic() - t0:.2f}} s", flush=True)
    sys.exit(code)
"""


def _run(how: str, forever: bool = False, grace: float = 0.1) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", SCRIPT.format(how=how, forever=forever, grace=grace)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_re_decode_running_at_exit_aborts_the_process_unless_it_is_ended_first():
    plain = _run("nothing", forever=True)  # the cause, reproduced: the bare interpreter exit
    if sys.version_info < (3, 14):  # 3.14 parks such threads instead of ending them (gh-87135)
        # std::terminate, then abort (-6); under load the interpreter's own exit can win the race
        # to the exit status (seen twice with both cores busy: the message, then status 0)
        assert plain.returncode in (-6, 0) and "terminate called without an active exception" in plain.stderr, plain
    closed = _run("close")  # the fix: close() waits for the running call before the exit
    assert closed.returncode == 0 and "terminate" not in closed.stderr, closed
    assert "atexit ran" in closed.stdout


def test_exit_process_waits_for_a_call_that_ends_and_returns_the_code():
    done = _run("exit_process", grace=30.0)  # the re-decode ends 0.3 s after it began
    assert done.returncode == 3 and "terminate" not in done.stderr, done
    assert "returned 3" in done.stdout and "atexit ran" in done.stdout


def test_exit_process_ends_the_process_around_a_call_that_never_returns():
    """A model call left running by a bounded stop (hung): os._exit after the atexit handlers."""
    hung = _run("exit_process", forever=True)
    assert hung.returncode == 3 and "terminate" not in hung.stderr, hung
    assert "atexit ran" in hung.stdout and "returned" not in hung.stdout  # it never returned: os._exit


def test_model_calls_are_counted_per_thread_and_nest():
    inside, leave = threading.Event(), threading.Event()

    def call():
        with model_call(), model_call():  # nested on one thread: counted once
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=call)
    t.start()
    try:
        assert inside.wait(10)
        assert in_flight() == 1
        assert not wait_idle(0.05)
    finally:
        leave.set()
        t.join(10)
    assert wait_idle(5) and in_flight() == 0


def test_no_call_starts_once_the_process_is_exiting(monkeypatch):
    monkeypatch.setattr(native_calls, "_closing", True)
    with pytest.raises(native_calls.ProcessExiting):
        with model_call():
            pass
    assert in_flight() == 0


EXIT_CTRL_C = r"""
import os, signal, sys, threading, atexit
sys.path.insert(0, {root!r})
signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C (a background job ignores it)
from captioner.native_calls import exit_process, model_call
entered = threading.Event()
def hung():
    with model_call():
        entered.set()
        threading.Event().wait()
threading.Thread(target=hung, daemon=True).start()
entered.wait()
atexit.register(lambda: print("atexit ran", flush=True))
import time
from captioner import native_calls
def press():  # Ctrl-C once exit_process waits (polled: the wait has no hook)
    while not native_calls._closing:
        time.sleep(0.01)
    time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=press, daemon=True).start()
print("returned", exit_process(3, grace_s=30.0), flush=True)
"""


def test_a_second_ctrl_c_during_exit_process_ends_the_process_at_once_without_a_traceback():
    """A double Ctrl-C early in ``captioner transcribe``: the second landed in exit_process's wait
    for the turn models' load and printed a KeyboardInterrupt traceback (2026-12-06)."""
    done = subprocess.run([sys.executable, "-c", EXIT_CTRL_C.format(root=str(ROOT))], capture_output=True,
                          text=True, timeout=20)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done
    assert "atexit ran" in done.stdout and "returned" not in done.stdout
