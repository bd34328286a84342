"""Issue 39, points 1-3 in-process: names in Qt's accessible tree, announcements, the status
read-out, spoken times, line labels, the overlay's key mode, colour presets' contrast.

The same promises through a real AT-SPI bus and real keys are in
tests/ui/test_accessibility_atspi.py and tests/ui/test_keyboard_only.py.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QElapsedTimer, QRect, Qt
from PySide6.QtGui import QAccessible, QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLabel

from captioner.events import TextDelta
from captioner.transcript.segment import Segment
from captioner.ui.accessibility import LineAnnouncer, StatusAnnouncer, announcements_supported, spoken_duration
from captioner.ui.colour_presets import AA_RATIO, AAA_RATIO, PRESETS, matching_preset
from captioner.ui.overlay_keys import STEP_PX, stepped
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui


def walk(iface):
    """Every valid accessible object under ``iface`` (itself included)."""
    yield iface
    for i in range(iface.childCount()):
        child = iface.child(i)
        if child is not None and child.isValid():
            yield from walk(child)


def unnamed_focusable(widget) -> list[str]:
    """Focusable, shown accessible objects under ``widget`` with an empty name (role and class)."""
    bad = []
    for it in walk(QAccessible.queryAccessibleInterface(widget)):
        state = it.state()
        if state.focusable and not state.invisible and not it.text(QAccessible.Text.Name).strip():
            bad.append(f"{it.role()} {type(it.object()).__name__} {it.text(QAccessible.Text.Value)[:30]!r}")
    return bad


# -- 1. names --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["microphone", "system", "both", "file"])
@pytest.mark.parametrize("backend", ["default", "audio8", "remote"])
def test_no_focusable_control_of_the_main_window_is_unnamed(make_window, mode, backend):
    win, _ = make_window()
    win.sources.mode_combo.setCurrentIndex(win.sources.mode_combo.findData(mode))
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData(backend))
    assert unnamed_focusable(win) == []


def test_no_focusable_control_of_settings_is_unnamed(qtbot, settings):
    from captioner.ui.settings_dialog import SettingsDialog

    dlg = SettingsDialog(settings, shortcut_status="Desktop-wide through X11")
    qtbot.addWidget(dlg)
    dlg.show()
    assert unnamed_focusable(dlg) == []
    assert dlg.text_color.accessibleName() == "Text colour"  # not its colour code


def test_every_menu_and_tray_entry_is_named(make_window):
    from captioner.ui.tray import TrayIcon

    win, _ = make_window()
    tray = TrayIcon(win, win.quit_action)
    actions = [a for m in win.menuBar().actions() for a in m.menu().actions()] + tray.menu.actions()
    assert all(a.text().replace("&", "").strip() for a in actions if not a.isSeparator())
    assert win.move_overlay_action in tray.menu.actions() and win.move_overlay_action in win.menuBar().actions()[1].menu().actions()


def test_the_pane_is_named_transcript_and_the_overlay_is_named(make_window):
    win, _ = make_window()
    pane = QAccessible.queryAccessibleInterface(win.transcript_view.editor)
    assert pane.text(QAccessible.Text.Name) == "Transcript"
    assert "announced" in pane.text(QAccessible.Text.Description)
    assert QAccessible.queryAccessibleInterface(win.overlay).text(QAccessible.Text.Name) == "Captions overlay"
    assert win.transcript_view.editor.tabChangesFocus()  # Tab leaves the pane: no focus trap


# -- 1. announcements ------------------------------------------------------------------------
def test_announcements_are_available_in_this_qt():
    assert announcements_supported()  # PySide6 >= 6.8 (pyproject); else only the pane's insertion is sent


def test_each_finished_line_is_announced_once_and_never_a_partial(make_window, qtbot):
    from ui_fakes import run_and_stop

    win, record = make_window()
    sent = win.transcript_view.announcer.sent
    win._on_event(TextDelta(" not final", 0.0, 0.5, False, "talk"))  # a partial: never announced
    assert not sent
    run_and_stop(qtbot, win, record)
    lines = [ln for ln in win.transcript_view.toPlainText().splitlines() if ln.startswith("[")]
    assert len(sent) == len(lines) >= 1
    assert list(sent) == ["alpha bravo charlie delta echo"]  # a file source: no file name first
    # the same segment announced again (re-closed at a turn end) updates its line, and is not heard twice
    seg = win.recorder.transcript.segments[0]
    win.transcript_view.show_segment(seg)
    assert len(sent) == 1


def test_speaker_first_and_the_setting_turns_announcements_off(qtbot, settings):
    from captioner.ui.transcript_view import TranscriptView

    view = TranscriptView()
    qtbot.addWidget(view)
    view.speaker_name = {"Speaker 2": "Ana"}.get
    view.show_segment(Segment("Meeting", 3.0, 4.0, " hello there", speaker="Speaker 2"))
    view.show_segment(Segment("Meeting", 5.0, 6.0, " and you", speaker="Speaker 3"))
    view.show_segment(Segment("Meeting", 7.0, 8.0, " the room"))
    assert list(view.announcer.sent) == ["Ana: hello there", "Speaker 3: and you", "Meeting: the room"]
    assert view.toPlainText().splitlines()[0] == "[0:03] Ana: hello there"
    settings.set(Keys.ANNOUNCE_LINES, False)
    view.announcer.enabled = lambda: settings.get(Keys.ANNOUNCE_LINES)
    view.show_segment(Segment("Meeting", 9.0, 9.5, " unheard"))
    assert len(view.announcer.sent) == 3 and "unheard" in view.toPlainText()
    assert Keys.ANNOUNCE_LINES.default is True


def test_a_line_message_is_one_line_label_first():
    assert LineAnnouncer.message("You", "  so\nwe go ") == "You: so we go"
    assert LineAnnouncer.message("", " text ") == "text"
    assert LineAnnouncer.message("You", "   ") == ""


# -- 1. times and labels -----------------------------------------------------------------------
@pytest.mark.parametrize("seconds, words", [
    (0.0, "0 seconds"), (1.2, "1 second"), (59.99, "59 seconds"), (65.4, "1 minute 5 seconds"),
    (120.0, "2 minutes 0 seconds"), (3603.0, "1 hour 0 minutes 3 seconds"), (7322.0, "2 hours 2 minutes 2 seconds"),
    (-4.0, "0 seconds"), (float("nan"), "0 seconds")])
def test_spoken_duration(seconds, words):
    assert spoken_duration(seconds) == words


def test_the_line_under_the_caret_is_described_with_its_time_in_words(qtbot):
    from captioner.ui.transcript_view import PANE_DESCRIPTION, TranscriptView

    view = TranscriptView()
    qtbot.addWidget(view)
    for i, t in enumerate((5.0, 65.0, 125.0)):
        view.show_segment(Segment("Meeting", t, t + 1, f" line {i}"))
    assert view.toPlainText().splitlines()[1] == "[1:05] Meeting: line 1"  # compact on screen
    cursor = view.editor.textCursor()
    cursor.setPosition(view.editor.document().findBlockByNumber(1).position() + 3)
    view.editor.setTextCursor(cursor)
    assert view.editor.accessibleDescription() == "Line at 1 minute 5 seconds, Meeting"
    view.append_line("— new session —")
    cursor.setPosition(view.editor.document().findBlockByNumber(3).position())
    view.editor.setTextCursor(cursor)
    assert view.editor.accessibleDescription() == PANE_DESCRIPTION


def test_a_custom_file_label_is_kept_as_the_prefix(make_window, qtbot, settings):
    from ui_fakes import run_and_stop

    settings.set(Keys.FILE_LABEL, "Lecture")
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    assert "] Lecture: alpha" in win.transcript_view.toPlainText()
    assert list(win.transcript_view.announcer.sent) == ["Lecture: alpha bravo charlie delta echo"]


# -- 1. status -----------------------------------------------------------------------------------
def test_status_changes_are_read_out_at_most_once_a_second(qtbot):
    label = QLabel("Ready")
    qtbot.addWidget(label)
    status = StatusAnnouncer(label)
    clock = QElapsedTimer()
    clock.start()
    for text in ("Loading the model…", "Model: default", "Loading 50 %", "Captioning"):  # Start: 4 in 1.6 s
        status.set_text(text)
        assert label.text() == text  # the screen shows each at once
    assert list(status.read_outs) == ["Loading the model…"]
    seen = []
    qtbot.waitUntil(lambda: len(status.read_outs) == 2 and not seen.append(clock.elapsed()), timeout=3000)
    assert list(status.read_outs) == ["Loading the model…", "Captioning"]  # the newest text won
    assert seen[-1] >= 990  # not before a second had passed since the first read-out
    assert label.accessibleName() == "Status" and label.accessibleDescription() == "Captioning"
    status.set_text("Captioning")  # unchanged: not read again
    qtbot.waitUntil(lambda: not status._timer.isActive(), timeout=3000)  # its turn came and went
    assert len(status.read_outs) == 2


# -- 2. keyboard: the overlay's key mode -----------------------------------------------------------
def test_arrow_steps_move_and_shift_arrows_resize():
    r = QRect(100, 100, 400, 80)
    none = Qt.KeyboardModifier.NoModifier
    assert stepped(r, Qt.Key.Key_Left, none, (160, 40)) == QRect(100 - STEP_PX, 100, 400, 80)
    assert stepped(r, Qt.Key.Key_Down, Qt.KeyboardModifier.ControlModifier, (160, 40)) == QRect(100, 101, 400, 80)
    assert stepped(r, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier, (160, 40)) == QRect(100, 100, 410, 80)
    assert stepped(QRect(0, 0, 165, 45), Qt.Key.Key_Up, Qt.KeyboardModifier.ShiftModifier, (160, 40)).height() == 40
    assert stepped(r, Qt.Key.Key_A, none, (160, 40)) is None


def test_the_overlay_moves_and_resizes_with_keys_while_unlocked(make_window, qtbot):
    win, _ = make_window()
    win.overlay.set_click_through(False)
    win.overlay.setGeometry(200, 300, 500, 100)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    win.move_overlay_action.trigger()
    assert win.overlay_keys.active
    assert any(code == "overlay_keys" for _, _, code in win.messages.messages())
    before = win.overlay.geometry()
    QTest.keyClick(win.focusWidget() or win, Qt.Key.Key_Right)
    QTest.keyClick(win.focusWidget() or win, Qt.Key.Key_Down, Qt.KeyboardModifier.ShiftModifier)
    after = win.overlay.geometry()
    assert (after.x(), after.y(), after.width(), after.height()) == (
        before.x() + STEP_PX, before.y(), before.width(), before.height() + STEP_PX)
    QTest.keyClick(win.focusWidget() or win, Qt.Key.Key_Escape)
    assert not win.overlay_keys.active
    assert not any(code == "overlay_keys" for _, _, code in win.messages.messages())
    QTest.keyClick(win.focusWidget() or win, Qt.Key.Key_Right)  # arrows are the form's again
    assert win.overlay.geometry() == after


def test_a_locked_overlay_does_not_enter_the_key_mode(make_window):
    win, _ = make_window()
    win.overlay.set_click_through(True)
    win.move_overlay_action.trigger()
    assert not win.overlay_keys.active
    assert any("locked" in text for text, _, code in win.messages.messages() if code == "overlay_keys")


# -- 3. contrast -------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", PRESETS, ids=[p.name for p in PRESETS])
def test_every_preset_reaches_its_contrast(preset):
    text, partial = preset.ratios()
    assert min(text, partial) >= preset.minimum >= AA_RATIO, (preset.name, text, partial)
    assert QColor(preset.partial).name() != QColor(preset.text).name()  # and italic: never colour alone
    print(f"{preset.name}: text {text:.1f}:1, partial {partial:.1f}:1, "
          f"worst over any window at {preset.opacity or Keys.OVERLAY_OPACITY.default:.0%}: "
          f"{preset.worst_ratio(preset.opacity or Keys.OVERLAY_OPACITY.default):.1f}:1")


def test_the_high_contrast_preset_reaches_7_to_1_opaque():
    high = next(p for p in PRESETS if p.name == "High contrast")
    assert high.minimum == AAA_RATIO and high.opacity == 1.0 and high.worst_ratio(1.0) >= AAA_RATIO


def test_the_default_colours_are_the_first_preset_and_reach_aa():
    first = PRESETS[0]
    assert matching_preset(Keys.OVERLAY_TEXT_COLOR.default, Keys.OVERLAY_PARTIAL_COLOR.default,
                           Keys.OVERLAY_BACKGROUND_COLOR.default) == first.name
    assert first.worst_ratio(Keys.OVERLAY_OPACITY.default) >= AA_RATIO  # even translucent over a white window


def test_choosing_a_preset_fills_the_colours(qtbot, settings):
    from captioner.ui.settings_dialog import SettingsDialog

    dlg = SettingsDialog(settings)
    qtbot.addWidget(dlg)
    assert dlg.preset.currentText() == PRESETS[0].name
    index = dlg.preset.findText("High contrast")
    dlg.preset.setCurrentIndex(index)
    dlg.preset.activated.emit(index)
    assert dlg.apply()
    assert (settings.get(Keys.OVERLAY_TEXT_COLOR), settings.get(Keys.OVERLAY_PARTIAL_COLOR),
            settings.get(Keys.OVERLAY_BACKGROUND_COLOR), settings.get(Keys.OVERLAY_OPACITY)) == (
        "#ffffff", "#ffff00", "#000000", 1.0)
    dlg.announce_lines.setChecked(False)
    assert dlg.apply() and settings.get(Keys.ANNOUNCE_LINES) is False


def test_the_partial_tail_is_italic_not_only_dimmer(make_window):
    win, _ = make_window()
    win._on_event(TextDelta(" we will", 0.0, 0.5, True, "talk"))
    win._on_event(TextDelta(" look at", 0.5, 1.0, False, "talk"))
    assert "<i " in win.live_text() and "look at</i>" in win.live_text()
