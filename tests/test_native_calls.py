"""The process never finalises while a thread is inside a native model call (issue 30.2).

The subprocesses reproduce the abort deterministically: a thread loops over ONNX Runtime
``run`` calls (a small MatMul model built here) while the interpreter exits, and the
interpreter's module teardown lasts while a model call is still running (an object whose
``__del__`` sleeps 60 s), so a call returns while the interpreter is finalising; pybind11
then ends that thread through a ``noexcept`` destructor and the C++ runtime calls
``std::terminate`` (status 134, "terminate called without an active exception"), as
``captioner listen`` did with its partial re-decode.

No outcome depends on which thread wins (issue 50: the bare exit exited 0 silently 10 runs in
30 under ``taskset -c 0`` beside a busy loop):

* the object that makes the teardown long is held by a module of its own. In ``__main__``'s
  dict it never ran its ``__del__`` (the dict stays alive with the re-decode's frame, and the
  teardown does not clear it), so the abort came only when some other GIL release during the
  finalisation let the thread come back, or not;
* the child sets a switch interval of 1000 s: the GIL changes hands only where its holder
  gives it up (a native call, I/O, a blocking wait), never by a forced switch. The
  re-decode's thread holds it only between two ``run`` calls, and the main thread runs, and
  finalises, only while that thread is inside ``run``: coming back, it waits for the GIL in
  the C++ frame that aborts, never in Python code between two calls (where
  ``PyThread_exit_thread`` would end it silently);
* the re-decode does not time itself: it runs until the main thread releases it (an event)
  right before ``close()``/``exit_process`` wait for it, never at a bare exit. The main thread
  keeps the GIL from that event to their wait, so the call is certainly still running when
  they begin to wait, and at a bare exit.
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
sys.setswitchinterval(1000.0)  # no forced GIL switch: it changes hands only where its holder waits
import numpy as np
from onnx import TensorProto, helper
import onnxruntime as ort
from captioner.native_calls import exit_process, in_flight
from captioner.asr.moonshine.partial_worker import PartialJob, PartialWorker

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
entered, release = threading.Event(), threading.Event()

def decode(clip):  # a re-decode: many short native calls, until released (never: a hung model)
    entered.set()
    while not release.is_set():
        sess.run(None, {{"x": x}})
    return "text"

worker = PartialWorker(decode)
assert worker.submit(PartialJob("s", np.zeros(16000, np.float32), tag=None))
entered.wait()

class SlowTeardown:  # the module teardown: 60 s while a model call runs (the abort cuts it short)
    long = True
    def __del__(self, sleep=time.sleep):
        if self.long:
            sleep(60)

# held by a module of its own, whose dict the teardown clears (not by __main__'s dict, which
# the re-decode's frame keeps alive: never cleared, so no __del__ ran there)
_teardown = sys.modules["_slow_teardown"] = type(sys)("_slow_teardown")
_teardown.obj = SlowTeardown()
__import__("atexit").register(lambda: print("atexit ran", flush=True))
how, ends = {how!r}, {ends!r}
code = 0
# release.set(): from there to the wait after it the main thread keeps the GIL, so the
# re-decode is still inside run() when the wait begins and ends during it
if how == "close":
    release.set()
    worker.close(timeout=30)  # the order under test: the re-decode ends before the exit
if how == "exit_process":
    if ends:
        release.set()
    t0 = time.monotonic()
    code = exit_process(3, grace_s={grace!r})
    print(f"returned {{code}} after {{time.monotonic() - t0:.2f}} s", flush=True)
_teardown.obj.long = in_flight() > 0
sys.exit(code)
"""


def _run(how: str, ends: bool = True, grace: float = 0.1) -> subprocess.CompletedProcess:
    """Run SCRIPT: ``how`` the process ends ("nothing": the bare interpreter exit, the re-decode
    never released); ``ends``: "exit_process" releases it right before its wait (False: hung)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", SCRIPT.format(how=how, ends=ends, grace=grace)], capture_output=True,
                          text=True, env=env, timeout=120)


def test_a_re_decode_running_at_exit_aborts_the_process_unless_it_is_ended_first():
    if sys.version_info < (3, 14):  # 3.14 parks such threads instead of ending them (gh-87135)
        plain = _run("nothing")  # the cause, reproduced: the bare interpreter exit, the call running
        assert plain.returncode == -6 and "terminate called without an active exception" in plain.stderr, plain
    closed = _run("close")  # the fix: close() waits for the running call before the exit
    assert closed.returncode == 0 and "terminate" not in closed.stderr, closed
    assert "atexit ran" in closed.stdout


def test_exit_process_waits_for_a_call_that_ends_and_returns_the_code():
    done = _run("exit_process", grace=30.0)  # the re-decode, running, ends during the wait
    assert done.returncode == 3 and "terminate" not in done.stderr, done
    assert "returned 3" in done.stdout and "atexit ran" in done.stdout


def test_exit_process_ends_the_process_around_a_call_that_never_returns():
    """A model call left running by a bounded stop (hung): os._exit after the atexit handlers."""
    hung = _run("exit_process", ends=False)
    assert hung.returncode == 3 and "terminate" not in hung.stderr, hung
    assert "atexit ran" in hung.stdout and "returned" not in hung.stdout  # it never returned: os._exit


def test_model_calls_are_counted_per_thread_and_nest():
    inside, leave = threading.Event(), threading.Event()

    def call():
        with model_call(), model_call():  # nested on one thread: counted once
            inside.set()
            leave.wait()

    t = threading.Thread(target=call)
    t.start()
    try:
        assert inside.wait(60)
        assert in_flight() == 1
        assert not wait_idle(0.05)  # the call waits for `leave`: certain to time out
    finally:
        leave.set()
        t.join()
    assert wait_idle(0) and in_flight() == 0  # joined: the call has returned


def test_no_call_starts_once_the_process_is_exiting(monkeypatch):
    monkeypatch.setattr(native_calls, "_closing", True)
    with pytest.raises(native_calls.ProcessExiting):
        with model_call():
            pass
    assert in_flight() == 0


EXIT_CTRL_C = r"""
import os, signal, sys, threading, atexit
sys.setswitchinterval(1000.0)  # no forced GIL switch: the main thread gives it up only where it blocks
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
    while not native_calls._closing:  # seen only once the main thread gave up the GIL after setting it:
        time.sleep(0.01)  # where it blocks in exit_process's wait, the only place it does
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=press, daemon=True).start()
print("returned", exit_process(3, grace_s=30.0), flush=True)
"""


def test_a_second_ctrl_c_during_exit_process_ends_the_process_at_once_without_a_traceback():
    """A double Ctrl-C early in ``captioner transcribe``: the second landed in exit_process's wait
    for the turn models' load and printed a KeyboardInterrupt traceback (2026-12-06)."""
    done = subprocess.run([sys.executable, "-c", EXIT_CTRL_C.format(root=str(ROOT))], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done
    assert "atexit ran" in done.stdout and "returned" not in done.stdout
