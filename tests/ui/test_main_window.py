"""MainWindow with a fake engine: Start/Stop keeps the last words, Save writes 4 formats, errors, recovery."""

from __future__ import annotations

import json

import pytest
import srt
import webvtt
from ui_fakes import fake_factories, run_and_stop, speech, write_wav

from captioner.engine.qt_controller import EngineController
from captioner.engine.qt_worker import EngineWorker
from captioner.events import Stats, TextDelta, TurnBoundary
from captioner.transcript import LiveTranscript
from captioner.ui.main_window import MainWindow
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.recorder import TranscriptRecorder
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui

WORDS = ["alpha", "bravo", "charlie", "delta", "echo"]


def test_start_stop_keeps_the_last_word(make_window, qtbot):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    text = win.recorder.transcript.text()
    assert text.split() == WORDS  # "echo" came out only through Stop's flush
    pane = win.transcript_view.toPlainText()
    # a file source's line starts with no file name (issue 39: read before every line)
    assert "[0:00] alpha bravo charlie delta echo" in pane and "talk" not in pane
    assert "echo" in win.overlay.visible_text()
    assert win.start_button.text() == "Start" and win.sources.mode_combo.isEnabled()


def test_save_writes_all_four_formats(make_window, qtbot, tmp_path):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    out = tmp_path / "out"
    out.mkdir()
    for fmt in ("txt", "srt", "vtt", "json"):
        assert win.save_transcript(str(out / f"t.{fmt}")) is not None
    assert "alpha bravo charlie delta echo" in (out / "t.txt").read_text(encoding="utf-8")
    subs = list(srt.parse((out / "t.srt").read_text(encoding="utf-8")))
    assert " ".join(s.content for s in subs).split()[-1] == "echo"
    assert [c.text for c in webvtt.read(str(out / "t.vtt"))]
    data = json.loads((out / "t.json").read_text(encoding="utf-8"))
    assert "echo" in json.dumps(data)
    assert win.messages.messages()[-1][2] == "save"


def test_save_error_is_a_message(make_window, qtbot, tmp_path):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    assert win.save_transcript(str(tmp_path / "t.docx")) is None
    text, severity, code = win.messages.messages()[-1]
    assert (severity, code) == ("error", "save") and "Traceback" not in text


def test_engine_error_shows_message_and_gui_stays_responsive(make_window, qtbot):
    win, record = make_window(fail_at=3)
    with qtbot.waitSignal(win.messages.shown, timeout=5000) as blocker:
        win.start_button.click()
    text, severity, code = blocker.args
    assert severity == "error" and "Traceback" not in text and "Start" in text
    qtbot.waitUntil(lambda: win.engine_state == "idle" and win.start_button.text() == "Start", timeout=5000)
    # the window still works: a new run (same loaded model) starts, and Stop keeps its words
    run_and_stop(qtbot, win, record)
    assert win.recorder.transcript.text().split() == WORDS


def test_missing_file_is_a_usage_message_not_a_start(make_window, qtbot, settings):
    win, record = make_window()
    win.sources.file_edit.setText("/nonexistent/talk.wav")
    win.start_button.click()
    assert win.messages.messages()[-1][2] == "config"
    assert win.engine_state == "idle" and not record["pipelines"]


def test_backlog_warning_comes_and_goes(make_window):
    win, _ = make_window()
    win._on_event(Stats(rtf=1.4, backlog_s=9.0, source="talk.wav"))
    assert [m[2] for m in win.messages.messages()] == ["backlog"]
    assert win.run_bar.stats_label.text() == "9 s behind" and "1.40" in win.run_bar.stats_label.toolTip()
    win._on_event(Stats(rtf=0.5, backlog_s=0.2, source="talk.wav"))
    assert win.messages.messages() == []


def test_crash_journal_is_offered_for_recovery(make_window, qtbot, tmp_path):
    live, _ = LiveTranscript.start(tmp_path / "journal", backend="default", sources=["You"])
    live.add(TextDelta("we lost power", 0.0, 1.0, True, "You"))
    live.add(TurnBoundary(1.0, source="You"))  # never closed: the app "crashed"
    win, _ = make_window()
    assert win.check_recovery()
    row = win.messages.rows[-1]
    assert row.code == "recovery"
    row.buttons["Recover"].click()
    assert "You: we lost power" in win.transcript_view.toPlainText()
    assert win.session.runs[-1].transcript.text() == "we lost power"
    assert not win.check_recovery()  # loaded: not offered twice


def test_clock_and_delay_pickers(make_window):
    win, _ = make_window()
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData("audio8"))
    assert win.model_panel.clock_combo.isEnabled() and win.model_panel.language_combo.isEnabled()
    win.model_panel.clock_combo.setCurrentIndex(win.model_panel.clock_combo.findData(120))
    delays = [win.model_panel.delay_combo.itemData(i) for i in range(win.model_panel.delay_combo.count())]
    assert delays[0] == 240 and all(d % 120 == 0 for d in delays)
    starred = [win.model_panel.delay_combo.itemData(i) for i in range(win.model_panel.delay_combo.count()) if "★" in win.model_panel.delay_combo.itemText(i)]
    assert starred == [240, 480]  # model card post-trained points at 120 ms
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData("default"))
    assert not win.model_panel.language_combo.isEnabled() and win.model_panel.language_combo.currentData() == "en"


@pytest.mark.parametrize("backend, shown", [("default", False), ("tflite", False), ("audio8", True),
                                             ("remote", True)])
def test_clock_and_delay_show_only_for_backends_with_a_clock(make_window, backend, shown):
    win, _ = make_window()
    win.model_panel.backend_combo.setCurrentIndex(win.model_panel.backend_combo.findData(backend))
    for wdg in (win.model_panel.clock_label, win.model_panel.clock_combo, win.model_panel.delay_label, win.model_panel.delay_combo):
        assert wdg.isVisible() is shown
    assert win.model_panel.language_combo.isVisible()


def test_autosave_folder_gets_the_transcript(make_window, qtbot, tmp_path):
    win, record = make_window()
    folder = tmp_path / "captions"
    folder.mkdir()
    win.save_panel.autosave_check.setChecked(True)
    win.save_panel.autosave_edit.setText(str(folder))
    run_and_stop(qtbot, win, record)
    files = list(folder.glob("captions_*.txt"))
    assert len(files) == 1
    assert "alpha bravo charlie delta echo" in files[0].read_text(encoding="utf-8")


def test_model_loads_off_the_gui_thread_with_progress(qtbot, settings, tmp_path):
    import threading

    release = threading.Event()
    bf, sf, pf, record = fake_factories({"talk.wav": speech(WORDS)})

    def slow_backend(config):
        assert threading.current_thread() is not threading.main_thread()
        release.wait(10)
        return bf(config)

    wav = tmp_path / "talk.wav"
    write_wav(wav)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    controller = EngineController(EngineWorker(slow_backend, sf, pf))
    overlay = CaptionOverlay(settings)
    qtbot.addWidget(overlay)
    win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp_path / "j"))
    qtbot.addWidget(win)
    win.show()
    try:
        win.start_button.click()
        # the GUI thread keeps running while the model "loads": progress shows, Cancel is offered
        qtbot.waitUntil(lambda: win.run_bar.progress.isVisible() and win.run_bar.status_label.text().startswith("Loading"), timeout=5000)
        assert win.start_button.text() == "Cancel"
        release.set()
        qtbot.waitUntil(lambda: win.start_button.text() == "Stop" and not win.run_bar.progress.isVisible(), timeout=5000)
    finally:
        release.set()
        assert controller.shutdown(10000)


def test_tray_reflects_engine_state(qtbot, settings):
    from captioner.ui.tray import TrayIcon

    overlay = CaptionOverlay(settings)
    qtbot.addWidget(overlay)
    bf, sf, pf, _ = fake_factories({})
    win = MainWindow(settings, overlay, EngineController(EngineWorker(bf, sf, pf)))
    qtbot.addWidget(win)
    tray = TrayIcon(win, win.quit_action)
    try:
        tray.set_state("running")
        assert tray.start_action.text() == "Stop captions"
        tray.set_state("idle")
        assert tray.start_action.text() == "Start captions"
        assert win.overlay_action in tray.menu.actions()
    finally:
        assert win.controller.shutdown(10000)


def test_device_lost_notice_is_shown_and_text_is_kept(make_window, qtbot):
    from captioner.events import Notice

    win, record = make_window()
    run_and_stop(qtbot, win, record)
    before = win.transcript_view.toPlainText()
    win._on_event(Notice("The microphone was disconnected. Plug it back in or choose another one, then press Start.",
                         "error", "device_lost", "You"))
    text, severity, code = win.messages.messages()[-1]
    assert (severity, code) == ("error", "device_lost") and "Plug it back in" in text
    assert win.transcript_view.toPlainText() == before and win.recorder.transcript.text().split() == WORDS
    win._on_event(Notice("stopped", "info", "stopped"))  # the pipeline's end marker is not a message
    assert win.messages.messages()[-1][2] == "device_lost"


def test_long_sentence_then_turn_boundary_is_shown_once(make_window):
    """A sentence > 80 chars closes its segment; the TurnBoundary right after must not add a copy."""
    win, _ = make_window()
    win.recorder.begin("fake", ["You"])
    sentence = ("Today we will discuss the quarterly budget, the new hiring plan and the office move "
                "before lunch.")
    assert len(sentence) > 80
    win._on_event(TextDelta(sentence, 0.0, 6.0, True, "You"))
    win._on_event(TurnBoundary(6.2, source="You"))
    win._on_event(TextDelta(" Any questions?", 7.0, 8.0, True, "You"))
    win._on_event(TurnBoundary(8.2, source="You"))
    lines = win.transcript_view.toPlainText().splitlines()
    assert lines == [f"[0:00] You: {sentence}", "[0:07] You: Any questions?"]
    assert win.live_text() == ""


def test_a_segment_announced_again_updates_its_line(make_window):
    from captioner.transcript.segment import Segment

    win, _ = make_window()
    first = Segment("You", 1.0, 2.0, " hello there.", False, "sentence")
    win._on_segment(first)
    win._on_segment(Segment("You", 3.0, 4.0, " next one", True, "line"))
    win._on_segment(Segment("You", 1.0, 2.0, " hello there.", True, "line"))  # re-closed as a turn end
    assert win.transcript_view.toPlainText().splitlines() == ["[0:01] You: hello there.", "[0:03] You: next one"]


def test_failed_starts_add_no_session_separator(make_window, qtbot):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    before = win.transcript_view.toPlainText()
    worker = win.controller.worker
    working = worker.source_factory

    def unplugged(specs, backend):
        raise OSError("unplugged")

    worker.source_factory = unplugged  # the worker is idle between runs
    for _ in range(2):
        with qtbot.waitSignal(win.controller.stopped, timeout=5000):
            win.start_button.click()
    assert win.transcript_view.toPlainText() == before  # no empty "— new session —" lines
    worker.source_factory = working
    run_and_stop(qtbot, win, record)
    assert win.transcript_view.toPlainText().count("— new session —") == 1


def test_messages_replace_dedupe_and_are_capped(make_window):
    win, _ = make_window()
    bar = win.messages
    bar.show_message("Device lost.", "warning", "device_lost")
    bar.show_message("Device lost again.", "warning", "device_lost")
    assert [m[:3] for m in bar.messages()] == [("Device lost again.", "warning", "device_lost")]
    bar.show_message("Hello.", "info")
    bar.show_message("Hello.", "info")
    assert [m[0] for m in bar.messages()].count("Hello.") == 1
    for i in range(4):
        bar.show_message(f"Problem {i}.", "error", f"e{i}")
    assert len(bar.messages()) == bar.MAX_ROWS == 3
    assert [m[0] for m in bar.messages()] == ["Problem 1.", "Problem 2.", "Problem 3."]


def test_successful_start_clears_old_error_banners(make_window, qtbot):
    win, record = make_window()
    win._on_error("The audio device could not be used: gone.", "device_error")
    win.messages.show_message("Recover the old session?", "warning", "recovery")
    assert [m[2] for m in win.messages.messages()] == ["device_error", "recovery"]
    run_and_stop(qtbot, win, record)
    assert [m[2] for m in win.messages.messages()] == ["recovery"]


def test_window_is_resizable_and_the_transcript_keeps_room(make_window, qtbot):
    from captioner.ui.main_window import MIN_TRANSCRIPT_PX, MIN_WINDOW

    win, _ = make_window()
    assert (win.minimumWidth(), win.minimumHeight()) == MIN_WINDOW
    assert win.maximumWidth() > 2000 and win.maximumHeight() > 2000  # not a fixed size
    for i in range(5):
        win.messages.show_message(f"A long message number {i} that wraps over a line or two. " * 2, "warning",
                                  f"m{i}")
    win.resize(*MIN_WINDOW)
    qtbot.waitUntil(lambda: win.transcript_view.height() >= MIN_TRANSCRIPT_PX, timeout=2000)
    win.resize(1000, 900)
    qtbot.waitUntil(lambda: win.height() == 900, timeout=2000)


def test_quit_without_text_does_not_ask(make_window, qtbot, monkeypatch):
    win, _ = make_window()
    monkeypatch.setattr(win, "ask_unsaved", lambda: pytest.fail("asked although nothing was captioned"))
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.request_quit()


def test_quit_with_unsaved_text_asks_and_cancel_keeps_the_window(make_window, qtbot, monkeypatch, tmp_path):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    asked = []
    monkeypatch.setattr(win, "ask_unsaved", lambda: asked.append(win.recorder.journal_path) or "cancel")
    closed = []
    win.closed.connect(lambda: closed.append(True))
    assert not win.request_quit()
    assert len(asked) == 1 and win.isVisible() and not closed
    assert asked[0] is not None and asked[0].exists()  # the question names the journal file
    # Save: the dialog's file is written, then the window closes
    target = tmp_path / "kept.txt"
    monkeypatch.setattr(win, "ask_unsaved", lambda: "save")
    monkeypatch.setattr(win, "save_dialog", lambda: win.save_transcript(str(target)))
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.request_quit()
    assert "alpha bravo charlie delta echo" in target.read_text(encoding="utf-8")


def test_saved_text_quits_without_asking(make_window, qtbot, monkeypatch, tmp_path):
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    assert win.has_unsaved_text()
    assert win.save_transcript(str(tmp_path / "t.txt")) is not None
    assert not win.has_unsaved_text()
    monkeypatch.setattr(win, "ask_unsaved", lambda: pytest.fail("asked although the text was saved"))
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.request_quit()


def test_quit_while_captioning_shows_progress_then_closes_with_the_last_words(make_window, qtbot):
    win, record = make_window()
    win.start_button.click()
    qtbot.waitUntil(lambda: bool(record["pipelines"]) and record["pipelines"][-1].fed_all.is_set(), timeout=5000)
    qtbot.waitUntil(lambda: win.engine_state == "running", timeout=5000)
    seen = []
    win.messages.shown.connect(lambda text, severity, code: seen.append((code, win.run_bar.progress.isVisible())))
    with qtbot.waitSignal(win.closed, timeout=5000):
        win.request_quit()  # discard (conftest); the engine drains first
    assert ("quitting", True) in seen
    assert win.recorder.transcript.text().split() == WORDS  # the drained last word is kept
    assert not win.recorder.running  # the journal was closed


def test_programmatic_close_never_asks(make_window, qtbot, monkeypatch):
    """SIGINT/SIGTERM and scripts quit through app.quit() -> close(): no question, the journal keeps the text."""
    win, record = make_window()
    run_and_stop(qtbot, win, record)
    assert win.has_unsaved_text()
    monkeypatch.setattr(win, "ask_unsaved", lambda: pytest.fail("a programmatic close asked a question"))
    with qtbot.waitSignal(win.closed, timeout=2000):
        win.close()
