"""Where the caption overlay goes on a screen: screen identity, clamping, default and relative placement.

Geometry is remembered per screen in logical pixels under :func:`screen_key` (name and logical
size). A rectangle remembered at another resolution is *moved relatively* (:func:`rescale_rect`):
bottom-centre at 1280x720 stays bottom-centre at 1920x1080 instead of keeping its absolute
position (which put it mid-left). No Qt widget is used here.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QScreen

#: Share of the screen's width the overlay takes by default.
DEFAULT_WIDTH_SHARE = 0.7
#: Gap under the default overlay, as a share of the screen's height (above task bars and video controls).
DEFAULT_BOTTOM_SHARE = 0.06


def screen_key(screen: QScreen) -> str:
    """Stable identity of a screen for remembered geometry: name and logical size, e.g. ``"HDMI-1 1920x1080"``."""
    size = screen.geometry().size()
    return f"{screen.name() or 'screen'} {size.width()}x{size.height()}"


def key_size(key: str) -> QSize | None:
    """The logical screen size a :func:`screen_key` names, or ``None`` for a key without one."""
    m = re.search(r"(\d+)x(\d+)$", key or "")
    return QSize(int(m.group(1)), int(m.group(2))) if m else None


def clamp_rect(rect: QRect, available: QRect) -> QRect:
    """Move (and if needed shrink) ``rect`` so it lies wholly inside ``available``.

    Args:
        rect: overlay geometry in logical px.
        available: a screen's available geometry in logical px.

    Returns:
        A rectangle of at most the available size, inside it.
    """
    w = min(max(rect.width(), 1), available.width())
    h = min(max(rect.height(), 1), available.height())
    x = min(max(rect.x(), available.left()), available.left() + available.width() - w)
    y = min(max(rect.y(), available.top()), available.top() + available.height() - h)
    return QRect(x, y, w, h)


def default_rect(available: QRect, min_width: int, height: int) -> QRect:
    """Bottom centre of a screen's ``available`` area, :data:`DEFAULT_WIDTH_SHARE` of its width."""
    w = max(min_width, int(available.width() * DEFAULT_WIDTH_SHARE))
    h = min(available.height(), height)
    return QRect(available.left() + (available.width() - w) // 2,
                 available.bottom() - h - int(available.height() * DEFAULT_BOTTOM_SHARE), w, h)


def rescale_rect(rect: QRect, old: QRect, new: QRect, min_width: int = 1) -> QRect:
    """``rect`` remembered on screen ``old`` moved to the same relative place on screen ``new``.

    The size is kept (the caption font does not change with the resolution, so neither does a
    line's length); the centre keeps its horizontal share of the screen (centred stays centred)
    and the gap to the nearer of the top and bottom edges keeps its share of the screen's height
    (bottom stays bottom). The caller clamps the result onto the screen.

    Args:
        rect: the remembered overlay rectangle (logical px).
        old: the geometry of the screen it was remembered on (logical px).
        new: the geometry of the screen it goes to now (logical px).
        min_width: the overlay's minimum width.
    """
    if old.width() <= 0 or old.height() <= 0:
        return QRect(rect)
    sx, sy = new.width() / old.width(), new.height() / old.height()
    w = max(min_width, rect.width())
    x = new.left() + int(round((rect.x() + rect.width() / 2 - old.left()) * sx - w / 2))
    h = rect.height()
    top_gap = rect.top() - old.top()
    bottom_gap = old.top() + old.height() - (rect.top() + rect.height())
    if bottom_gap <= top_gap:
        y = new.top() + new.height() - int(round(bottom_gap * sy)) - h
    else:
        y = new.top() + int(round(top_gap * sy))
    return QRect(x, y, w, h)
