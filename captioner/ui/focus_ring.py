"""A focus ring that is always visible, whatever the style (issue 39, point 2).

Qt styles mark the focused control faintly (Fusion: a 1 px tint of the button's own border;
a text pane: a border a shade darker), too little for low vision and for WCAG 2.2's "focus
visible" (2.4.7) and "focus appearance" (2.4.13: at least a 2 px outline, 3:1 against what is
next to it). :class:`FocusRing` draws a 3 px outline in the palette's highlight colour round
whichever widget has the keyboard focus, in that widget's own window; it is not focusable,
takes no mouse input, is hidden from assistive technology (it is decoration; the focus itself
is reported by Qt) and follows the widget when it moves, resizes or hides.

Install once per application with :func:`install_focus_ring`.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen, QRegion
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QWidget

#: Outline width (px); WCAG 2.4.13 asks for at least 2.
WIDTH = 3
#: Gap (px) between the control and the outline, so the control's own border stays readable.
GAP = 1


class _Ring(QWidget):
    """The outline itself: a transparent child of the focused widget's window."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("focus-ring")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName("")
        self.hide()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        colour = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        pen = QPen(colour, WIDTH)
        p.setPen(pen)
        half = WIDTH / 2
        p.drawRoundedRect(self.rect().toRectF().adjusted(half, half, -half, -half), 3, 3)


class FocusRing(QObject):
    """Keeps one outline per window round its focused widget.

    Args:
        app: the running application; the ring follows its ``focusChanged`` signal.
    """

    def __init__(self, app: QApplication) -> None:
        super().__init__(app)
        self._rings: dict[int, _Ring] = {}
        self._target: QWidget | None = None
        self._watched: list[QWidget] = []  # the target and its parents, filtered for moves
        app.focusChanged.connect(self._focus_changed)

    def _ring_for(self, window: QWidget) -> _Ring:
        ring = self._rings.get(id(window))
        if ring is None or ring.parent() is not window:
            ring = _Ring(window)
            self._rings[id(window)] = ring
            window.destroyed.connect(lambda *_a, k=id(window): self._rings.pop(k, None))
        return ring

    def _focus_changed(self, old: QWidget | None, new: QWidget | None) -> None:
        for w in self._watched:
            try:
                w.removeEventFilter(self)
            except RuntimeError:  # already deleted
                pass
        self._watched = []
        for ring in list(self._rings.values()):
            try:
                ring.hide()
            except RuntimeError:
                pass
        self._target = new if isinstance(new, QWidget) and not isinstance(new, _Ring) else None
        if self._target is not None:
            # the control and every parent up to its window: a scrolled form moves the parent
            # the control sits in, not the control itself
            w = self._target
            while w is not None:
                w.installEventFilter(self)
                self._watched.append(w)
                if w.isWindow():
                    break
                w = w.parentWidget()
            self._place()

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        if self._target is not None and event.type() in (QEvent.Type.Move, QEvent.Type.Resize, QEvent.Type.Show,
                                                         QEvent.Type.Hide) and obj in self._watched:
            self._place()
        return False

    def _place(self) -> None:
        w = self._target
        if w is None:
            return
        window = w.window()
        if window is w:  # a window itself has the focus (no control in it): nothing to ring
            return
        ring = self._ring_for(window)
        if not w.isVisible():
            ring.hide()
            return
        # a scroll area's focus is its frame, not its viewport
        shown = w.parentWidget() if isinstance(w.parentWidget(), QAbstractScrollArea) and \
            w is w.parentWidget().viewport() else w
        top_left = shown.mapTo(window, shown.rect().topLeft())
        pad = WIDTH + GAP
        ring.setGeometry(QRect(top_left, shown.size()).adjusted(-pad, -pad, pad, pad))
        # the ring covers the control's edge only: the middle is left to the control; inside a
        # scrolled form it is cut at the form's visible part
        inner = ring.rect().adjusted(WIDTH, WIDTH, -WIDTH, -WIDTH)
        region = QRegion(ring.rect()).subtracted(QRegion(inner))
        view = _viewport_of(shown)
        if view is not None:
            clip = QRect(view.mapTo(window, view.rect().topLeft()), view.size())
            region = region.intersected(QRegion(clip.translated(-ring.x(), -ring.y())))
        ring.setMask(region)
        ring.raise_()
        ring.show()


def _viewport_of(w: QWidget) -> QWidget | None:
    """The nearest scroll area's viewport that ``w`` sits in, if any."""
    p = w.parentWidget()
    while p is not None and not p.isWindow():
        area = p.parentWidget()
        if isinstance(area, QAbstractScrollArea) and area.viewport() is p:
            return p
        p = area
    return None


def install_focus_ring(app: QApplication | None = None) -> FocusRing | None:
    """Give every window of ``app`` (default: the running one) the focus ring, once.

    Returns:
        The :class:`FocusRing`, or ``None`` without an application.
    """
    global _installed
    app = app or QApplication.instance()
    if app is None:
        return None
    try:
        if _installed is not None and _installed.parent() is app:
            return _installed
    except RuntimeError:  # the ring of an application that has gone
        pass
    _installed = FocusRing(app)
    return _installed


_installed: FocusRing | None = None
