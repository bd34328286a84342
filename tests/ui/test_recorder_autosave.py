"""Issue 30.4: the timed autosave rewrites the whole transcript (tens of ms at hour 8); it runs on
a writer thread, so the GUI thread never waits for it, and the file never goes back in time."""

from __future__ import annotations

import os
import threading

import pytest
from PySide6.QtCore import QCoreApplication

from captioner.events import TextDelta, TurnBoundary
from captioner.ui import recorder as recorder_module
from captioner.ui.recorder import TranscriptRecorder

pytestmark = pytest.mark.gui


def test_the_timed_autosave_writes_on_its_own_thread_and_stop_writes_everything(qtbot, tmp_path, monkeypatch):
    real = recorder_module.write_transcript
    gate = threading.Event()
    threads = []

    def slow_write(segments, path, fmt, **kw):
        threads.append(threading.current_thread().name)
        if threading.current_thread() is not threading.main_thread():
            assert gate.wait(10)
        return real(segments, path, fmt, **kw)

    monkeypatch.setattr(recorder_module, "write_transcript", slow_write)
    rec = TranscriptRecorder(tmp_path / "journals")
    rec.begin("fake", ["You"], autosave_dir=str(tmp_path))
    saved = []
    rec.autosaved.connect(saved.append)
    rec.add(TextDelta("hello there.", 0.0, 1.0, True, "You"))
    rec.add(TurnBoundary(1.0, "turn", 1.0, "You"))
    rec.write_autosave_later()  # returns although the write is held
    assert saved == [] and not rec.autosave_path.exists()
    gate.set()
    qtbot.waitUntil(lambda: saved == [str(rec.autosave_path)], timeout=5000)
    assert threads[0] == "captioner-autosave"
    assert "hello there." in rec.autosave_path.read_text(encoding="utf-8")
    # text that arrives while a snapshot is being written: that write does not count as saved
    gate.clear()
    rec.add(TextDelta("second line", 2.0, 3.0, True, "You"))
    rec.write_autosave_later()
    rec.add(TextDelta(" goes on", 3.0, 4.0, True, "You"))
    gate.set()
    qtbot.waitUntil(lambda: rec._writer is None, timeout=5000)  # the writer finished ...
    QCoreApplication.processEvents()  # ... and its report reached this thread
    assert "second line" in rec.autosave_path.read_text(encoding="utf-8")
    assert len(saved) == 1
    rec.end()  # Stop: one more write, on this thread, with everything
    assert "second line goes on" in rec.autosave_path.read_text(encoding="utf-8") and len(saved) == 2


def test_the_gui_thread_never_writes_or_fsyncs_the_journal(qtbot, tmp_path, monkeypatch):
    """Issue 30.4: an fsync of the journal took 22-59 ms per final word on the GUI thread."""
    from captioner.transcript import journal as journal_mod
    from captioner.transcript import read_journal, recover

    real_fsync, real_write = journal_mod.os.fsync, journal_mod.os.write
    on_gui = []

    def spy(real):
        def call(fd, *args):
            if threading.current_thread() is threading.main_thread():
                on_gui.append((real.__name__, os.readlink(f"/proc/self/fd/{fd}")))
            return real(fd, *args)
        return call

    monkeypatch.setattr(journal_mod.os, "fsync", spy(real_fsync))
    monkeypatch.setattr(journal_mod.os, "write", spy(real_write))
    rec = TranscriptRecorder(tmp_path / "journals")
    rec.begin("fake", ["You"])  # no autosave copy: only the journal is written
    for i in range(20):
        rec.add(TextDelta(f" w{i}", i * 0.1, i * 0.1 + 0.1, True, "You"))
    rec.add(TurnBoundary(2.0, "turn", 1.0, "You"))
    rec.end()  # Stop: the writer thread writes the rest and the close record, joined here
    journal = rec.journal_path
    assert [c for c in on_gui if c[1].endswith(".jsonl")] == []
    assert read_journal(journal)[-1]["type"] == "close"
    assert recover(journal).final_text("You") == "".join(f" w{i}" for i in range(20))


def test_a_full_disk_says_so_once_and_the_window_keeps_every_word(qtbot, tmp_path, monkeypatch):
    """The journal is written off the GUI thread; its failure still reaches the window as one notice."""
    import errno

    from captioner.events import Stats
    from captioner.transcript import journal as journal_mod

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_mod.os, "write", full)
    rec = TranscriptRecorder(tmp_path / "journals")
    notices = []
    rec.notice.connect(notices.append)
    rec.begin("fake", ["You"])
    rec.add(TextDelta("hello there", 0.0, 1.0, True, "You"))
    rec.live._writer.flush(5.0)  # the writer thread has tried (and failed) by now ...
    rec.add(Stats(source="You"))  # ... and the next event brings its notice to this thread
    rec.add(TextDelta(" again", 1.0, 2.0, True, "You"))
    rec.live._writer.flush(5.0)
    rec.add(Stats(source="You"))
    failed = [n for n in notices if n.code == "journal_failed"]
    assert len(failed) == 1 and "disk is full" in failed[0].message and failed[0].severity == "error"
    assert rec.transcript.final_text("You") == "hello there again"
    rec.end()  # Stop within the 2-s rule; the close could not be written either: said once more
    assert [n.code for n in notices] == ["journal_failed", "journal_failed"]
    assert rec.transcript.final_text("You") == "hello there again"
