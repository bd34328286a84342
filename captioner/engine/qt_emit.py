"""``emit(signal, *args)``: emit a Qt signal from Python without corrupting ``True``'s refcount.

PySide6 6.12.0's ``SignalInstance.emit()`` returns its result (``True``) without
taking a new reference: every Python-side ``emit()`` steals one reference from the
``True`` singleton. CPython 3.11 does not make ``True`` immortal (3.12+ does), so a
running app that emits a few dozen signals a second (levels, stats, captions) drives
its count towards zero; at interpreter shutdown the garbage collector then drops the
last references and CPython aborts with ``Fatal Python error: bool_dealloc:
deallocating True or False`` (exit code 134). Measured here: about 40 stolen
references a second while captioning system audio, ~3000 references to ``True``
in the loaded app, so a run of a minute or more crashed on quit.

:func:`emit` measures once, at the first call, whether the installed PySide6 has the
bug (one probe emit on a private object), and if so gives the returned ``bool`` its
missing reference back after every emit. On a fixed PySide6 (or Python >= 3.12,
where ``True`` is immortal and the probe sees no change) it is a plain ``emit``.
Every Python-side emit in captioner goes through here (``tests/ui`` checks that).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

_steals: bool | None = None
_lock = threading.Lock()


def _probe(trials: int = 64) -> bool:
    """True when ``SignalInstance.emit()`` loses a reference to its ``bool`` result.

    Emits ``trials`` times on a private object and compares ``True``'s count; another
    thread touching ``True`` meanwhile moves the count by a few, not by ``trials``, so
    the bug is reported only when at least half the emits lost a reference. The
    references the probe took are given back.
    """
    from PySide6.QtCore import QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(trials):
        probe.ping.emit()
    stolen = before - sys.getrefcount(True) >= trials // 2
    if stolen:
        for _ in range(trials):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))
    return stolen


def pyside_emit_steals_bool() -> bool:
    """Whether the installed PySide6 has the ``emit()`` refcount bug (probed once, thread-safe)."""
    global _steals
    if _steals is None:
        with _lock:
            if _steals is None:
                _steals = _probe()
    return _steals


def emit(signal: Any, *args: Any) -> Any:
    """``signal.emit(*args)``, repairing the reference PySide6 6.12 steals from the result.

    Args:
        signal: a bound signal (``obj.some_signal``).
        *args: the signal's arguments.

    Returns:
        What ``emit`` returned (a ``bool``).
    """
    result = signal.emit(*args)
    if (result is True or result is False) and pyside_emit_steals_bool():
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(result))
    return result
