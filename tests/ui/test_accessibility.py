"""Issue 13, accessibility, checked through Qt's accessibility tree: every list and field of the
form is labelled (buddy) and reachable with Alt+letter, the three level meters have names of their
own, and Alt+D answers Discard in the quit question."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMessageBox

from captioner.ui.unsaved_dialog import unsaved_box

pytestmark = pytest.mark.gui


def labels_of(widget) -> list[str]:
    """Names of the accessible objects that label ``widget``."""
    iface = QAccessible.queryAccessibleInterface(widget)
    return [other.text(QAccessible.Text.Name) for other, _ in iface.relations(QAccessible.RelationFlag.Label)]


def name_of(widget) -> str:
    return QAccessible.queryAccessibleInterface(widget).text(QAccessible.Text.Name)


def _fields(win):
    s, m = win.sources, win.model_panel
    return {s.mode_combo: "Caption", s.mic_combo: "Microphone", s.system_combo: "System audio",
            s.file_edit: "File", m.backend_combo: "Model", m.model_edit: "Location", m.clock_combo: "Clock",
            m.delay_combo: "Delay", m.language_combo: "Language"}


def test_every_field_is_labelled_in_the_accessibility_tree(make_window):
    win, _ = make_window()
    for widget, label in _fields(win).items():
        assert label + ":" in labels_of(widget), (label, labels_of(widget))


def test_every_label_has_its_own_alt_key(make_window):
    win, _ = make_window()
    keys = [a.text().split("&")[1][0].lower() for a in win.menuBar().actions()]  # File, Captions
    for widget in _fields(win):
        label = next(lab for lab in widget.parent().findChildren(type(win.sources.mode_label)) if lab.buddy() is widget)
        assert "&" in label.text(), label.text()
        keys.append(label.text().split("&")[1][0].lower())
    assert len(keys) == len(set(keys)), keys


def test_alt_letter_moves_to_the_field(make_window, qtbot):
    win, _ = make_window()
    win.activateWindow()
    qtbot.waitUntil(lambda: win.isActiveWindow(), timeout=2000)
    win.sources.mode_combo.setCurrentIndex(win.sources.mode_combo.findData("microphone"))
    QTest.keyClick(win, Qt.Key.Key_M, Qt.KeyboardModifier.AltModifier)
    assert win.focusWidget() is win.sources.mic_combo


def test_the_level_meters_have_names_of_their_own(make_window):
    win, _ = make_window()
    names = [name_of(m) for m in (win.sources.mic_meter, win.sources.system_meter, win.sources.file_meter)]
    assert len(set(names)) == 3, names
    assert "Microphone" in names[0] and "System audio" in names[1] and "File" in names[2]


def test_alt_d_discards_in_the_quit_question(qtbot):
    box = unsaved_box(None, None)
    qtbot.addWidget(box)
    box.open()
    box.activateWindow()
    qtbot.waitUntil(box.isActiveWindow, timeout=2000)
    discard = box.button(QMessageBox.StandardButton.Discard)
    assert "&D" in discard.text() or "&d" in discard.text()
    with qtbot.waitSignal(box.buttonClicked, timeout=2000) as clicked:
        QTest.keyClick(box, Qt.Key.Key_D, Qt.KeyboardModifier.AltModifier)
    assert clicked.args[0] is discard


# -- issue 22: calm for screen readers, values shown ---------------------------------------------------
def test_a_level_meter_keeps_its_accessible_text_while_levels_arrive(qtbot):
    from captioner.events import Level
    from captioner.ui.level_meter import LevelMeter

    meter = LevelMeter(name="Microphone input level")
    qtbot.addWidget(meter)
    iface = QAccessible.queryAccessibleInterface(meter)
    before = (iface.text(QAccessible.Text.Name), iface.text(QAccessible.Text.Description))
    for db in (-60.0, -35.0, -12.0, -3.0):
        meter.set_level(Level(db, db + 6.0, "Microphone"))
        assert (iface.text(QAccessible.Text.Name), iface.text(QAccessible.Text.Description)) == before
    assert "-3 dBFS RMS" in meter.toolTip()  # the numbers are still there for whoever asks


def test_the_live_line_has_a_fixed_accessible_name(make_window):
    from captioner.events import TextDelta

    win, _ = make_window()
    label = win.transcript_view.live_label
    name = name_of(label)
    for text in ("so", "so I think", "so I think we should"):
        win._on_event(TextDelta(" " + text, 0.0, 1.0, False, "talk.wav"))
        assert name_of(label) == name
    assert "we should" in win.live_text()  # still shown on screen


@pytest.mark.parametrize("backlogs, shown", [
    ([0.8, 1.2, 0.9, 1.4, 0.7, 1.9, 1.1], ["keeping up"]),  # wandering round 1 s: no flapping
    ([0.5, 2.3, 2.6, 1.8, 2.4, 1.2, 0.9], ["keeping up", "2 s behind", "keeping up"]),
    ([3.2, 4.6, 4.1, 6.0, 0.4], ["3 s behind", "5 s behind", "6 s behind", "keeping up"]),
])
def test_the_health_label_changes_only_when_it_matters(qtbot, backlogs, shown):
    from captioner.ui.run_bar import RunBar

    bar = RunBar()
    qtbot.addWidget(bar)
    seen = []
    bar.stats_label.setText("keeping up")
    for b in backlogs:
        bar.set_stats(0.9, b, 0, 0.0)
        if not seen or seen[-1] != bar.stats_label.text():
            seen.append(bar.stats_label.text())
    assert seen == shown
    bar.clear_stats()
    bar.set_stats(0.9, 1.5, 0, 0.0)
    assert bar.stats_label.text() == "keeping up"  # a new run starts from "keeping up"


def test_settings_sliders_show_their_value(qtbot, settings):
    from captioner.ui.settings import Keys
    from captioner.ui.settings_dialog import SettingsDialog

    settings.set(Keys.OVERLAY_OPACITY, 0.7)
    dlg = SettingsDialog(settings)
    qtbot.addWidget(dlg)
    assert dlg.opacity_value.text() == "70 %"
    dlg.opacity.setValue(35)
    assert dlg.opacity_value.text() == "35 %"
    dlg.turn_sensitivity.setValue(80)
    assert dlg.turn_sensitivity_value.text() == "0.80"
    assert labels_of(dlg.opacity) == ["Background opacity:"]  # the row's label still labels the slider
