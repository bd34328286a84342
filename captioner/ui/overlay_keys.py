"""Moving and resizing the overlay from the keyboard (issue 39: every action without a mouse).

The overlay never takes keyboard focus (it must not steal typing from the meeting window),
so its keys cannot go to it. Instead "Move or resize overlay with keys" (Captions menu and
tray, :data:`MOVE_SHORTCUT`) starts a *key mode* in the app: while it is on, an application
event filter takes

* arrows: move the overlay by :data:`STEP_PX` (with Ctrl: 1 px);
* Shift+arrows: resize it (Right/Down grow, Left/Up shrink) by the same steps;
* Enter, Escape, or the shortcut again: end the mode (the place is kept and remembered).

Every other key works as usual, and the mode ends by itself when the app loses the keyboard
(another window is activated): no focus trap. It starts only while the overlay is shown and
unlocked (no click-through: a locked overlay stays where it is, as for the mouse).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, Qt, Signal
from PySide6.QtWidgets import QApplication, QWidget

from captioner.engine.qt_emit import emit

#: Logical px per arrow key press (1 with Ctrl).
STEP_PX = 10
FINE_STEP_PX = 1
#: The default shortcut of the key mode (in the app, not desktop-wide).
MOVE_SHORTCUT = "Ctrl+Shift+M"
#: What the mode says when it starts (shown and announced).
HELP = "Moving the overlay: arrows move it, Shift+arrows resize it, Ctrl for small steps; Enter or Escape ends."

_DIRECTIONS = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}
_ENDS = (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Escape)


def stepped(rect: QRect, key: Qt.Key, modifiers: Qt.KeyboardModifier, minimum: tuple[int, int]) -> QRect | None:
    """``rect`` after one arrow key press (see the module doc), or None for a key that is no arrow.

    Args:
        rect: the overlay's geometry (logical px).
        key, modifiers: the key pressed.
        minimum: the overlay's smallest (width, height); a resize stops there.
    """
    direction = _DIRECTIONS.get(Qt.Key(key))
    if direction is None:
        return None
    step = FINE_STEP_PX if modifiers & Qt.KeyboardModifier.ControlModifier else STEP_PX
    dx, dy = direction[0] * step, direction[1] * step
    if modifiers & Qt.KeyboardModifier.ShiftModifier:
        return QRect(rect.x(), rect.y(), max(minimum[0], rect.width() + dx), max(minimum[1], rect.height() + dy))
    return rect.translated(dx, dy)


class OverlayKeyMover(QObject):
    """The key mode of :mod:`captioner.ui.overlay_keys` for one overlay.

    Args:
        overlay: the :class:`~captioner.ui.overlay.CaptionOverlay` (any QWidget with
            ``click_through`` and ``clamped(QRect)``).

    Signals:
        active_changed(bool): the mode started (True) or ended.
        said(str): what the user should be told (the mode's help, or why it cannot start).
    """

    active_changed = Signal(bool)
    said = Signal(str)

    def __init__(self, overlay: QWidget, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.overlay = overlay
        self.active = False

    def toggle(self) -> bool:
        """Start the mode (when the overlay is shown and unlocked) or end it. Returns :attr:`active`."""
        if self.active:
            self.stop()
        elif not self.overlay.isVisible():
            emit(self.said, "Show the captions overlay first (Captions > Show captions overlay).")
        elif getattr(self.overlay, "click_through", False):
            emit(self.said, "The overlay is locked (click-through): turn off Captions > Overlay click-through "
                            "to move it.")
        else:
            self.active = True
            QApplication.instance().installEventFilter(self)
            emit(self.active_changed, True)
            emit(self.said, HELP)
        return self.active

    def stop(self) -> None:
        """End the mode (the overlay stays where it is; its geometry is saved as after a drag)."""
        if not self.active:
            return
        self.active = False
        QApplication.instance().removeEventFilter(self)
        emit(self.active_changed, False)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt API)
        """Arrows move/resize, Enter/Escape end; everything else passes (and a lost keyboard ends the mode)."""
        kind = event.type()
        if kind == QEvent.Type.ApplicationDeactivate or (kind == QEvent.Type.Hide and watched is self.overlay):
            self.stop()
            return False
        if kind != QEvent.Type.KeyPress or not self.active:
            return False
        if event.key() in _ENDS:
            self.stop()
            return True
        ov = self.overlay
        rect = stepped(ov.geometry(), event.key(), event.modifiers(), (ov.minimumWidth(), ov.minimumHeight()))
        if rect is None:
            return False
        if rect.size() != ov.size():
            ov._resized_by_user = True  # as an edge drag: the new height picks the number of lines
        ov.setGeometry(ov.clamped(rect))
        return True


def key_mode_action(window: QWidget, overlay: QWidget, tell) -> tuple["QAction", OverlayKeyMover]:
    """The main window's "Move or resize overlay with keys" action (:data:`MOVE_SHORTCUT`, in the
    whole app) and its :class:`OverlayKeyMover`.

    Args:
        window: the main window (owns both; it is activated first, so the arrows reach the app
            also when the action came from the tray menu).
        overlay: the caption overlay.
        tell: ``tell(text)`` shows and announces what the mode says; ``tell("")`` withdraws it.
    """
    from PySide6.QtGui import QAction, QKeySequence

    from captioner.ui.accessibility import announce

    mover = OverlayKeyMover(overlay, window)
    action = QAction("Move or resize overlay with keys", window)
    action.setShortcut(QKeySequence(MOVE_SHORTCUT))
    action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
    action.setToolTip(HELP)

    def start() -> None:
        if not mover.active and not window.isActiveWindow():
            window.showNormal()
            window.activateWindow()
        mover.toggle()

    def said(text: str) -> None:
        tell(text)
        announce(window, text)

    action.triggered.connect(start)
    mover.said.connect(said)
    mover.active_changed.connect(lambda on: None if on else tell(""))
    window.addAction(action)
    return action, mover
