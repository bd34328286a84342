"""How the window shows a source's capture state (stall, resume, switch, moved stream) and a gap."""

from __future__ import annotations

import pytest

from captioner.events import Notice, TextDelta, TurnBoundary

pytestmark = pytest.mark.gui

STALLED = ("System audio 'meeting.monitor' has delivered no audio for 1.0 s: the device is still there "
           "(suspended or idle). The session is kept and captioning resumes when audio returns.")
RESUMED = "System audio 'meeting.monitor' is delivering audio again; captioning goes on."
SWITCHED = "System audio now follows the default output 'headset' ('headset.monitor', was 'meeting.monitor')."


def _running(make_window):
    win, _record = make_window()
    win.engine_state = "running"  # as after _on_started (the fake run itself is not needed here)
    win.run_bar.set_status("Captioning")
    return win


def test_resume_replaces_the_stall_and_the_status_follows(make_window):
    win = _running(make_window)
    win._on_event(Notice(STALLED, "warning", "stalled", "Meeting"))
    assert win.messages.messages() == [(STALLED, "warning", "capture:Meeting")]
    assert win.run_bar.status_label.text() == "Captioning; waiting for audio from Meeting"
    win._on_event(Notice(STALLED.replace("1.0 s", "1.2 s"), "warning", "stalled", "Meeting"))  # stalls again
    assert len(win.messages.messages()) == 1  # calm: one row per source, never a stack
    win._on_event(Notice(RESUMED, "info", "resumed", "Meeting"))
    assert win.messages.messages() == [(RESUMED, "info", "capture:Meeting")]  # the stall is gone
    assert win.run_bar.status_label.text() == "Captioning"


def test_a_switch_is_told_once_and_other_sources_keep_their_rows(make_window):
    win = _running(make_window)
    win._on_event(Notice(STALLED, "warning", "stalled", "Meeting"))
    win._on_event(Notice("The microphone has delivered no audio ...", "warning", "stalled", "You"))
    win._on_event(Notice(SWITCHED, "info", "source_switched", "Meeting"))
    win._on_event(Notice(SWITCHED, "info", "source_switched", "Meeting"))
    rows = win.messages.messages()
    assert [code for _, _, code in rows] == ["capture:You", "capture:Meeting"]
    assert rows[-1][0] == SWITCHED
    assert win.run_bar.status_label.text() == "Captioning; waiting for audio from You"


def test_a_gap_is_a_transcript_line_between_the_words_around_it(make_window):
    win = _running(make_window)
    win.session.begin_run("fake", ["Meeting"], None)
    win.transcript_view.begin_run()
    win._on_event(TextDelta("before the gap.", 0.0, 1.0, True, "Meeting"))
    win._on_event(TurnBoundary(1.0, "end_of_stream", 1.0, "Meeting"))
    win._on_event(Notice("No audio from Meeting between 0:01.0 and 0:05.9 (4.9 s); the transcript's times continue "
                         "after the gap.", "info", "gap", "Meeting"))
    win._on_event(TextDelta("after it.", 5.9, 7.0, True, "Meeting"))
    win._on_event(TurnBoundary(7.0, "end_of_stream", 1.0, "Meeting"))
    lines = win.transcript_view.toPlainText().splitlines()
    assert lines == ["[0:00] Meeting: before the gap.",
                     "[0:01] — no audio from Meeting until 0:05 (4.9 s) —",
                     "[0:05] Meeting: after it."], lines
    assert win.messages.messages() == []  # told in the pane, not again in the message bar
    segs = win.recorder.transcript.segments  # what Save writes: two cues at their true times
    assert [(s.start, s.end) for s in segs] == [(0.0, 1.0), (5.9, 7.0)]


def test_stop_clears_a_waiting_stall(make_window, qtbot):
    from ui_fakes import run_and_stop

    win, record = make_window()
    run_and_stop(qtbot, win, record)
    win.engine_state = "running"
    win._on_event(Notice(STALLED, "warning", "stalled", "Meeting"))
    win._on_stopped()
    assert win.messages.messages() == [] and win.run_bar.status_label.text() == "Stopped"
