"""The overlay and the app's own dialogs under X11: the dialog with the focus goes above the overlay.

An override-redirect overlay (:mod:`captioner.ui.overlay_window`) is above every managed window,
the app's dialogs too: the Settings dialog opened over it was covered (its shortcut fields and
profanity options unreadable). :class:`DialogStacking` (a mixin for the overlay widget, before
QWidget in its bases) lowers the overlay while one of the app's dialogs has the focus
(:func:`~captioner.ui.overlay_window.gives_way_to`) and raises it again when the focus goes
elsewhere or the dialog closes -- once the window manager has another window active
(:func:`~captioner.ui.overlay_window.active_window`), so a screen locker taking the keyboard
from the dialog never gets the captions over the lock screen. Elsewhere (Wayland, Windows, macOS)
nothing is done: the window manager stacks the overlay there.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication, QWindow

from captioner.ui.overlay_window import active_window, bypasses_window_manager, gives_way_to


class DialogStacking:
    """Lowers the overlay under the app's focused dialog and raises it again afterwards (X11)."""

    def watch_focus(self) -> None:
        """Follow the app's focus window (``QGuiApplication.focusWindowChanged``)."""
        self._below = False  # lowered under the app's dialog that has the focus
        app = QGuiApplication.instance()
        if app is not None:
            app.focusWindowChanged.connect(self._on_focus_window)

    #: When (ms after the focus left the app's dialog) the overlay tries to go back on top: it does once
    #: the window manager has made another window active (openbox restacks the window it activates
    #: after the app has seen the focus go, so a raise at once ended under it).
    RERAISE_MS = (0, 150, 600, 2000)

    def _on_focus_window(self, window: QWindow | None) -> None:
        if not bypasses_window_manager() or not self.isVisible():
            return
        below = gives_way_to(window)
        if below is None or below == self._below:
            return
        self._below = below
        if below:  # an override-redirect window is above every managed one, the app's dialogs too
            self.lower()
            # a dialog that closes does not always hand the focus on inside the app (the window
            # manager may give it to another application's window): its hiding ends the step down
            window.visibleChanged.connect(self._on_dialog_visible, Qt.ConnectionType.UniqueConnection)
            return
        for ms in self.RERAISE_MS:
            QTimer.singleShot(ms, self, self._raise_unless_below)

    def _on_dialog_visible(self, visible: bool) -> None:
        if visible:
            return
        focus = QGuiApplication.focusWindow()
        self._on_focus_window(focus if focus is not None and focus.isVisible() else None)

    def _raise_unless_below(self) -> None:
        if self._below or not self.isVisible():
            return
        active = active_window()
        ours = {int(w.winId()) for w in QGuiApplication.topLevelWindows() if w.isVisible() and gives_way_to(w)}
        if active is not None and active in ours:
            return  # the window manager still has the dialog active: a screen locker took the keyboard
        self.raise_()

    def showEvent(self, event) -> None:  # noqa: N802
        """A (re-)mapped window is on top: under a focused dialog of the app it steps down again."""
        super().showEvent(event)
        self._below = False
        self._on_focus_window(QGuiApplication.focusWindow())

