"""Issue 13, bug 3 and the colour buttons: the settings dialog refuses a shortcut another action
already uses, shortcut fields take one key combination, colour buttons stay readable."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QKeySequence

from captioner.ui.overlay import contrast_ratio
from captioner.ui.settings import Keys
from captioner.ui.settings_dialog import ColorButton, SettingsDialog

pytestmark = pytest.mark.gui


@pytest.fixture
def dialog(qtbot, settings):
    d = SettingsDialog(settings)
    qtbot.addWidget(d)
    d.show()
    return d


def test_a_shortcut_used_by_another_action_is_refused(dialog, settings, qtbot):
    overlay_keys = settings.get(Keys.SHORTCUT_TOGGLE_OVERLAY)
    dialog.shortcut_start.setKeySequence(QKeySequence(overlay_keys))
    applied = []
    dialog.applied.connect(lambda: applied.append(True))
    assert dialog.apply() is False
    assert not applied
    assert settings.get(Keys.SHORTCUT_START_STOP) == Keys.SHORTCUT_START_STOP.default  # nothing written
    assert dialog.error_label.isVisible()
    assert "Show/hide overlay" in dialog.error_label.text() and overlay_keys in dialog.error_label.text()
    dialog.accept()  # OK with a clash keeps the dialog open
    assert dialog.isVisible()
    # fixing it clears the message and applies
    dialog.shortcut_start.setKeySequence(QKeySequence("Ctrl+Alt+C"))
    assert dialog.apply() is True and applied == [True]
    assert not dialog.error_label.isVisible()
    assert settings.get(Keys.SHORTCUT_START_STOP) == "Ctrl+Alt+C"


def test_the_window_s_own_shortcuts_are_taken_too(dialog, settings):
    dialog.shortcut_click.setKeySequence(QKeySequence("Ctrl+Q"))
    assert dialog.apply() is False
    assert "Quit" in dialog.error_label.text()


def test_shortcut_fields_take_one_key_combination(dialog):
    for edit in (dialog.shortcut_start, dialog.shortcut_overlay, dialog.shortcut_click):
        assert edit.maximumSequenceLength() == 1


@pytest.mark.parametrize("colour", ["#ffff00", "#ffffff", "#00ff00", "#000000", "#0000ff", "#cfe8ff", "#808080"])
def test_colour_button_text_is_readable(qtbot, colour):
    button = ColorButton(colour)
    qtbot.addWidget(button)
    assert contrast_ratio(QColor(button.text_colour), QColor(colour)) >= 4.5


def test_a_clash_already_in_the_settings_file_is_reported_not_bound_twice(make_window, settings):
    settings.set(Keys.SHORTCUT_START_STOP, settings.get(Keys.SHORTCUT_TOGGLE_OVERLAY))  # an old, hand-edited file
    win, _ = make_window()
    bound = [a.shortcut().toString() for a in (win.start_action, win.overlay_action, win.click_through_action)]
    assert len([b for b in bound if b]) == len({b for b in bound if b})
    assert "shortcuts" in [m[2] for m in win.messages.messages()]


def test_dialog_stays_above_the_always_on_top_overlay(qtbot, tmp_path):
    """QA: with 5 caption lines at 60 pt the overlay covered the dialog's OK/Apply buttons."""
    from PySide6.QtCore import QSettings, Qt

    from captioner.ui.settings import Settings
    from captioner.ui.settings_dialog import SettingsDialog

    dialog = SettingsDialog(Settings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)))
    qtbot.addWidget(dialog)
    assert dialog.windowFlags() & Qt.WindowType.WindowStaysOnTopHint


def _wheel(widget, steps: int = -1) -> None:
    """Turn the mouse wheel over ``widget``'s centre, ``steps`` notches (negative: towards you)."""
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    centre = QPointF(widget.rect().center())
    ev = QWheelEvent(centre, QPointF(widget.mapToGlobal(widget.rect().center())), QPoint(0, 0),
                     QPoint(0, 120 * steps), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                     Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, ev)


def test_the_wheel_scrolls_the_form_and_never_changes_a_setting_it_passes_over(dialog, qtbot):
    """Scrolling Settings with the mouse wheel over a combo box or spin box used to change it."""
    dialog.resize(520, 320)
    dialog.show()
    qtbot.waitExposed(dialog)
    bar = dialog.scroll.verticalScrollBar()
    assert bar.maximum() > 0  # the form is taller than the dialog
    preset, size = dialog.preset.currentIndex(), dialog.font_size.value()
    dialog.scroll.setFocus()
    _wheel(dialog.preset)
    _wheel(dialog.font_size)
    assert (dialog.preset.currentIndex(), dialog.font_size.value()) == (preset, size)
    assert bar.value() > 0  # the wheel moved the form instead
    assert dialog.font_size.focusPolicy() == Qt.FocusPolicy.StrongFocus  # Tab and click still reach it
    dialog.font_size.setFocus()
    qtbot.waitUntil(dialog.font_size.hasFocus)
    _wheel(dialog.font_size, 1)
    assert dialog.font_size.value() == size + dialog.font_size.singleStep()  # in focus, the wheel turns it
