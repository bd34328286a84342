"""TrayIcon: start/stop, show the overlay, show the window, quit -- from the system tray."""

from __future__ import annotations

from PySide6.QtCore import QObject, QRectF, Qt
from PySide6.QtGui import QAction, QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon


def app_icon(running: bool = False) -> QIcon:
    """The app icon, drawn (no image files): "CC" on a rounded square, red while captioning."""
    pix = QPixmap(64, 64)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(QColor("#c0392b") if running else QColor("#2d3e50"))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(QRectF(2, 8, 60, 48), 10, 10)
    font = QFont()
    font.setBold(True)
    font.setPixelSize(26)
    p.setFont(font)
    p.setPen(QColor("white"))
    p.drawText(QRectF(2, 8, 60, 48), Qt.AlignmentFlag.AlignCenter, "CC")
    p.end()
    return QIcon(pix)


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

    def notify(self, text: str, ms: int = 8000) -> bool:
        """Show ``text`` as a tray message; False where the desktop cannot (no tray, no messages)."""
        if not self.available or not self.icon.supportsMessages():
            return False
        self.icon.showMessage("captioner", text, QSystemTrayIcon.MessageIcon.Warning, ms)
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
