"""X clients for tests/ui/test_overlay_x11.py, one per process (``QT_QPA_PLATFORM=xcb``).

``python x11_clients.py overlay X Y W H [click-through|drag] [idle] [notice]``
    the app's CaptionOverlay with a caption (none with ``idle``; a notice with ``notice``),
    placed at ``X Y W H``.
``python x11_clients.py counter X Y W H``
    a plain window that counts the mouse presses it receives.
``python x11_clients.py fullscreen``
    a fullscreen window (``_NET_WM_STATE_FULLSCREEN``), as a presentation or a video is.
``python x11_clients.py locker``
    a screen locker: a full-screen override-redirect window that takes the keyboard (XGrabKeyboard).
``python x11_clients.py overlay-app X Y W H``
    the overlay (click-through) with a main window and a dialog of that window over the overlay's
    centre, as the app's Settings dialog is: ``open-dialog`` shows it (answers its window id),
    ``close-dialog`` closes it.

Each prints ``ready WINDOW_ID`` once its window is exposed, then answers one line per command
read from stdin: ``presses`` (the counter's count), ``geometry`` (the widget's ``x y w h``),
``focus`` (1 when the widget's window has keyboard focus), ``quit``.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QRect, QSocketNotifier, Qt, QTimer
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QApplication, QWidget


class Counter(QWidget):
    def __init__(self) -> None:
        super().__init__()
        self.presses = 0
        self.setWindowTitle("click counter")

    def mousePressEvent(self, event) -> None:  # noqa: N802
        self.presses += 1

    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#3070c0"))
        p.end()


class Fullscreen(Counter):
    def paintEvent(self, event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#c03030"))
        p.end()


def main(argv: list[str]) -> int:
    app = QApplication(argv[:1])
    mode = argv[1]
    if mode.startswith("overlay"):  # named as the app names itself (Qt titles windows with it)
        from captioner.ui.app import identify_application

        identify_application(app)
    if mode == "overlay":
        from captioner.events import TextDelta
        from captioner.ui.overlay import CaptionOverlay

        widget = CaptionOverlay(None)
        widget.set_click_through(argv[6] == "click-through", persist=False)
        if "idle" not in argv[7:]:
            widget.apply_event(TextDelta("Captions over another window.", 0.0, 1.0, True, "Meeting"))
        if "notice" in argv[7:]:
            widget.show_notice("No microphone found.", 60000)
        widget.place(QRect(*(int(v) for v in argv[2:6])))
    elif mode == "overlay-app":
        from captioner.events import TextDelta
        from captioner.ui.overlay import CaptionOverlay
        from PySide6.QtWidgets import QDialog, QMainWindow

        widget = CaptionOverlay(None)
        widget.set_click_through(True, persist=False)
        widget.apply_event(TextDelta("Captions over the app's own dialog.", 0.0, 1.0, True, "Meeting"))
        x, y, w, h = (int(v) for v in argv[2:6])
        widget.place(QRect(x, y, w, h))
        main_window = QMainWindow()
        main_window.setWindowTitle("main window")
        main_window.setGeometry(QRect(50, 50, 500, 300))
        main_window.show()
        dialog = QDialog(main_window)
        dialog.setWindowTitle("settings dialog")
        dialog.setGeometry(QRect(x + w // 2 - 300, y + h // 2 - 100, 600, 200))
    elif mode == "counter":
        widget = Counter()
        widget.setGeometry(QRect(*(int(v) for v in argv[2:6])))
    else:
        widget = Fullscreen()
    if mode == "locker":
        widget.setWindowFlags(Qt.WindowType.X11BypassWindowManagerHint | Qt.WindowType.FramelessWindowHint)
        widget.setGeometry(app.primaryScreen().geometry())
        widget.show()
        widget.grabKeyboard()
    elif mode == "fullscreen":
        widget.showFullScreen()
    else:
        widget.show()

    def ready() -> None:
        if not widget.windowHandle() or not widget.windowHandle().isExposed():
            QTimer.singleShot(20, ready)
            return
        print("ready", int(widget.winId()), flush=True)

    QTimer.singleShot(0, ready)

    def command() -> None:
        line = sys.stdin.readline()
        if not line or line.strip() == "quit":
            app.quit()
            return
        what = line.strip()
        if what == "presses":
            print(getattr(widget, "presses", 0), flush=True)
        elif what == "geometry":
            g = widget.geometry()
            print(g.x(), g.y(), g.width(), g.height(), flush=True)
        elif what == "open-dialog":
            dialog.show()
            while not (dialog.windowHandle() and dialog.windowHandle().isExposed()):
                app.processEvents()
            print(int(dialog.winId()), flush=True)
        elif what == "close-dialog":
            dialog.accept()
            print("closed", flush=True)
        elif what == "focus":
            print(int(widget.isActiveWindow() or widget.hasFocus()), flush=True)
        else:
            print("?", flush=True)

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(command)
    widget.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
