"""Issue 13, bugs 1 and 4: Save writes what the pane shows -- every run of the window, recovered
text included -- "unsaved" stays true until that text is on disk, and there is nothing to save
before anything was captioned."""

from __future__ import annotations

import json

import pytest
import srt
from ui_fakes import run_and_stop, speech

from captioner.events import TextDelta, TurnBoundary
from captioner.transcript import LiveTranscript, find_unfinished

pytestmark = pytest.mark.gui

FIRST = ["alpha", "bravo", "charlie"]
SECOND = ["delta", "echo", "foxtrot"]


@pytest.fixture
def two_files(make_window, tmp_path):
    win, record = make_window(files={"one.wav": speech(FIRST), "two.wav": speech(SECOND)})
    return win, record, tmp_path


def _caption_both(qtbot, win, record, tmp_path):
    run_and_stop(qtbot, win, record)
    win.sources.file_edit.setText(str(tmp_path / "two.wav"))
    run_and_stop(qtbot, win, record)
    pane = win.transcript_view.toPlainText()
    assert "] alpha bravo charlie" in pane and "] delta echo foxtrot" in pane  # no file names (issue 39)
    assert "— new session —" in pane


def test_save_writes_every_run_the_pane_shows(two_files, qtbot):
    win, record, tmp_path = two_files
    _caption_both(qtbot, win, record, tmp_path)
    assert win.save_transcript(str(tmp_path / "both.txt")) is not None
    text = (tmp_path / "both.txt").read_text(encoding="utf-8")
    assert "alpha bravo charlie" in text and "delta echo foxtrot" in text
    assert text.index("alpha") < text.index("delta")  # in the pane's order
    assert not win.has_unsaved_text()


def test_subtitles_of_several_runs_keep_going_forward(two_files, qtbot):
    win, record, tmp_path = two_files
    _caption_both(qtbot, win, record, tmp_path)
    assert win.save_transcript(str(tmp_path / "both.srt")) is not None
    cues = list(srt.parse((tmp_path / "both.srt").read_text(encoding="utf-8")))
    words = " ".join(c.content for c in cues).split()
    assert [w for w in words if w in FIRST + SECOND] == FIRST + SECOND
    starts = [c.start for c in cues]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # the second run follows the first
    assert win.save_transcript(str(tmp_path / "both.json")) is not None
    doc = json.loads((tmp_path / "both.json").read_text(encoding="utf-8"))
    assert " ".join(s["text"] for s in doc["segments"]).split() == FIRST + SECOND


def test_quit_with_save_saves_every_run(two_files, qtbot, monkeypatch):
    win, record, tmp_path = two_files
    _caption_both(qtbot, win, record, tmp_path)
    target = tmp_path / "kept.txt"
    monkeypatch.setattr(win, "ask_unsaved", lambda: "save")
    monkeypatch.setattr(win, "save_dialog", lambda: win.save_transcript(str(target)))
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.request_quit()
    text = target.read_text(encoding="utf-8")
    assert "alpha bravo charlie" in text and "delta echo foxtrot" in text


def _crash_journal(tmp_path):
    live, _ = LiveTranscript.start(tmp_path / "journal", backend="default", sources=["You"])
    live.add(TextDelta("we lost power", 0.0, 1.0, True, "You"))
    live.add(TurnBoundary(1.0, source="You"))  # never closed: the app "crashed"
    return live.journal.path


def test_recover_then_start_then_save_keeps_the_recovered_lines(make_window, qtbot, tmp_path):
    journal = _crash_journal(tmp_path)
    win, record = make_window()
    assert win.check_recovery()
    win.messages.rows[-1].buttons["Recover"].click()
    assert "You: we lost power" in win.transcript_view.toPlainText()
    assert "recovered" in [m[2] for m in win.messages.messages()]
    # recovered but not on disk yet: still offered after a crash now, and quitting asks
    assert journal in find_unfinished(tmp_path / "journal")
    assert win.has_unsaved_text()
    run_and_stop(qtbot, win, record)
    assert win.has_unsaved_text()
    assert win.save_transcript(str(tmp_path / "all.txt")) is not None
    text = (tmp_path / "all.txt").read_text(encoding="utf-8")
    assert "we lost power" in text and "alpha bravo charlie delta echo" in text
    assert text.index("we lost power") < text.index("alpha")
    # on disk now: the banner that said "Use Save as… to keep it" is gone, the journal is handled
    assert "recovered" not in [m[2] for m in win.messages.messages()]
    assert journal not in find_unfinished(tmp_path / "journal")
    assert not win.has_unsaved_text()


def test_a_failed_save_keeps_the_text_unsaved(two_files, qtbot):
    win, record, tmp_path = two_files
    _caption_both(qtbot, win, record, tmp_path)
    assert win.save_transcript(str(tmp_path / "missing-folder" / "x" / "t.docx")) is None
    assert win.has_unsaved_text()


def test_an_autosaved_run_does_not_make_an_earlier_run_saved(two_files, qtbot):
    win, record, tmp_path = two_files
    run_and_stop(qtbot, win, record)  # not written anywhere
    folder = tmp_path / "auto"
    folder.mkdir()
    win.save_panel.autosave_check.setChecked(True)
    win.save_panel.autosave_edit.setText(str(folder))
    win.sources.file_edit.setText(str(tmp_path / "two.wav"))
    run_and_stop(qtbot, win, record)
    assert win.has_unsaved_text()  # the first run is still only in the window and its journal


def test_nothing_captioned_means_nothing_to_save(make_window, qtbot, tmp_path):
    win, record = make_window()
    assert not win.save_panel.save_button.isEnabled() and not win.save_action.isEnabled()
    target = tmp_path / "empty.txt"
    assert win.save_transcript(str(target)) is None
    assert not target.exists()  # no 0-byte file
    text, severity, code = win.messages.messages()[-1]
    assert "nothing to save" in text.lower() and code == "save" and severity == "info"
    run_and_stop(qtbot, win, record)
    assert win.save_panel.save_button.isEnabled() and win.save_action.isEnabled()


def test_a_failed_start_leaves_no_journal_file(make_window, qtbot, tmp_path):
    win, record = make_window()

    def unplugged(specs, backend):
        raise OSError("unplugged")

    win.controller.worker.source_factory = unplugged
    with qtbot.waitSignal(win.controller.stopped, timeout=5000):
        win.start_button.click()
    qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=5000)
    assert list((tmp_path / "journal").glob("*")) == []
    assert not win.save_panel.save_button.isEnabled()


def test_recovered_text_thrown_away_at_quit_is_not_offered_again(make_window, qtbot, tmp_path, monkeypatch):
    journal = _crash_journal(tmp_path)
    win, _ = make_window()
    win.recover(journal)
    monkeypatch.setattr(win, "ask_unsaved", lambda: "discard")
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.request_quit()
    assert journal not in find_unfinished(tmp_path / "journal")


def test_recovered_text_survives_a_programmatic_close(make_window, qtbot, tmp_path):
    journal = _crash_journal(tmp_path)
    win, _ = make_window()
    win.recover(journal)
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.close()  # SIGTERM / scripts: no question, nothing on disk: offered again next time
    assert journal in find_unfinished(tmp_path / "journal")
