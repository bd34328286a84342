"""Small helpers shared by the main window's panels (no state, no file access)."""

from __future__ import annotations

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QComboBox


def standard_keys(key: QKeySequence.StandardKey, fallback: str) -> list[QKeySequence]:
    """The platform's bindings of a standard key, or ``fallback`` where it has none
    (X11 without a desktop theme binds no Quit key)."""
    return list(QKeySequence.keyBindings(key)) or [QKeySequence(fallback)]


def select_data(combo: QComboBox, data) -> bool:
    """Select the item of ``combo`` whose data equals ``data``; False when there is none."""
    for i in range(combo.count()):
        if combo.itemData(i) == data:
            combo.setCurrentIndex(i)
            return True
    return False


def format_time(seconds: float) -> str:
    """Stream seconds as ``m:ss`` (``h:mm:ss`` past an hour)."""
    s = int(max(0.0, seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"
