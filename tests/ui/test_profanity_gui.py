"""Issue 24: with "Mask offensive words" on, the overlay, the transcript pane, Save as… and the
autosave are masked; the journal keeps what the model wrote; off (the default) nothing is masked."""

from __future__ import annotations

import json

import pytest
import ui_fakes
from ui_fakes import run_and_stop, speech

from captioner.ui.caption_model import CaptionModel
from captioner.events import TextDelta
from captioner.transcript.profanity import ProfanityFilter
from captioner.transcript.segment import Segment
from captioner.ui.settings import Keys, profanity_filter
from captioner.ui.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui

SAID = ["oh", "shit", "Scunthorpe", "classic", "FUCK", "cocktail", "heck"]


@pytest.fixture
def said(monkeypatch):
    monkeypatch.setattr(ui_fakes, "WORDS", SAID)  # the fake backend "says" these words
    return speech(SAID)


def _flat(text: str) -> str:
    return " ".join(text.split())  # the overlay wraps its lines


def _journal_text(win) -> str:
    folder = win.recorder.journal_dir
    text = []
    for path in folder.glob("*.jsonl"):
        text += [json.loads(line).get("text", "") for line in path.read_text(encoding="utf-8").splitlines()]
    return " ".join(text)


def test_overlay_pane_and_files_are_masked_when_the_setting_is_on(make_window, settings, qtbot, said, tmp_path):
    settings.set(Keys.MASK_PROFANITY, True)
    settings.set(Keys.PROFANITY_EXTRA, ["heck"])
    win, record = make_window(audio=said)
    run_and_stop(qtbot, win, record)
    shown = _flat(win.overlay.visible_text())
    pane = win.transcript_view.toPlainText()
    for text in (shown, pane):
        assert "s*** Scunthorpe classic F*** cocktail h***" in text, text
        assert "shit" not in text and "FUCK" not in text and "heck" not in text
    assert win.save_transcript(str(tmp_path / "out.srt")) is not None
    saved = (tmp_path / "out.srt").read_text(encoding="utf-8")
    assert "s***" in saved and "F***" in saved and "Scunthorpe" in saved and "shit" not in saved
    journal = _journal_text(win)
    assert "shit" in journal and "FUCK" in journal and "heck" in journal  # the journal keeps the words
    # turned off again (Settings > Apply): the overlay shows the words as the model wrote them
    settings.set(Keys.MASK_PROFANITY, False)
    win.apply_text_mask()
    assert "oh shit Scunthorpe classic FUCK cocktail heck" in _flat(win.overlay.visible_text())


def test_nothing_is_masked_by_default(make_window, settings, qtbot, said, tmp_path):
    assert settings.get(Keys.MASK_PROFANITY) is False and profanity_filter(settings) is None
    win, record = make_window(audio=said)
    run_and_stop(qtbot, win, record)
    assert "oh shit Scunthorpe classic FUCK" in _flat(win.overlay.visible_text())
    assert "oh shit Scunthorpe classic FUCK" in win.transcript_view.toPlainText()


def test_the_dialog_writes_the_filter_settings(settings, qtbot):
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    assert not dialog.mask_profanity.isChecked()
    dialog.mask_profanity.setChecked(True)
    dialog.profanity_extra.setText("Heck, darn it,, heck")
    dialog.profanity_allowed.setText("ass")
    assert dialog.apply()
    assert settings.get(Keys.MASK_PROFANITY) is True
    assert settings.get(Keys.PROFANITY_EXTRA) == ["heck", "darn it"]
    assert settings.get(Keys.PROFANITY_ALLOWED) == ["ass"]
    f = profanity_filter(settings)
    assert f.mask("heck, darn it, my ass, shit") == "h***, d*** i*, my ass, s***"


def test_a_word_split_across_deltas_and_the_partial_is_masked():
    model = CaptionModel(mask=ProfanityFilter())
    model.apply(TextDelta(" oh fu", 0.0, 0.1, True, "You"))
    model.apply(TextDelta("ck", 0.1, 0.2, False, "You"))  # the word's end is still partial
    (line,) = model.lines
    assert line.final + line.partial == "oh f***"
    assert line.raw_final + line.raw_partial == "oh fuck"
    model.apply(TextDelta("ck off Scunthorpe", 0.1, 0.3, True, "You"))
    assert line.text == "You: oh f*** off Scunthorpe"


def test_the_pane_follows_the_setting_for_lines_already_shown(make_window, settings, qtbot, said, tmp_path):
    """Turning the filter on (Settings > Apply) masks what the pane already shows, and turning it
    off shows the words again: the pane, the overlay and Save as… always agree."""
    win, record = make_window(audio=said)
    run_and_stop(qtbot, win, record)
    win.transcript_view.add_recovered([Segment("You", 9.0, 9.5, " recovered shit here")])
    pane = win.transcript_view.toPlainText()
    assert "oh shit Scunthorpe classic FUCK cocktail" in pane and "recovered shit here" in pane
    settings.set(Keys.MASK_PROFANITY, True)
    win.apply_text_mask()
    pane = win.transcript_view.toPlainText()
    assert "oh s*** Scunthorpe classic F*** cocktail" in pane and "recovered s*** here" in pane
    assert "shit" not in pane and "FUCK" not in pane
    settings.set(Keys.MASK_PROFANITY, False)
    win.apply_text_mask()
    pane = win.transcript_view.toPlainText()
    assert "oh shit Scunthorpe classic FUCK cocktail" in pane and "recovered shit here" in pane


def test_remasking_the_pane_keeps_the_readers_selection_and_new_runs(qtbot):
    from PySide6.QtGui import QTextCursor

    from captioner.ui.transcript_view import TranscriptView

    view = TranscriptView()
    qtbot.addWidget(view)
    view.show_segment(Segment("You", 0.0, 1.0, " first line"))
    view.show_segment(Segment("You", 1.0, 2.0, " what the fuck"))
    view.begin_run()  # a second run: its lines follow the separator
    view.show_segment(Segment("You", 0.0, 1.0, " shit again"))
    cursor = view.editor.textCursor()
    second = view.editor.document().findBlockByNumber(1).position()
    cursor.setPosition(second)
    cursor.setPosition(second + len("[0:01] You: what"), QTextCursor.MoveMode.KeepAnchor)
    view.editor.setTextCursor(cursor)  # the reader selected the start of the line that changes
    view.set_mask(ProfanityFilter())
    assert view.toPlainText().splitlines() == [
        "[0:00] You: first line", "[0:01] You: what the f***", "— new session —", "[0:00] You: s*** again"]
    assert view.editor.textCursor().selectedText() == "[0:01] You: what"
    view.set_mask(None)
    assert view.toPlainText().splitlines()[1] == "[0:01] You: what the fuck"
