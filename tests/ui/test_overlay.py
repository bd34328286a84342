"""CaptionOverlay: rendering, turns, line limit, stable finals, CJK wrapping, click-through, geometry."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QGuiApplication

from captioner.events import TextDelta, TurnBoundary
from captioner.ui.overlay import CaptionOverlay, always_on_top_note, clamp_rect, screen_key
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui

RED, GREEN = QColor("#ff0000"), QColor("#00ff00")


def fin(text, src="Meeting", t=0.0):
    return TextDelta(text, t, t + 0.1, True, src)


def part(text, src="Meeting", t=0.0):
    return TextDelta(text, t, t + 0.1, False, src)


@pytest.fixture
def overlay(qtbot, settings):
    settings.set(Keys.OVERLAY_TEXT_COLOR, RED.name())
    settings.set(Keys.OVERLAY_PARTIAL_COLOR, GREEN.name())
    settings.set(Keys.OVERLAY_OPACITY, 1.0)
    settings.set(Keys.OVERLAY_LINES, 2)
    settings.set(Keys.OVERLAY_FONT_SIZE, 20)
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.setGeometry(50, 50, 500, ov.preferred_height())
    ov.show()
    return ov


def _count(img, colour, tol=60):
    n = 0
    for y in range(0, img.height(), 2):
        for x in range(0, img.width(), 2):
            c = img.pixelColor(x, y)
            if abs(c.red() - colour.red()) + abs(c.green() - colour.green()) + abs(c.blue() - colour.blue()) < tol:
                n += 1
    return n


def test_partial_then_final_renders(overlay):
    overlay.apply_event(part("hello wor"))
    lines = overlay.visible_lines()
    assert [(v.final, v.partial) for v in lines] == [("Meeting: ", "hello wor")]
    img = overlay.grab().toImage()
    assert _count(img, GREEN) > 20 and _count(img, RED) > 5  # partial drawn in its own colour; label in text colour
    red_label_only = _count(img, RED)
    overlay.apply_event(fin(" hello world"))
    assert [(v.final, v.partial) for v in overlay.visible_lines()] == [("Meeting: hello world", "")]
    img = overlay.grab().toImage()
    assert _count(img, GREEN) == 0
    assert _count(img, RED) > 1.4 * red_label_only  # "hello world" now in the final colour


def test_turn_boundaries_start_new_lines_and_limit_holds(overlay):
    for i, word in enumerate(["one", "two", "three", "four", "five"]):
        overlay.apply_event(fin(word, t=float(i)))
        overlay.apply_event(TurnBoundary(float(i) + 0.5, source="Meeting"))
    assert [v.text for v in overlay.visible_lines()] == ["Meeting: four", "Meeting: five"]
    overlay.settings.set(Keys.OVERLAY_LINES, 1)
    overlay.apply_settings()
    assert [v.text for v in overlay.visible_lines()] == ["Meeting: five"]


def test_long_turn_wraps_and_keeps_line_limit(overlay):
    for i in range(200):
        overlay.apply_event(fin(f" word{i}", t=i * 0.1))
    shown = overlay.visible_lines()
    assert len(shown) == 2
    assert shown[-1].text.rstrip().endswith("word199")
    assert all(v.width <= overlay.width() for v in shown)
    assert len(overlay.model.lines[0].final) < 200 * 6  # scrolled-out head was trimmed


def test_final_text_never_changes(overlay):
    script = []
    words = "the quick brown fox jumps over the lazy dog and runs far away into the night".split()
    for i, w in enumerate(words):
        script.append(part(" " + w[:2], t=i))
        script.append(part(" " + w, t=i))
        script.append(fin(" " + w, t=i))
        if i % 5 == 4:
            script.append(TurnBoundary(float(i), source="Meeting"))
    previous = ""
    for ev in script:
        overlay.apply_event(ev)
        paragraphs = {}
        for v in overlay.visible_lines():
            paragraphs.setdefault(v.serial, []).append(v.final)
        shown = "\n".join("".join(p) for p in paragraphs.values())
        # append-only, except that old text may scroll off the top
        assert any(shown.startswith(previous[k:]) for k in range(len(previous) + 1)), (previous, shown)
        previous = shown


def test_cjk_wraps_within_width(overlay):
    overlay.resize(300, overlay.height())
    text = "这是一个没有空格的中文句子用来测试换行是否正确而且还要更长一些"
    overlay.settings.set(Keys.OVERLAY_LINES, 5)
    overlay.apply_settings()
    overlay.apply_event(fin(text, src=""))
    shown = overlay.visible_lines()
    assert len(shown) >= 3
    assert "".join(v.text for v in shown) == text
    assert all(v.width <= 300 for v in shown)


def test_mixed_cjk_latin_breaks_between_words(overlay):
    overlay.resize(260, overlay.height())
    overlay.settings.set(Keys.OVERLAY_LINES, 5)
    overlay.apply_settings()
    text = "我们明天用Kubernetes部署captioner应用然后Friday开会讨论"
    overlay.apply_event(fin(text, src=""))
    shown = [v.text for v in overlay.visible_lines()]
    assert "".join(shown) == text and len(shown) >= 2
    for word in ("Kubernetes", "captioner", "Friday"):
        assert any(word in s for s in shown), shown  # Latin words are never split


def test_click_through_sets_input_transparency(overlay, settings, qtbot):
    with qtbot.waitSignal(overlay.click_through_changed) as blocker:
        overlay.set_click_through(True)
    assert blocker.args == [True]
    assert overlay.windowFlags() & Qt.WindowType.WindowTransparentForInput
    assert overlay.testAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    assert overlay.isVisible()
    assert settings.get(Keys.OVERLAY_CLICK_THROUGH) is True
    overlay.toggle_click_through()
    assert not overlay.windowFlags() & Qt.WindowType.WindowTransparentForInput
    assert not overlay.testAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)


def test_never_takes_focus(overlay):
    flags = overlay.windowFlags()
    assert flags & Qt.WindowType.WindowDoesNotAcceptFocus
    assert flags & Qt.WindowType.WindowStaysOnTopHint
    assert overlay.testAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
    assert overlay.focusPolicy() == Qt.FocusPolicy.NoFocus


def test_geometry_persists_per_screen(overlay, settings, qtbot):
    screen = QGuiApplication.primaryScreen()
    avail = screen.availableGeometry()
    target = QRect(avail.left() + 40, avail.top() + 30, 420, 110)
    overlay.setGeometry(target)
    with qtbot.waitSignal(overlay.geometry_saved, timeout=3000) as blocker:
        pass  # the debounced save fires after the move
    # the screen asked for again: the platform may replace its screen object meanwhile (offscreen Qt
    # does, after an earlier test's app shut down), and a stale one raises "already deleted"
    assert blocker.args == [screen_key(QGuiApplication.primaryScreen())]
    again = CaptionOverlay(settings)
    qtbot.addWidget(again)
    assert again.restore_geometry() == target


def test_geometry_clamped_when_screen_is_gone(settings, qtbot):
    avail = QGuiApplication.primaryScreen().availableGeometry()
    settings.set_overlay_geometry("HDMI-9 3840x2160", (avail.width() + 1500, 1800, 600, 120))
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    g = ov.restore_geometry()
    assert avail.contains(g)
    assert (g.width(), g.height()) == (600, 120)  # the size survives, the position is clamped
    ov.setGeometry(QRect(-5000, -5000, 300, 80))
    assert avail.contains(ov.ensure_on_screen())


def test_clamp_rect_shrinks_oversized():
    r = clamp_rect(QRect(-10, -10, 5000, 50), QRect(0, 0, 800, 600))
    assert r == QRect(0, 0, 800, 50)


def test_wayland_note():
    assert "QT_QPA_PLATFORM=xcb" in always_on_top_note("wayland")
    assert always_on_top_note("xcb") == ""


def test_drag_moves_and_border_resizes(overlay, qtbot):
    from PySide6.QtCore import QPoint
    from PySide6.QtTest import QTest

    overlay.set_click_through(False)
    start = overlay.geometry()
    centre = QPoint(overlay.width() // 2, overlay.height() // 2)
    QTest.mousePress(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre)
    QTest.mouseMove(overlay, centre + QPoint(30, -20))
    QTest.mouseRelease(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, centre + QPoint(30, -20))
    moved = overlay.geometry()
    assert (moved.x() - start.x(), moved.y() - start.y()) == (30, -20)
    assert moved.size() == start.size()
    edge = QPoint(overlay.width() - 3, overlay.height() // 2)
    QTest.mousePress(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, edge)
    QTest.mouseMove(overlay, edge + QPoint(-50, 0))
    QTest.mouseRelease(overlay, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, edge + QPoint(-50, 0))
    assert overlay.width() == moved.width() - 50 and overlay.x() == moved.x()


def test_line_setting_resizes_keeping_the_bottom_edge(overlay, settings):
    overlay.move(overlay.x(), 400)  # room above it (at the top edge it grows down: test_overlay_geometry)
    bottom = overlay.geometry().bottom()
    settings.set(Keys.OVERLAY_LINES, 4)
    overlay.apply_settings()
    assert overlay.height() == overlay.preferred_height()
    assert overlay.geometry().bottom() == bottom
    for i in range(6):
        overlay.apply_event(fin(f"turn {i}", t=float(i)))
        overlay.apply_event(TurnBoundary(float(i) + 0.5, source="Meeting"))
    assert [v.text for v in overlay.visible_lines()] == [f"Meeting: turn {i}" for i in range(2, 6)]
    overlay.resize(overlay.width(), overlay.preferred_height() // 2)  # user made it smaller: show what fits
    assert len(overlay.visible_lines()) < 4


def test_default_partial_colour_is_distinct_and_readable_on_any_backdrop(qtbot, settings):
    """Partial text: a tint of its own (not the final white), >= 4.5:1 against the default panel."""
    from captioner.ui.overlay import contrast_ratio, panel_over

    ov = CaptionOverlay(settings)  # the user's defaults
    qtbot.addWidget(ov)
    assert ov.opacity >= 0.7
    assert ov.partial_color != ov.text_color
    for backdrop in (QColor("#ffffff"), QColor("#ffff66"), QColor("#808080"), QColor("#000000")):
        panel = panel_over(ov.background_color, ov.opacity, backdrop)
        assert contrast_ratio(ov.partial_color, panel) >= 4.5, backdrop.name()
        assert contrast_ratio(ov.text_color, panel) >= 4.5, backdrop.name()
    # the old grey on the old 0.6 panel over white: the case the QA pass found hard to read
    assert contrast_ratio(QColor("#b8b8b8"), panel_over(QColor("#000000"), 0.6, QColor("#ffffff"))) < 3.5


def test_partial_text_gets_the_outline_and_is_italic(overlay):
    overlay.apply_event(part("hello world"))
    img = overlay.grab().toImage()
    assert _count(img, GREEN) > 20
    assert _count(img, QColor(0, 0, 0), tol=30) > 20  # the outline/shadow round the partial glyphs
    layout = overlay._shown[-1][0]
    assert any(r.format.fontItalic() and r.length == len("hello world") for r in layout.formats())


def _fill_to_wrap(overlay, words, tail):
    """Final text of one turn whose last visual line is just ``tail`` (a stray-looking fragment)."""
    text = ""
    for w in words:
        candidate = (text + " " + w).strip()
        overlay.model.clear()
        overlay.apply_event(fin(candidate + " " + tail))
        if len(overlay.visible_lines()) == 2 and overlay.visible_lines()[-1].text.strip() == tail:
            return candidate + " " + tail
        text = candidate
    raise AssertionError("could not build a turn that wraps to a lone tail")


def test_roll_up_never_leaves_a_stray_tail_of_the_previous_turn(overlay):
    # issue 9 item 6: "to-day." alone on the first line above the next turn
    words = ("we will look at the numbers for the next quarter and decide what we can do with the "
             "remaining budget before the end of the week which").split()
    first = _fill_to_wrap(overlay, words, "to-day.")
    overlay.model.clear()
    overlay.apply_event(fin(first, t=0.0))
    overlay.apply_event(TurnBoundary(5.0, source="Meeting"))
    overlay.apply_event(fin("Thanks, see you then.", src="You", t=6.0))
    shown = [v.text.strip() for v in overlay.visible_lines()]
    assert "to-day." not in shown, shown
    assert shown[-1] == "You: Thanks, see you then."
    # a previous turn that fits whole stays above the new one
    overlay.model.clear()
    overlay.apply_event(fin("Good morning.", t=0.0))
    overlay.apply_event(TurnBoundary(1.0, source="Meeting"))
    overlay.apply_event(fin("Morning!", src="You", t=2.0))
    assert [v.text for v in overlay.visible_lines()] == ["Meeting: Good morning.", "You: Morning!"]


def test_a_turn_spans_lines_until_its_boundary_then_the_next_turn_starts_a_new_line(overlay):
    overlay.apply_event(fin("So I think we should.", t=0.0))
    overlay.apply_event(fin(" Move the meeting.", t=2.5))  # after a thinking pause: same turn, same line
    shown = overlay.visible_lines()
    assert "".join(v.text for v in shown) == "Meeting: So I think we should. Move the meeting."
    assert len({v.serial for v in shown}) == 1
    first_serial = shown[0].serial
    overlay.apply_event(TurnBoundary(4.0, "semantic", 0.8, "Meeting"))
    overlay.apply_event(fin("Fine by me.", t=7.0))
    assert [v.text for v in overlay.visible_lines()][-1] == "Meeting: Fine by me."
    assert overlay.visible_lines()[-1].serial != first_serial
    assert overlay.model.lines[0].closed and not overlay.model.lines[-1].closed


def test_indicator_dot_follows_voice_activity(overlay, qtbot):
    from captioner.events import VoiceActivity

    def dot_alpha():
        img = overlay.grab().toImage()
        r = overlay.indicator_rect()
        c = img.pixelColor(int(r.center().x()), int(r.center().y()))
        return abs(c.red() - RED.red()) + abs(c.green() - RED.green()) + abs(c.blue() - RED.blue())

    assert overlay.indicator() == ("idle", 0.0)
    idle_dist = dot_alpha()
    overlay.apply_event(VoiceActivity(0.2, 0.98, "speaking", "Meeting"))
    assert overlay.indicator() == ("speaking", 1.0)
    speaking_dist = dot_alpha()
    assert speaking_dist < idle_dist  # the filled dot in the text colour
    overlay.apply_event(VoiceActivity(1.0, 0.05, "pause", "Meeting"))
    assert overlay.indicator()[0] == "pause"
    assert dot_alpha() > speaking_dist  # a ring: the centre shows the panel
    overlay.apply_event(VoiceActivity(2.0, 0.0, "turn_over", "Meeting"))
    assert overlay.indicator()[0] == "turn_over"
    overlay.apply_event(VoiceActivity(2.1, 0.9, "speaking", "You"))  # any source speaking lights it
    assert overlay.indicator()[0] == "speaking"
    overlay.clear()
    assert overlay.indicator() == ("idle", 0.0)
