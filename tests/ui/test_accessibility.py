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
