"""Speaker labels in the desktop app (issue 38): pane, rename, Save, journal, overlay, Settings.

Events with speakers go through the window's own event path (``MainWindow._on_event``: the
recorder first, then the overlay and the pane), as the engine's queued signal delivers them.
"""

from __future__ import annotations

import srt
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from captioner.events import TextDelta, TurnBoundary
from captioner.speakers.options import AUTO, OFF, SpeakerOptions
from captioner.transcript import recover
from captioner.ui.caption_model import CaptionModel
from captioner.ui.settings import Keys, Settings, speaker_options
from captioner.ui.settings_dialog import SettingsDialog
from captioner.ui.speaker_labels import SpeakerLabels


def begin(win, sources=("Meeting", "You")) -> None:
    """What Start does for the views, without an engine: a new run, its transcript and journal."""
    win.session.begin_run("fake", list(sources), None)
    win.overlay.clear()
    win.transcript_view.begin_run()
    win.speaker_labels.begin_run(win.recorder.transcript)


def say(win, text, start, speaker="", source="Meeting", turn=True) -> None:
    win._on_event(TextDelta(" " + text, start, start + 0.8, True, source, speaker=speaker))
    if turn:
        win._on_event(TurnBoundary(start + 1.0, source=source))


def meeting(win) -> None:
    begin(win)
    say(win, "Hello everyone.", 0.0, "Speaker 1")
    say(win, "Hi there.", 2.0, "Speaker 2", turn=False)
    say(win, "Shall we start?", 3.0, "Speaker 1")  # another voice inside one turn: a line of its own
    say(win, "Me too.", 5.0, source="You")  # the microphone: never attributed
    say(win, "Yes.", 7.0, "Speaker 2")


PANE = ["[0:00] Speaker 1: Hello everyone.", "[0:02] Speaker 2: Hi there.", "[0:03] Speaker 1: Shall we start?",
        "[0:05] You: Me too.", "[0:07] Speaker 2: Yes."]


def test_each_pane_line_starts_with_its_speaker_or_source(make_window):
    win, _ = make_window()
    meeting(win)
    assert win.transcript_view.toPlainText().splitlines() == PANE


def test_rename_changes_past_lines_the_overlay_save_and_the_journal(make_window, tmp_path, monkeypatch):
    win, _ = make_window()
    meeting(win)
    monkeypatch.setattr(SpeakerLabels, "ask_name", lambda self, speaker, current: "Ann")
    view = win.transcript_view
    cursor = view.editor.textCursor()
    cursor.setPosition(view.editor.document().findBlockByNumber(4).position())  # the caret on "Yes."
    view.editor.setTextCursor(cursor)
    win.speaker_labels.rename_key.activated.emit()  # what F2 on the pane does
    assert view.toPlainText().splitlines() == [PANE[0], "[0:02] Ann: Hi there.", PANE[2], PANE[3], "[0:07] Ann: Yes."]
    assert [ln.text for ln in win.overlay.model.lines if ln.speaker == "Speaker 2"] == ["Ann: Hi there.", "Ann: Yes."]
    say(win, "And later.", 9.0, "Speaker 2")  # future lines take the name too
    assert view.toPlainText().splitlines()[-1] == "[0:09] Ann: And later."
    assert win.session.has_unsaved()
    out = win.save_transcript(str(tmp_path / "meeting.srt"))
    cues = [c.content for c in srt.parse(out.read_text(encoding="utf-8"))]
    assert cues[1] == "Ann: Hi there." and cues[0] == "Speaker 1: Hello everyone."
    assert not any("Speaker 2" in c for c in cues)
    assert win.recorder.live.flush() is None
    assert recover(win.recorder.journal_path).speaker_name("Speaker 2") == "Ann"  # the journal keeps the rename


def test_double_click_on_a_label_renames_and_elsewhere_does_not(make_window, monkeypatch):
    win, _ = make_window()
    meeting(win)
    asked = []
    monkeypatch.setattr(SpeakerLabels, "ask_name", lambda self, speaker, current: asked.append(speaker) or "Bo")
    ed = win.transcript_view.editor
    block = ed.document().findBlockByNumber(0)  # "[0:00] Speaker 1: Hello everyone."
    cursor = ed.textCursor()
    cursor.setPosition(block.position() + len("[0:00] Spea"))
    on_label = ed.cursorRect(cursor).center()
    cursor.setPosition(block.position() + len("[0:00] Speaker 1: Hello ev"))
    on_text = ed.cursorRect(cursor).center()
    QTest.mouseDClick(ed.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, on_text)
    assert asked == []  # a double-click in the text selects a word, as before
    QTest.mouseDClick(ed.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, on_label)
    assert asked == ["Speaker 1"]
    lines = win.transcript_view.toPlainText().splitlines()
    assert lines[0] == "[0:00] Bo: Hello everyone." and lines[2] == "[0:03] Bo: Shall we start?"
    assert not win.speaker_labels.request_rename(3)  # "You": no speaker to rename


def test_overlay_labels_a_change_by_default_and_every_line_when_asked(make_window, settings):
    win, _ = make_window()
    begin(win)
    say(win, "one", 0.0, "Speaker 1")
    say(win, "two", 2.0, "Speaker 1")
    say(win, "three", 4.0, "Speaker 2")
    say(win, "four", 6.0, "Speaker 2", turn=False)
    assert [ln.text for ln in win.overlay.model.lines] == ["Speaker 1: one", "two", "Speaker 2: three", "four"]
    assert win.overlay.visible_text().splitlines() == ["Speaker 2: three", "four"]  # two caption lines
    settings.set(Keys.OVERLAY_SPEAKER_LABELS, "every")
    win.overlay.apply_settings()
    assert [ln.text for ln in win.overlay.model.lines] == [
        "Speaker 1: one", "Speaker 1: two", "Speaker 2: three", "Speaker 2: four"]
    settings.set(Keys.OVERLAY_SPEAKER_LABELS, "off")
    win.overlay.apply_settings()
    assert [ln.text for ln in win.overlay.model.lines] == ["Meeting: one", "Meeting: two", "Meeting: three", "Meeting: four"]


def test_caption_model_splits_a_line_at_a_change_of_voice_and_guesses_partials():
    model = CaptionModel(history=5)
    model.apply(TextDelta(" hello", 0.0, 0.5, True, "Meeting", speaker="Speaker 1"))
    model.apply(TextDelta(" still me", 0.5, 0.9, False, "Meeting"))  # a partial: no speaker yet
    model.apply(TextDelta(" hi", 1.0, 1.5, True, "Meeting", speaker="Speaker 2"))
    assert [ln.text for ln in model.lines] == ["Speaker 1: hello", "Speaker 2: hi"]
    model.apply(TurnBoundary(2.0, source="Meeting"))
    model.apply(TextDelta(" and", 2.1, 2.3, False, "Meeting"))  # opens with the source's last voice: no label
    assert model.lines[-1].text == "and"
    model.apply(TextDelta(" and so", 2.1, 2.6, True, "Meeting", speaker="Speaker 1"))  # it was Speaker 1
    assert model.lines[-1].text == "Speaker 1: and so"
    model.speaker_name = {"Speaker 1": "Ann"}.get
    model.relabel()
    assert [ln.text for ln in model.lines] == ["Ann: hello", "Speaker 2: hi", "Ann: and so"]


def test_settings_persist_list_speakers_and_reach_the_engine(make_window, settings, qtbot):
    win, _ = make_window()
    assert speaker_options(settings) == AUTO and settings.get(Keys.OVERLAY_SPEAKER_LABELS) == "change"
    meeting(win)
    dialog = SettingsDialog(settings, win, speakers=win.speaker_labels)
    qtbot.addWidget(dialog)
    box = dialog.speakers
    assert [speaker for _, speaker, _ in box.names] == ["Speaker 1", "Speaker 2"]
    assert not box.max_speakers.isEnabled()
    box.mode.setCurrentIndex(box.mode.findData("max"))
    assert box.max_speakers.isEnabled()
    box.max_speakers.setValue(3)
    box.overlay_mode.setCurrentIndex(box.overlay_mode.findData("every"))
    box.names[0][2].setText("Cleo")
    assert dialog.apply()
    assert win.transcript_view.toPlainText().splitlines()[0] == "[0:00] Cleo: Hello everyone."
    again = Settings.from_file(settings.store.fileName())  # what the next start of the app reads
    assert again.get(Keys.SPEAKER_MODE) == "max" and again.get(Keys.SPEAKER_MAX) == 3
    assert again.get(Keys.OVERLAY_SPEAKER_LABELS) == "every"
    assert speaker_options(again) == SpeakerOptions(True, 3)
    assert win.build_config().speakers == SpeakerOptions(True, 3)
    settings.set(Keys.SPEAKER_MODE, "off")
    assert win.build_config().speakers == OFF


def test_the_chosen_speakers_reach_live_captioner(make_window, settings, qtbot, monkeypatch):
    import captioner.engine.live as live
    from captioner.engine.qt_worker import default_pipeline_factory

    made = {}

    class Recording:
        def __init__(self, backend, sources, on_event, **kw):
            made.update(kw)

    monkeypatch.setattr(live, "LiveCaptioner", Recording)
    default_pipeline_factory(None, [], print, turns=None, speakers=SpeakerOptions(True, 2))
    assert made["speakers"] == SpeakerOptions(True, 2)
    # and through a real Start: the worker hands the config's speakers to a factory that takes them
    win, record = make_window()
    worker = win.controller.worker
    plain = worker.pipeline_factory
    seen = []

    def with_speakers(backend, sources, on_event, turns=None, speakers=None):
        seen.append(speakers)
        return plain(backend, sources, on_event, turns)

    worker.pipeline_factory = with_speakers
    settings.set(Keys.SPEAKER_MODE, "max")
    settings.set(Keys.SPEAKER_MAX, 5)
    win.start_button.click()
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert seen == [SpeakerOptions(True, 5)]
    win.start_button.click()
    qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=5000)


def test_two_runs_saved_together_keep_each_runs_names(make_window, tmp_path):
    win, _ = make_window()
    begin(win)
    say(win, "first run", 0.0, "Speaker 1")
    first = win.recorder.transcript
    win.session.end_run()
    begin(win)
    say(win, "second run", 0.0, "Speaker 1")
    win.session.end_run()
    win.speaker_labels.rename(first, "Speaker 1", "Ann")
    lines = win.transcript_view.toPlainText().splitlines()
    assert lines == ["[0:00] Ann: first run", "— new session —", "[0:00] Speaker 1: second run"]
    out = win.save_transcript(str(tmp_path / "both.srt"))
    assert [c.content for c in srt.parse(out.read_text(encoding="utf-8"))] == [
        "Ann: first run", "Speaker 1: second run"]


def test_the_live_line_under_the_pane_names_the_open_texts_speaker(make_window):
    win, _ = make_window()
    begin(win)
    say(win, "not finished", 0.0, "Speaker 2", turn=False)
    assert win.live_text().startswith("<b>Speaker 2:</b> not finished")
    win.speaker_labels.rename(win.recorder.transcript, "Speaker 2", "Dana")
    assert win.live_text().startswith("<b>Dana:</b> not finished")
    win.speaker_labels.rename(win.recorder.transcript, "Speaker 2", "")  # an empty name: back to the id
    assert win.live_text().startswith("<b>Speaker 2:</b>")


def test_the_autosaved_copy_has_the_names(make_window, tmp_path):
    win, _ = make_window()
    win.session.begin_run("fake", ["Meeting"], str(tmp_path))
    win.transcript_view.begin_run()
    win.speaker_labels.begin_run(win.recorder.transcript)
    say(win, "Hello everyone.", 0.0, "Speaker 1")
    say(win, "Hi.", 2.0, "Speaker 2")
    win.speaker_labels.rename(win.recorder.transcript, "Speaker 1", "Ann")
    win.recorder.write_autosave()
    assert win.recorder.autosave_path.read_text(encoding="utf-8").splitlines() == [
        "[00:00:00] Ann: Hello everyone.", "[00:00:02] Speaker 2: Hi."]
