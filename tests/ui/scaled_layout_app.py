"""The main window and Settings at a large scale, for tests/ui/test_scaled_layout.py (issue 39).

``python scaled_layout_app.py FONT_FACTOR`` (``QT_SCALE_FACTOR`` from the environment) builds the
main window on a fake engine and the Settings dialog, with
the application font ``FONT_FACTOR`` times the platform's (2: a "200 %" desktop font), shows
both, saves a screenshot of each beside ``CAPTIONER_SHOTS`` (when set) and prints one JSON line:

* ``clipped``: every shown text control narrower or lower than the least size Qt says its text
  needs (``minimumSizeHint``; a word-wrapped label: lower than its height for its width), or
  reaching past its window's edge outside a scroll area;
* ``windows``: each window's size and the screen's available size (logical px); a window larger
  than the screen is cut off by it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from PySide6.QtCore import QPoint, QRect, QTimer  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractButton,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QKeySequenceEdit,
    QLabel,
    QLineEdit,
    QWidget,
)

TEXT_CONTROLS = (QLabel, QAbstractButton, QComboBox, QAbstractSpinBox, QLineEdit)
#: Controls that lay out their own inner widgets (checked as a whole).
COMPOSITES = (QComboBox, QAbstractSpinBox, QKeySequenceEdit)


def clipped(window: QWidget) -> list[dict]:
    """Text controls of ``window`` that cannot show their text whole (see the module doc)."""
    bad = []
    frame = window.rect()
    for w in window.findChildren(QWidget):
        if not isinstance(w, TEXT_CONTROLS) or not w.isVisibleTo(window) or w.window() is not window:
            continue
        if isinstance(w, QLabel) and not w.text().strip() and w.pixmap().isNull():
            continue
        if any(isinstance(p, COMPOSITES) for p in _parents(w)):  # a spin box's editor, a clear button
            continue
        need = w.minimumSizeHint()
        if isinstance(w, QLabel) and w.wordWrap():
            short = w.height() < w.heightForWidth(w.width()) - 1
        else:
            short = w.width() < need.width() - 1 or w.height() < need.height() - 1
        in_scroll = any(isinstance(p, QAbstractScrollArea) for p in _parents(w))
        rect = QRect(w.mapTo(window, QPoint(0, 0)), w.size())
        outside = not in_scroll and not frame.contains(rect)
        if short or outside:
            name = w.accessibleName() or (w.text() if hasattr(w, "text") else "") or type(w).__name__
            bad.append({"name": name, "class": type(w).__name__, "size": [w.width(), w.height()],
                        "needs": [need.width(), need.height()], "outside": outside})
    return bad


def _parents(w: QWidget):
    p = w.parentWidget()
    while p is not None and not p.isWindow():
        yield p
        p = p.parentWidget()


def main(argv: list[str]) -> int:
    factor = float(argv[1])
    app = QApplication(argv[:1])
    font = app.font()
    font.setPointSizeF(font.pointSizeF() * factor)
    app.setFont(font)
    from ui_fakes import fake_factories, file_window, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.settings import Settings
    from captioner.ui.settings_dialog import SettingsDialog

    tmp = Path(tempfile.mkdtemp(prefix="scaled-app-"))
    settings = Settings.from_file(str(tmp / "captioner.ini"))
    write_wav(tmp / "talk.wav")
    bf, sf, pf, _ = fake_factories({"talk.wav": speech(["alpha"])})
    controller = EngineController(EngineWorker(bf, sf, pf))
    win, _overlay = file_window(settings, controller, tmp)
    dialog = SettingsDialog(settings, win, shortcut_status="Desktop-wide")
    dialog.show()

    def report() -> None:
        screen = app.primaryScreen().availableGeometry()
        out = {"scale": os.environ.get("QT_SCALE_FACTOR", "1"), "font_pt": app.font().pointSizeF(),
               "screen": [screen.width(), screen.height()],
               "windows": {"main": [win.width(), win.height()], "settings": [dialog.width(), dialog.height()]},
               "hints": {"main": [win.sizeHint().width(), win.sizeHint().height()]},
               "clipped": {"main": clipped(win), "settings": clipped(dialog)}}
        shots = os.environ.get("CAPTIONER_SHOTS")
        if shots:
            win.grab().save(f"{shots}-main.png")
            dialog.grab().save(f"{shots}-settings.png")
        print(json.dumps(out), flush=True)
        controller.shutdown(5000)
        app.quit()

    QTimer.singleShot(500, report)  # after the first layout passes and paints
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
