"""Issue 13, bug 5: new transcript lines never change the user's selection or scroll position
while they read back; a pane scrolled to the end keeps following."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextCursor

from captioner.transcript.segment import Segment
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


def test_the_pane_keeps_the_newest_lines_only_and_still_updates_and_masks_them(qtbot, monkeypatch):
    """Issue 30.4: eight hours of captions must not grow the pane; older lines leave its top
    (Save as… writes them from the transcript), the kept ones still update and re-mask."""
    from captioner.ui import transcript_view

    monkeypatch.setattr(transcript_view, "MAX_PANE_LINES", 50)
    v = TranscriptView()
    qtbot.addWidget(v)
    segs = [Segment("You", float(i), i + 0.5, f" line {i}") for i in range(700)]
    for seg in segs:
        v.show_segment(seg)
    doc = v.editor.document()
    lines = v.toPlainText().splitlines()
    assert doc.blockCount() == 50 and lines[0].endswith("line 650") and lines[-1].endswith("line 699")
    assert not doc.isUndoAvailable()  # no undo history of every line ever inserted
    assert len(v._raw_lines) <= 50 + 256 and len(v._segment_blocks) <= 50 + 256
    # a segment announced again updates its own line, not a line that moved into its old place
    assert not v.show_segment(segs[680])
    assert v.toPlainText().splitlines() == lines
    v.set_mask(lambda text: text.replace("line", "LINE"))
    masked = v.toPlainText().splitlines()
    assert len(masked) == 50 and masked[0].endswith("LINE 650") and masked[-1].endswith("LINE 699")


def test_a_speaker_correction_relabels_its_line_in_place_without_announcing_it_again(qtbot):
    """Issue 51: the speakers' second pass corrects a shown line (a SpeakerFix): the transcript
    returns the segment again with its new speaker, and the pane replaces that line's label."""
    from captioner.events import SpeakerFix, TextDelta, TurnBoundary
    from captioner.transcript.model import Transcript

    v = TranscriptView()
    qtbot.addWidget(v)
    t = Transcript()
    said = []
    v.announcer.line_finished = lambda label, text: said.append(label)
    for ev in (TextDelta("Can we move it?", 0.0, 1.5, True, "Meeting", speaker="Speaker 1"),
               TurnBoundary(1.8, "semantic", 0.9, "Meeting"),
               TextDelta("Thursday works.", 2.0, 3.2, True, "Meeting", speaker="Speaker 3"),
               TurnBoundary(3.5, "semantic", 0.9, "Meeting")):
        for seg in t.add(ev):
            v.show_segment(seg)
    assert v.toPlainText().splitlines()[-1].endswith("Speaker 3: Thursday works.")
    for seg in t.add(SpeakerFix(2.0, 3.2, "Speaker 2", "Meeting")):
        assert v.show_segment(seg) is False  # an update, not a new line
    lines = v.toPlainText().splitlines()
    assert len(lines) == 2 and lines[-1].endswith("Speaker 2: Thursday works.")
    assert v.speaker_at(1)[1] == "Speaker 2"  # F2 / double-click now rename the corrected speaker
    assert said == ["Speaker 1", "Speaker 3"]  # never announced twice
