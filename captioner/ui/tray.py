"""TrayIcon: start/stop, show the overlay, show the window, quit -- from the system tray."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from captioner.ui.icons import tray_icon


def app_icon(running: bool = False) -> QIcon:
    """The icon for the tray: the packaged tray icon, red while captioning (see :mod:`captioner.ui.icons`)."""
    return tray_icon(running)


class TrayIcon(QObject):
    """System-tray entry wired to the main window's actions.

    Args:
        window: the :class:`~captioner.ui.main_window.MainWindow`.
        quit_action: the app's Quit action.

    Attributes:
        available: False where the desktop has no tray (then nothing is shown).
    """

    def __init__(self, window, quit_action: QAction) -> None:
        super().__init__(window)
        self.window = window
        self.available = QSystemTrayIcon.isSystemTrayAvailable()
        self.icon = QSystemTrayIcon(app_icon(False), self)
        self.icon.setToolTip("captioner")
        menu = QMenu()
        self.start_action = menu.addAction("Start captions")
        self.start_action.triggered.connect(window.toggle_running)
        menu.addAction(window.overlay_action)
        menu.addAction(window.click_through_action)
        menu.addAction(window.move_overlay_action)  # keys only: arrows move the overlay, Shift+arrows resize
        show = menu.addAction("Show main window")
        show.triggered.connect(self._show_window)
        menu.addSeparator()
        menu.addAction(quit_action)
        self.menu = menu
        self.icon.setContextMenu(menu)
        self.icon.activated.connect(self._activated)
        window.controller.state_changed.connect(self.set_state)
        if self.available:
            self.icon.show()

    def notify(self, text: str, ms: int = 8000, title: str = "captioner",
               icon: QSystemTrayIcon.MessageIcon = QSystemTrayIcon.MessageIcon.Warning) -> bool:
        """Show ``text`` as a tray message titled ``title`` for ``ms``; False where the desktop
        cannot (no tray, no messages)."""
        if not self.available or not self.icon.supportsMessages():
            return False
        self.icon.showMessage(title, text, icon, ms)
        return True

    def set_state(self, state: str) -> None:
        """Reflect the engine state in the icon and menu."""
        running = state in ("running", "loading")
        self.start_action.setText("Stop captions" if running else "Start captions")
        self.icon.setIcon(app_icon(running))

    def _show_window(self) -> None:
        self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()

    def _activated(self, reason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self._show_window()
