"""Issue 22, the overlay's smaller desktop problems, offscreen: the turn indicator is visible in every
state, an idle overlay is no empty dark panel, a place remembered at another resolution moves
relatively, the window flags per platform, and the drag rules (button held, drag distance)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QColor, QGuiApplication, QMouseEvent
from PySide6.QtWidgets import QApplication

from captioner.events import TextDelta, VoiceActivity
from captioner.ui.overlay import CaptionOverlay, screen_key
from captioner.ui.overlay_drag import Drag
from captioner.ui.overlay_place import rescale_rect
from captioner.ui.overlay_window import always_on_top_note, gives_way_to, overlay_flags, system_move_allowed
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui


@pytest.fixture
def overlay(qtbot, settings):
    ov = CaptionOverlay(settings)  # the user's defaults: white text, black panel at 0.7
    qtbot.addWidget(ov)
    ov.setGeometry(50, 50, 500, ov.preferred_height())
    ov.show()
    return ov


def _distinct_pixels(img, rect, backdrop: QColor, min_distance: int = 200) -> int:
    n = 0
    for y in range(int(rect.top()) - 2, int(rect.bottom()) + 3):
        for x in range(int(rect.left()) - 2, int(rect.right()) + 3):
            c = img.pixelColor(x, y)
            if abs(c.red() - backdrop.red()) + abs(c.green() - backdrop.green()) + abs(c.blue() - backdrop.blue()) \
                    >= min_distance and c.alpha() > 200:
                n += 1
    return n


@pytest.mark.parametrize("state", ["speaking", "pause", "turn_over"])
def test_the_turn_indicator_is_visible_in_every_state(overlay, state):
    overlay.apply_event(TextDelta("Hello there.", 0.0, 1.0, True, "Meeting"))
    overlay.apply_event(VoiceActivity(1.0, 0.9 if state == "speaking" else 0.0, state, "Meeting"))
    assert overlay.indicator()[0] == state
    rect = overlay.indicator_rect()
    assert rect.width() >= 12 and rect.height() >= 12  # the old dot was 8 px
    panel = QColor(overlay.background_color)
    img = overlay.grab().toImage()
    # a mark in the text colour that stands out from the panel (the old "turn over" was 25 % grey on black)
    assert _distinct_pixels(img, rect, panel) >= 20, state


def test_no_text_runs_under_the_indicator(overlay):
    from captioner.ui.overlay import MARGIN

    overlay.apply_event(TextDelta("Good morning everyone, thank you for joining the call today, we start with the "
                                  "quarterly report and then talk about the new release", 0.0, 1.0, True, "Meeting"))
    overlay.apply_event(VoiceActivity(1.0, 0.9, "speaking", "Meeting"))
    lines = overlay.visible_lines()
    assert len(lines) >= 2 and max(v.width for v in lines) > overlay.width() / 2
    assert all(MARGIN + v.width <= overlay.indicator_rect().left() for v in lines), [v.width for v in lines]


def test_the_indicator_states_look_different(overlay):
    overlay.apply_event(TextDelta("Hello there.", 0.0, 1.0, True, "Meeting"))
    shots = {}
    for state in ("speaking", "pause", "turn_over"):
        overlay.apply_event(VoiceActivity(1.0, 1.0 if state == "speaking" else 0.0, state, "Meeting"))
        img = overlay.grab().toImage()
        r = overlay.indicator_rect().toRect().adjusted(-2, -2, 2, 2)
        shots[state] = img.copy(r)
    assert shots["speaking"] != shots["pause"] != shots["turn_over"] != shots["speaking"]


def test_an_idle_click_through_overlay_draws_no_panel(overlay):
    overlay.set_click_through(True, persist=False)
    assert overlay.is_idle()
    img = overlay.grab().toImage()
    opaque = sum(img.pixelColor(x, y).alpha() > 10 for y in range(0, img.height(), 3) for x in range(0, img.width(), 3))
    assert opaque == 0  # the old one was a 500 px dark panel (alpha 0.7) with nothing on it
    overlay.apply_event(TextDelta("Now there is text.", 0.0, 1.0, True, "Meeting"))
    img = overlay.grab().toImage()
    assert img.pixelColor(img.width() // 2, 3).alpha() > 150  # the panel is back behind captions


def test_an_idle_overlay_in_drag_mode_shows_only_the_hint_and_a_frame(overlay):
    overlay.set_click_through(False, persist=False)
    assert overlay.is_idle()
    img = overlay.grab().toImage()
    _, area, text = overlay.hint_layout()
    assert text
    # above the hint's backdrop, inside the faint frame, the window behind shows through
    assert img.pixelColor(img.width() // 2, 5).alpha() < 10
    assert img.pixelColor(img.width() // 2, 0).alpha() > 0  # the frame, so the overlay can be found and grabbed


def _avail():
    return QGuiApplication.primaryScreen().availableGeometry()


def test_a_place_remembered_at_another_resolution_keeps_its_relative_place(settings, qtbot):
    screen = QGuiApplication.primaryScreen()
    geo = screen.geometry()
    old_w, old_h = geo.width() // 2, geo.height() // 2
    old_key = f"{screen.name() or 'screen'} {old_w}x{old_h}"  # the same monitor at a smaller resolution
    w, h = 300, 120
    bottom_gap = 20
    settings.set_overlay_geometry(old_key, ((old_w - w) // 2, old_h - bottom_gap - h, w, h))  # bottom centre there
    assert screen_key(screen) != old_key
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    g = ov.restore_geometry()
    assert abs(g.center().x() - geo.center().x()) <= 2, g  # still centred (the old code kept x: left of centre)
    assert abs((geo.bottom() - g.bottom()) - 2 * bottom_gap) <= 2, g  # the gap scaled with the screen
    assert (g.width(), g.height()) == (w, h)


def test_a_resolution_change_while_running_keeps_the_relative_place(overlay, settings, qtbot):
    screen = QGuiApplication.primaryScreen()
    geo = screen.geometry()
    overlay.place(overlay.default_geometry(screen))  # bottom centre
    before = overlay.geometry()
    gap = geo.bottom() - before.bottom()
    smaller = QRect(geo.left(), geo.top(), geo.width() // 2, geo.height() // 2)
    with qtbot.waitSignal(overlay.geometry_saved, timeout=3000):
        screen.geometryChanged.emit(smaller)  # as xrandr switching to a lower resolution tells Qt
    g = overlay.geometry()
    assert abs(g.center().x() - smaller.center().x()) <= 2, g  # the old absolute place was right of centre there
    assert abs((smaller.bottom() - g.bottom()) - gap / 2) <= 2, (g, gap)
    assert (g.width(), g.height()) == (min(before.width(), smaller.width()), before.height())


def test_rescale_rect_keeps_corners_and_centre():
    old, new = QRect(0, 0, 1280, 720), QRect(0, 0, 1920, 1080)
    bottom_centre = rescale_rect(QRect(192, 560, 896, 110), old, new)
    assert bottom_centre.center().x() in (959, 960) and 1080 - bottom_centre.bottom() - 1 == int(round(50 * 1.5))
    top_left = rescale_rect(QRect(10, 10, 400, 100), old, new)
    assert (top_left.y(), top_left.width()) == (15, 400)
    second_screen = rescale_rect(QRect(1280 + 192, 560, 896, 110), QRect(1280, 0, 1280, 720), QRect(1920, 0, 1920, 1080))
    assert second_screen.center().x() in (1920 + 959, 1920 + 960)


def test_window_flags_per_platform():
    x11 = overlay_flags(True, "xcb")
    assert x11 & Qt.WindowType.X11BypassWindowManagerHint and x11 & Qt.WindowType.WindowTransparentForInput
    assert x11 & Qt.WindowType.WindowDoesNotAcceptFocus and x11 & Qt.WindowType.FramelessWindowHint
    assert not overlay_flags(False, "xcb") & Qt.WindowType.WindowTransparentForInput
    for other in ("wayland", "windows", "cocoa"):
        assert not overlay_flags(True, other) & Qt.WindowType.X11BypassWindowManagerHint
        assert overlay_flags(True, other) & Qt.WindowType.WindowStaysOnTopHint
    assert not system_move_allowed("xcb") and system_move_allowed("wayland")


def test_the_note_says_where_on_top_cannot_be_forced():
    assert "Wayland" in always_on_top_note("wayland", {})
    assert "XWayland" in always_on_top_note("xcb", {"WAYLAND_DISPLAY": "wayland-0"})
    assert always_on_top_note("xcb", {}) == ""


def test_a_drag_follows_only_with_the_button_held_and_past_the_drag_distance(qtbot):
    start = QRect(100, 100, 400, 80)
    drag = Drag(QPoint(300, 140), start, None)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    distance = QApplication.startDragDistance()
    assert drag.follow(QPoint(300 + distance - 2, 140), left, 160, 40) is None  # a click's jitter
    assert drag.follow(QPoint(500, 40), none, 160, 40) is None  # the button is up: never follow
    assert drag.follow(QPoint(330, 120), left, 160, 40) == QRect(130, 80, 400, 80)
    assert drag.follow(QPoint(301, 140), left, 160, 40) == QRect(101, 100, 400, 80)  # once started, exact


def test_a_move_without_the_button_ends_the_drag(overlay, qtbot):
    overlay.set_click_through(False, persist=False)
    start = overlay.geometry()
    centre = QPointF(overlay.width() / 2, overlay.height() / 2)
    glob = QPointF(overlay.mapToGlobal(centre.toPoint()))
    press = QMouseEvent(QMouseEvent.Type.MouseButtonPress, centre, glob, Qt.MouseButton.LeftButton,
                        Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(overlay, press)
    # the release went to another window (a grab was lost): the next move has no button held
    moved = QMouseEvent(QMouseEvent.Type.MouseMove, centre + QPointF(80, 40), glob + QPointF(80, 40),
                        Qt.MouseButton.NoButton, Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(overlay, moved)
    assert overlay.geometry() == start
    assert Keys.OVERLAY_CLICK_THROUGH.default in (True, False)


def test_the_overlay_gives_way_to_the_apps_dialogs_only(qtbot):
    from PySide6.QtWidgets import QDialog, QMainWindow, QMenu

    main = QMainWindow()
    qtbot.addWidget(main)
    main.show()
    dialog = QDialog(main)
    dialog.show()
    menu = QMenu(main)
    menu.addAction("x")
    menu.popup(QPoint(10, 10))
    qtbot.waitUntil(lambda: menu.windowHandle() is not None and menu.isVisible())
    assert gives_way_to(dialog.windowHandle()) is True  # Settings, file dialogs, message boxes
    assert gives_way_to(main.windowHandle()) is False  # back on top over the main window
    assert gives_way_to(None) is False  # another application has the focus
    assert gives_way_to(menu.windowHandle()) is None  # a popup is above the overlay anyway
    menu.close()
    dialog.close()


def test_the_active_window_is_unknown_off_x11(qtbot):
    from captioner.ui.overlay_window import active_window

    assert QGuiApplication.platformName() == "offscreen"
    assert active_window() is None  # the overlay then goes back on top as soon as the focus leaves the dialog
