"""Sound captions in the window (issue 49): the caption model, the overlay, the transcript pane, the
Settings checkbox and the run's configuration, offscreen, from scripted events."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextCursor

from captioner.engine.sound_captions import OFF, ON
from captioner.events import SoundEvent, TextDelta, TurnBoundary
from captioner.transcript.segment import Segment
from captioner.ui.caption_model import CaptionModel, sound_caption
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.settings import Keys, sound_options
from captioner.ui.settings_dialog import SettingsDialog
from captioner.ui.transcript_view import TranscriptView

pytestmark = pytest.mark.gui


def fin(text, src="Meeting", t=0.0, speaker=""):
    return TextDelta(text, t, t + 0.1, True, src, speaker=speaker)


def test_sound_caption_text():
    assert sound_caption("music") == "\u266a [music]"
    assert sound_caption("phone ringing") == "[phone ringing]"
    assert sound_caption(" [siren] ") == "[siren]" and sound_caption("") == ""


def test_the_model_puts_a_sound_on_its_own_line_above_the_words_being_said():
    m = CaptionModel(history=5, show_labels=False, speaker_labels="change")
    m.apply(fin("Hello", speaker="Speaker 1"))
    assert m.apply(SoundEvent(0.5, 1.94, "music", 0.9, "Meeting"))
    m.apply(fin(" there", t=0.6, speaker="Speaker 1"))
    assert [(ln.text, ln.closed, bool(ln.sound)) for ln in m.lines] == [
        ("\u266a [music]", True, True), ("Speaker 1: Hello there", False, False)]
    m.apply(TurnBoundary(1.0, source="Meeting"))
    m.apply(fin("More", t=2.0, speaker="Speaker 1"))
    m.apply(TurnBoundary(2.5, source="Meeting"))
    m.apply(SoundEvent(3.0, 4.44, "dog barking", 0.9, "Meeting"))
    m.apply(fin("Again", t=5.0, speaker="Speaker 1"))
    # a sound between two lines of one speaker does not label the second line again
    assert [ln.text for ln in m.lines][-3:] == ["More", "[dog barking]", "Again"]
    # a sound after a finished sentence comes after it; the next words start below it
    m.apply(fin(" Done.", t=5.2, speaker="Speaker 1"))
    m.apply(SoundEvent(5.4, 6.84, "phone ringing", 0.9, "Meeting"))
    m.apply(fin("Sorry.", t=7.0, speaker="Speaker 1"))
    assert [(ln.text, ln.closed) for ln in m.lines][-3:] == [
        ("Again Done.", True), ("[phone ringing]", True), ("Sorry.", False)]
    m.set_mask(lambda s: "#" * len(s))
    assert m.lines[-2].text == "[phone ringing]" and m.lines[-4].text == "[dog barking]"  # never masked


@pytest.fixture
def overlay(qtbot, settings):
    settings.set(Keys.OVERLAY_LINES, 2)
    settings.set(Keys.OVERLAY_FONT_SIZE, 20)
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.setGeometry(50, 50, 400, ov.preferred_height())
    ov.show()
    return ov


def test_overlay_shows_the_sound_in_one_row_over_a_long_turn(overlay):
    overlay.apply_event(fin(" ".join(f"word{i}" for i in range(30))))
    overlay.apply_event(TextDelta(" and", 0.1, 0.2, False, "Meeting"))  # still speaking
    assert len(overlay.visible_lines()) == 2 and "[music]" not in overlay.visible_text()
    overlay.apply_event(SoundEvent(1.0, 2.44, "music", 0.9, "Meeting"))
    shown = overlay.visible_lines()
    assert shown[0].text == "Meeting: \u266a [music]"  # one row, above the newest words
    assert "word29" in shown[1].text  # the words being said keep the bottom row
    # drawn italic: the sound's layout has an italic format over its text
    layout, _, line = overlay._shown[0]
    assert line.sound == "music"
    assert any(r.format.fontItalic() and r.start == len(line.shown_label) for r in layout.formats())
    overlay.grab()  # paints (word images of kind 3) without error


def test_a_one_line_overlay_keeps_the_words_being_said(overlay):
    overlay.settings.set(Keys.OVERLAY_LINES, 1)
    overlay.apply_settings()
    overlay.apply_event(fin("hello"))
    overlay.apply_event(TextDelta(" there", 0.1, 0.2, False, "Meeting"))  # still speaking
    overlay.apply_event(SoundEvent(1.0, 2.44, "siren", 0.9, "Meeting"))
    assert overlay.visible_text() == "Meeting: hello there"
    overlay.apply_event(fin(" there", t=0.1))
    overlay.apply_event(TurnBoundary(2.0, source="Meeting"))
    overlay.apply_event(SoundEvent(3.0, 4.44, "applause", 0.9, "Meeting"))
    assert overlay.visible_text() == "Meeting: [applause]"  # nothing being said: the sound is the newest line


@pytest.fixture
def view(qtbot):
    v = TranscriptView()
    qtbot.addWidget(v)
    v.resize(500, 300)
    v.show()
    return v


def _italic(view, block_number: int) -> bool:
    block = view.editor.document().findBlockByNumber(block_number)
    cursor = QTextCursor(block)
    cursor.setPosition(block.position() + 3)
    return cursor.charFormat().fontItalic()


def test_pane_shows_a_sound_line_in_italics_and_announces_it(view):
    said = []
    view.announcer.line_finished = lambda label, text: said.append((label, text))
    view.apply_event(fin(" half a sentence"))
    view.show_segment(Segment("Meeting", 0.0, 1.0, " Good morning.", True, "semantic"))
    view.show_segment(Segment("Meeting", 65.0, 66.44, "[music]", False, "sound", "", "music"))
    view.show_segment(Segment("Meeting", 65.0, 66.44, "[music]", False, "sound", "", "music"))  # once
    view.show_segment(Segment("Meeting", 67.0, 68.0, " And on.", True, "semantic"))
    assert view.toPlainText().splitlines() == [
        "[0:00] Meeting: Good morning.", "[1:05] Meeting: \u266a [music]", "[1:07] Meeting: And on."]
    assert [_italic(view, i) for i in range(3)] == [False, True, False]
    assert said[1] == ("Meeting", "[music]")
    assert "[music]" in view.editor.document().toPlainText()  # what assistive technology reads


def test_window_routes_a_sound_to_the_overlay_and_the_pane(make_window):
    win, _ = make_window()
    win.recorder.begin("fake", ["talk.wav"])
    win._on_event(TextDelta("hello", 0.0, 0.5, True, "talk.wav"))
    win._on_event(SoundEvent(0.2, 1.64, "phone ringing", 0.9, "talk.wav"))
    assert "[phone ringing]" in win.overlay.visible_text()
    assert "[phone ringing]" in win.transcript_view.toPlainText()
    assert [(s.sound, s.is_open) for s in win.recorder.transcript.segments] == [("", True), ("phone ringing", False)]
    assert win.live_text() == "<b>talk.wav:</b> hello"  # the open line under the pane is untouched


def test_settings_checkbox_is_on_by_default_and_reaches_the_next_start(qtbot, settings, make_window):
    assert sound_options(settings) == ON
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    box = dialog.caption_sounds
    assert box.isChecked() and box.accessibleName() == "Caption sounds"
    assert box.text().replace("&", "") == "Caption sounds (music, ringing, sirens, applause, ...)"
    box.setChecked(False)
    assert dialog.apply()
    assert settings.get(Keys.SOUNDS_ENABLED) is False and sound_options(settings) == OFF
    win, _ = make_window()
    assert win.build_config().sounds == OFF
    settings.set(Keys.SOUNDS_ENABLED, True)
    assert win.build_config().sounds == ON


def test_settings_checkbox_does_not_split_the_masking_rows(qtbot, settings):
    """It sat between "Mask offensive words" and its "Also mask:" / "Never mask:" fields, which then
    read as options of the sound captions (found by hand, issue 49)."""
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    from PySide6.QtWidgets import QFormLayout

    form = next(f for f in dialog.findChildren(QFormLayout) if f.indexOf(dialog.mask_profanity) >= 0)
    row = {name: form.getWidgetPosition(getattr(dialog, name))[0]
           for name in ("mask_profanity", "profanity_extra", "profanity_allowed", "caption_sounds")}
    assert row["profanity_extra"] == row["mask_profanity"] + 1
    assert row["profanity_allowed"] == row["mask_profanity"] + 2
    assert row["caption_sounds"] == row["profanity_allowed"] + 1


def test_the_continuous_transcript_and_the_saved_runs_keep_the_sound(qtbot, tmp_path):
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.session_model import combine

    rec = TranscriptRecorder(tmp_path / "journals")
    rec.begin("fake", ["You"], autosave_dir=str(tmp_path))
    closed = []
    rec.segment_closed.connect(closed.append)
    rec.add(TextDelta("hello there.", 0.0, 1.0, True, "You"))
    rec.add(SoundEvent(0.5, 1.94, "doorbell", 0.9, "You"))
    assert [s.sound for s in closed] == ["doorbell"]  # shown in the pane at once
    rec.add(TurnBoundary(1.2, "turn", 1.0, "You"))
    rec.write_autosave()
    assert rec.autosave_path.read_text(encoding="utf-8") == "[00:00:00] hello there.\n[00:00:00] [doorbell]\n"
    both = combine([rec.transcript, rec.transcript])  # Save of two runs: the sound stays a sound
    assert [(s.text, s.sound) for s in both.segments if s.sound] == [("[doorbell]", "doorbell")] * 2
    rec.end()
