"""Python's cyclic garbage collector, run on the GUI thread only.

CPython runs an automatic collection on whichever thread happens to allocate past the threshold
(``gc.get_threshold()``, 700 container objects by default). In the desktop app most allocation
happens off the GUI thread: the engine's QThread, the model loader, the line pool, the journal
writer. When such a collection finds a reference cycle that holds a Qt object (a closed dialog, a
widget whose slot closes over itself), the C++ destructor then runs on that worker thread while
the GUI thread is painting or delivering events, and Qt crashes (SIGSEGV; before it,
"QObject::~QObject: Timers cannot be stopped from another thread"). Issue 30's segfault in
``test_quitting_while_captioning_keeps_the_last_words`` was this: the model loader's import set
off a collection that freed widgets of earlier tests, while the GUI thread ran the event loop;
``tests/ui/test_main_thread_gc.py`` reproduces the crash in a child process.

The cure is the usual one for Qt bindings (the "GarbageCollector" recipe of PyQt/PySide apps):
switch the automatic collector off while the GUI runs and collect from a timer on the GUI thread,
generation by generation, with CPython's own thresholds. Reference counting still frees every
object that is not in a cycle at once, on any thread; only cycles wait for the next tick.
"""

from __future__ import annotations

import gc
import time

from PySide6.QtCore import QObject, QTimer

#: How often the GUI thread looks at the collector's counts (ms): cycles wait at most this long
#: once a collection is due. Measured over 2 h of audio in ``bench/soak.py`` (default model):
#: a collection was due about every 25 s of wall time; the longest held the GUI thread 7.7 ms
#: (young), 16.1 ms (middle) and 62.5 ms (the one full collection).
INTERVAL_MS = 250


class MainThreadGC(QObject):
    """Owns the cyclic collector while the GUI runs: automatic collection off, a GUI-thread timer on.

    Call ``start()`` and ``stop()`` on the GUI thread (the thread whose event loop runs the
    timer). ``stop()`` gives the collector back as it was found (enabled or not) after
    one full collection on the calling thread.

    Attributes:
        collections: ``[gen0, gen1, gen2]`` collections this object ran (for tests and benchmarks).
        longest_s: the longest of them per generation (s): what a collection held the GUI thread.
    """

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self.collect_due)
        self._was_enabled: bool | None = None
        self.collections = [0, 0, 0]
        self.longest_s = [0.0, 0.0, 0.0]

    @property
    def active(self) -> bool:
        """True between start() and stop()."""
        return self._was_enabled is not None

    def start(self) -> None:
        """Switch automatic collection off and start the timer (no-op when already started)."""
        if self.active:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Stop the timer, collect everything once here, and give back automatic collection if it was on."""
        if not self.active:
            return
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
        self._was_enabled = None

    def collect_due(self) -> int:
        """Run the collection CPython would have run by now, if one is due.

        A collection is due when generation 0's allocation count passes threshold 0; it is then of
        the oldest generation whose count passes its threshold (a generation's count is the number
        of collections of the one below since its own last one). That is CPython's rule
        (``gc_collect_generations`` in ``Modules/gcmodule.c``; ``gc.get_count()``/``gc.get_threshold()``)
        minus its guard that skips a full collection while few long-lived objects are new, so full
        collections here come at most as often as one per threshold 1 x threshold 2 young ones.

        Returns:
            The generation collected, or -1 when none was due.
        """
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if not thresholds[0] or counts[0] <= thresholds[0]:
            return -1
        due = max(g for g in range(3) if counts[g] > thresholds[g])
        t0 = time.perf_counter()
        gc.collect(due)
        self.longest_s[due] = max(self.longest_s[due], time.perf_counter() - t0)
        self.collections[due] += 1
        return due
