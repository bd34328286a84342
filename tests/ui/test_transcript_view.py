"""Issue 13, bug 5: new transcript lines never change the user's selection or scroll position
while they read back; a pane scrolled to the end keeps following."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextCursor

from captioner.transcript.model import Segment
from captioner.ui.transcript_view import TranscriptView

pytestmark = pytest.mark.gui


@pytest.fixture
def view(qtbot):
    v = TranscriptView()
    qtbot.addWidget(v)
    v.resize(500, 300)
    v.show()
    for i in range(60):
        v.show_segment(Segment("You", float(i), i + 0.5, f" line {i}"))
    return v


def _new_lines(view, first=100, n=5):
    for i in range(first, first + n):
        view.show_segment(Segment("You", float(i), i + 0.5, f" new {i}"))


def test_a_selection_to_the_end_does_not_grow_with_new_lines(view):
    cursor = view.editor.textCursor()
    cursor.setPosition(view.editor.document().findBlockByNumber(50).position())
    cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
    view.editor.setTextCursor(cursor)
    selected = view.editor.textCursor().selectedText()
    assert selected.endswith("line 59")
    bar = view.editor.verticalScrollBar()
    bar.setValue(bar.maximum())
    kept = bar.value()
    _new_lines(view)
    assert view.editor.textCursor().selectedText() == selected
    assert bar.value() == kept  # a selection means they are reading: the view does not move
    assert "new 104" in view.toPlainText()


def test_reading_back_keeps_the_scroll_position(view):
    bar = view.editor.verticalScrollBar()
    assert bar.maximum() > 0
    bar.setValue(bar.maximum() // 3)
    kept = bar.value()
    _new_lines(view)
    assert bar.value() == kept


def test_a_pane_at_the_end_follows_new_lines(view):
    bar = view.editor.verticalScrollBar()
    bar.setValue(bar.maximum())
    before = bar.maximum()
    _new_lines(view, n=10)
    assert bar.maximum() > before and bar.value() == bar.maximum()
