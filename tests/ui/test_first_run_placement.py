"""Issue 13: on the first run the overlay is placed clear of the main window (it sat over the
window's bottom row, Folder… and Save as…, and took their clicks)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMargins, QRect, QSize

from captioner.ui.main_window import DEFAULT_WINDOW, MIN_WINDOW
from captioner.ui.placement import GAP, first_run_placement

pytestmark = pytest.mark.gui


def _frame(client: QRect, m: QMargins) -> QRect:
    return client.marginsAdded(m)


@pytest.mark.parametrize("w, h", [(1366, 768), (1600, 1000), (1920, 1080), (1280, 800)])
def test_window_and_overlay_do_not_overlap(w, h):
    avail = QRect(0, 0, w, h)
    overlay_h = 112
    overlay = QRect(int(w * 0.15), h - overlay_h - int(h * 0.06), int(w * 0.7), overlay_h)
    m = QMargins(1, 30, 1, 1)
    client, placed = first_run_placement(avail, overlay, QSize(*DEFAULT_WINDOW), QSize(*MIN_WINDOW), m)
    frame = _frame(client, m)
    assert avail.contains(frame) and avail.contains(placed)
    assert not frame.intersects(placed)
    assert placed.top() - frame.bottom() >= GAP
    assert client.height() >= MIN_WINDOW[1] and client.width() >= MIN_WINDOW[0]


def test_a_tiny_screen_puts_the_overlay_below_the_window():
    avail = QRect(0, 0, 1024, 600)
    overlay = QRect(150, 450, 716, 112)
    client, placed = first_run_placement(avail, overlay, QSize(*DEFAULT_WINDOW), QSize(*MIN_WINDOW),
                                         QMargins(0, 30, 0, 0))
    assert client.height() == MIN_WINDOW[1]
    assert placed.bottom() <= avail.bottom() and placed.top() > overlay.top()


def test_the_first_run_of_the_app_keeps_the_overlay_off_the_window(qtbot, settings, tmp_path, monkeypatch):
    from captioner.ui.app import CaptionerApp

    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    app.show()
    try:
        qtbot.waitUntil(lambda: app.window.isVisible() and app.overlay.isVisible(), timeout=2000)
        assert not app.window.frameGeometry().intersects(app.overlay.geometry())
        save = app.window.save_panel.save_button
        corner = save.mapToGlobal(save.rect().bottomRight())
        assert not app.overlay.geometry().contains(corner)
    finally:
        app.shutdown()


def test_a_remembered_layout_is_left_alone(qtbot, settings):
    from PySide6.QtGui import QGuiApplication

    from captioner.ui.app import CaptionerApp
    from captioner.ui.overlay import screen_key

    settings.set_overlay_geometry(screen_key(QGuiApplication.primaryScreen()), (10, 20, 300, 90))
    app = CaptionerApp(settings)
    qtbot.addWidget(app.window)
    qtbot.addWidget(app.overlay)
    app.show()
    try:
        assert app.overlay.geometry() == QRect(10, 20, 300, 90)  # where the user put it, overlap or not
    finally:
        app.shutdown()
