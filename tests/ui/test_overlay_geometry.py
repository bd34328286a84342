"""Issue 13, bug 2 and the overlay's size: the overlay always stays on the screen's available
area, and making it taller shows more lines (not empty space)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest

from captioner.events import TextDelta, TurnBoundary
from captioner.ui.overlay import MARGIN, CaptionOverlay
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui


@pytest.fixture
def overlay(qtbot, settings):
    settings.set(Keys.OVERLAY_LINES, 2)
    settings.set(Keys.OVERLAY_FONT_SIZE, 20)
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.setGeometry(50, 50, 500, ov.preferred_height())
    ov.show()
    return ov


def _avail() -> QRect:
    return QGuiApplication.primaryScreen().availableGeometry()


def _turns(ov, n: int) -> None:
    for i in range(n):
        ov.apply_event(TextDelta(f"turn {i}", float(i), i + 0.1, True, "Meeting"))
        ov.apply_event(TurnBoundary(i + 0.5, source="Meeting"))


def test_more_lines_at_the_top_edge_grow_down_instead_of_off_screen(overlay, settings):
    avail = _avail()
    overlay.setGeometry(QRect(avail.left() + 10, avail.top(), 500, overlay.preferred_height()))
    settings.set(Keys.OVERLAY_LINES, 4)
    overlay.apply_settings()
    assert overlay.height() == overlay.preferred_height()
    assert avail.contains(overlay.geometry()), overlay.geometry()
    assert overlay.y() == avail.top()


def test_huge_captions_are_clamped_to_the_screen(overlay, settings):
    avail = _avail()
    overlay.setGeometry(QRect(avail.left(), avail.top() + 20, 500, overlay.preferred_height()))
    settings.set(Keys.OVERLAY_LINES, 5)
    settings.set(Keys.OVERLAY_FONT_SIZE, 144)
    overlay.apply_settings()
    assert overlay.preferred_height() > avail.height()  # the case the QA pass found: 1142 px
    assert avail.contains(overlay.geometry()), overlay.geometry()
    _turns(overlay, 6)
    lines = overlay.visible_lines()
    assert 1 <= len(lines) and len(lines) * overlay._line_height() <= overlay.height() - 2 * MARGIN + 1


def test_dragging_past_the_top_edge_stays_on_screen(overlay):
    avail = _avail()
    overlay.set_click_through(False)
    overlay.setGeometry(QRect(avail.left() + 40, avail.top() + 30, 400, overlay.height()))
    centre = QPoint(overlay.width() // 2, overlay.height() // 2)
    QTest.mousePress(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    QTest.mouseMove(overlay, centre + QPoint(0, -300))
    QTest.mouseRelease(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre + QPoint(0, -300))
    assert avail.contains(overlay.geometry()) and overlay.y() == avail.top()


def test_a_taller_overlay_shows_more_lines(overlay):
    _turns(overlay, 6)
    assert len(overlay.visible_lines()) == 2
    lh = overlay._line_height()
    overlay.resize(overlay.width(), int(round(4 * lh + 2 * MARGIN)))
    assert [v.text for v in overlay.visible_lines()][-4:] == [f"Meeting: turn {i}" for i in range(2, 6)]


def test_resizing_by_the_edge_sets_the_line_count(overlay, settings):
    overlay.set_click_through(False)
    lh = overlay._line_height()
    edge = QPoint(overlay.width() // 2, overlay.height() - 3)
    drop = edge + QPoint(0, int(round(2 * lh)))
    QTest.mousePress(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, edge)
    QTest.mouseMove(overlay, drop)
    QTest.mouseRelease(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, drop)
    overlay.save_geometry()
    assert settings.get(Keys.OVERLAY_LINES) == 4 and overlay.max_lines == 4


def test_a_window_manager_move_off_the_edge_is_clamped_when_it_settles(overlay, qtbot):
    avail = _avail()
    overlay.setGeometry(QRect(avail.left() + 30, avail.top() - 40, 400, overlay.height()))  # as a WM drag leaves it
    with qtbot.waitSignal(overlay.geometry_saved, timeout=3000):
        pass  # the debounced save after the move
    assert avail.contains(overlay.geometry()) and overlay.y() == avail.top()
