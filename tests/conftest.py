"""Suite-wide set-up: signals as a terminal gives them, and Qt objects freed on the GUI thread.

A suite started as a background job (``cmd &`` in a script, some CI runners) inherits SIGINT
ignored, and Python then leaves it ignored: the tests that press Ctrl-C (``os.kill`` of SIGINT
to this process, or to a child that inherits the ignore) would wait forever for a stop that
never comes. ``listen`` keeps an inherited ignore on purpose (``nohup`` semantics, see
``test_stop_requests_keep_an_inherited_ignore``), so the suite restores Python's own Ctrl-C
handler here; children then start with the default action. SIGHUP is left as inherited (a
``nohup``-started suite should survive its terminal): the tests that send it reset it in their
child.

Python's cyclic garbage collector runs on whichever thread allocates past its threshold. A Qt
object in a cycle left by one test (a widget, a timer) could then be destroyed on a later test's
worker thread (a model loader, an engine QThread) while the GUI thread runs the event loop: a
SIGSEGV inside Qt that needed hundreds of earlier tests to happen (issue 30). The app keeps
collection on its GUI thread (``captioner.ui.main_thread_gc``); the suite does the same for every
test that drives Qt: automatic collection is off during it, and its cycles are collected on the
main thread when it ends. What survives that collection is then frozen (``gc.freeze``): a later
collection, on any thread, never looks at it again, and the next one is quick (a full collection
of the suite's process with torch and TensorFlow loaded takes about 0.3 s; frozen, milliseconds).
"""

import gc
import os
import signal
import sys

import pytest

# captioner.heap: glibc's default mmap threshold in this long-lived process (its RSS tests compare
# one process across many tests); tests/test_heap.py checks the tuning in fresh processes
os.environ.setdefault("CAPTIONER_HEAP_TUNE", "0")


def pytest_configure(config):
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _drives_qt(request) -> bool:
    names = request.fixturenames
    return ("qtbot" in names or "qapp" in names or request.node.get_closest_marker("gui") is not None
            or request.path.parent.name == "ui")


@pytest.fixture(autouse=True)
def _qt_cycles_collected_on_the_main_thread(request):
    if "PySide6.QtCore" not in sys.modules or not _drives_qt(request):
        yield
        return
    enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()
