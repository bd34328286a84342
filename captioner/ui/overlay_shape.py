"""The overlay where no compositing manager runs (X11): the window is cut to what it draws.

X shows an ARGB window's transparent pixels black when nothing composites them: the translucent
panel is opaque, and an idle click-through overlay -- which draws nothing -- was a 1120x110 black
box over the windows below (plain openbox, i3, ...; tests/ui/test_overlay_x11.py). So there the
overlay gets a window shape (``QWidget.setMask``): the rounded panel while captions or a notice
show, the frame in drag mode, else only the turn indicator. With a compositor (or off X11) the
shape is removed. :class:`OpaqueShape` is a mixin for the overlay widget (before QWidget in its bases).
"""

from __future__ import annotations

import sys
import time

from PySide6.QtCore import QRectF, QTimer
from PySide6.QtGui import QPainterPath, QRegion

from captioner.ui.overlay_window import platform_name, x_connection

#: How long (s) an answer of :func:`compositing_active` is reused (a compositor may start or stop).
COMPOSITING_RECHECK_S = 2.0
_compositing: list = []  # [(monotonic time, answer)]


def compositing_active() -> bool | None:
    """Whether a compositing manager runs on the X screen (an owner of ``_NET_WM_CM_S<n>``).

    Without one, X shows an ARGB window's transparent pixels as black: the translucent panel
    is opaque and an "empty" overlay is a black box over the windows below. ``None`` off X11
    or when it cannot be asked. Re-asked at most every :data:`COMPOSITING_RECHECK_S`.
    """
    if not sys.platform.startswith("linux") or platform_name() != "xcb":
        return None
    now = time.monotonic()
    if _compositing and now - _compositing[0][0] < COMPOSITING_RECHECK_S:
        return _compositing[0][1]
    conn = x_connection()
    answer = None
    if conn is not None:
        try:
            from Xlib import X

            atom = conn.intern_atom(f"_NET_WM_CM_S{conn.get_default_screen()}")
            answer = conn.get_selection_owner(atom) != X.NONE
        except Exception:  # noqa: BLE001 (a closed connection, a server error: unknown)
            answer = None
    _compositing[:] = [(now, answer)]
    return answer


def opaque_shape(width: int, height: int, panel: bool, frame: bool, indicator: QRectF | None,
                 radius: float = 10.0) -> QRegion:
    """The part of the overlay to keep where nothing is translucent (no compositor), as a window shape.

    Args:
        width, height: the overlay's size (logical px).
        panel: captions are shown (the rounded panel).
        frame: drag mode (the frame and the hint cover the whole rectangle).
        indicator: the turn indicator's rectangle when it is drawn, else ``None``.
        radius: the panel's corner radius.

    Returns:
        The region to keep; a 1x1 region in the top-left corner when nothing is drawn (an empty
        region would remove the shape instead: the whole black rectangle).
    """
    if panel or frame:
        path = QPainterPath()
        path.addRoundedRect(QRectF(0, 0, width, height), radius, radius)
        return QRegion(path.toFillPolygon().toPolygon())
    if indicator is not None:
        box = indicator.adjusted(-1.5, -1.5, 1.5, 1.5).toAlignedRect()
        return QRegion(box, QRegion.RegionType.Ellipse)
    return QRegion(0, 0, 1, 1)


class OpaqueShape:
    """Keeps the overlay's window shape to what it draws while no compositor runs."""

    def _check_shape(self) -> None:
        """Without a compositor, cut the window to what is drawn (X shows transparent pixels black):
        an idle click-through overlay was a black box over the windows below."""
        state = self.model.indicator[0]
        # a notice or a name alert needs the whole window too
        panel = bool(self._shown) or bool(self.notice_text()) or bool(self.alert_text())
        key = (panel, not self._click_through, state != "idle", self.width(), self.height())
        if compositing_active() is not False:
            key = None
        if key != self._shape_key:
            self._shape_key = key
            QTimer.singleShot(0, self, self._apply_shape)  # not while painting

    def _apply_shape(self) -> None:
        key = self._shape_key
        if key is None:
            self.clearMask()
            return
        shown, frame, indicator, width, height = key
        self.setMask(opaque_shape(width, height, shown, frame, self.indicator_rect() if indicator else None))
