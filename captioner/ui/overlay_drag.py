"""Moving and resizing the caption overlay with the mouse (when click-through is off).

The inside moves the overlay, a :data:`RESIZE_BAND` wide border band resizes it. Where the
window system can do it (Wayland, Windows, macOS) the drag is handed to it
(``startSystemMove``/``startSystemResize``); under X11 the overlay is not managed
(:mod:`captioner.ui.overlay_window`) and follows the pointer itself:

* only while the left button is held (a move event without it ends the drag), and
* only once the pointer has left the platform's drag distance from the press
  (``QStyleHints.startDragDistance``, 10 px by default), measured in screen coordinates,

so a quick press-release never moves the overlay (it jumped "by itself" when openbox
received a ``_NET_WM_MOVERESIZE`` after the release had already happened).
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QGuiApplication

#: Width in logical px of the border band that resizes instead of moving.
RESIZE_BAND = 10


def edges_at(pos: QPoint, width: int, height: int, band: int = RESIZE_BAND) -> Qt.Edge | None:
    """The edges whose resize band holds ``pos`` (widget coordinates), or ``None`` (inside: a move)."""
    edges = Qt.Edge(0)
    if pos.x() <= band:
        edges |= Qt.Edge.LeftEdge
    elif pos.x() >= width - band:
        edges |= Qt.Edge.RightEdge
    if pos.y() <= band:
        edges |= Qt.Edge.TopEdge
    elif pos.y() >= height - band:
        edges |= Qt.Edge.BottomEdge
    return edges if edges != Qt.Edge(0) else None


def cursor_for(edges: Qt.Edge | None) -> Qt.CursorShape:
    """The pointer shape over a place of the overlay (move cross, or a resize arrow)."""
    if edges is None:
        return Qt.CursorShape.SizeAllCursor
    if edges in (Qt.Edge.LeftEdge, Qt.Edge.RightEdge):
        return Qt.CursorShape.SizeHorCursor
    if edges in (Qt.Edge.TopEdge, Qt.Edge.BottomEdge):
        return Qt.CursorShape.SizeVerCursor
    if edges in (Qt.Edge.TopEdge | Qt.Edge.LeftEdge, Qt.Edge.BottomEdge | Qt.Edge.RightEdge):
        return Qt.CursorShape.SizeFDiagCursor
    return Qt.CursorShape.SizeBDiagCursor


def dragged_rect(start: QRect, delta: QPoint, edges: Qt.Edge | None, minimum_width: int, minimum_height: int) -> QRect:
    """The overlay rectangle after the pointer moved ``delta`` (screen px) from a press on ``edges``.

    A move shifts the rectangle; a resize moves the pressed edges, never below the minimum size.
    """
    g = QRect(start)
    if edges is None:
        g.moveTo(start.topLeft() + delta)
        return g
    if edges & Qt.Edge.LeftEdge:
        g.setLeft(min(start.left() + delta.x(), start.right() - minimum_width))
    if edges & Qt.Edge.RightEdge:
        g.setRight(max(start.right() + delta.x(), start.left() + minimum_width))
    if edges & Qt.Edge.TopEdge:
        g.setTop(min(start.top() + delta.y(), start.bottom() - minimum_height))
    if edges & Qt.Edge.BottomEdge:
        g.setBottom(max(start.bottom() + delta.y(), start.top() + minimum_height))
    return g


class Drag:
    """One press-move-release of the overlay followed by hand.

    Args:
        press: the pointer's screen position at the press (logical px).
        start: the overlay's geometry at the press.
        edges: the pressed resize edges, ``None`` for a move.
    """

    def __init__(self, press: QPoint, start: QRect, edges: Qt.Edge | None) -> None:
        self.press = QPoint(press)
        self.start = QRect(start)
        self.edges = edges
        self.started = False  # past the drag distance: the overlay follows from now on

    def follow(self, pointer: QPoint, buttons: Qt.MouseButton, minimum_width: int,
               minimum_height: int) -> QRect | None:
        """The new geometry for a pointer at ``pointer`` (screen px), or ``None`` for "stay".

        Raises nothing; returns ``None`` while the pointer is within the drag distance and when
        the left button is no longer held (the caller then ends the drag).
        """
        if not buttons & Qt.MouseButton.LeftButton:
            return None
        delta = pointer - self.press
        if not self.started:
            hints = QGuiApplication.styleHints()
            distance = hints.startDragDistance() if hints is not None else 10
            if delta.manhattanLength() < distance:
                return None
            self.started = True
        return dragged_rect(self.start, delta, self.edges, minimum_width, minimum_height)
