"""Issue 30.4: the journal is written and fsynced on a writer thread, never on the thread that
adds events (the GUI's): in order, a burst sharing one fsync, flushed and closed on Stop within
the 2-s rule, retried while the disk is full even when no new text arrives."""

from __future__ import annotations

import errno
import os
import threading
import time

from captioner.events import TextDelta, TurnBoundary
from captioner.transcript import journal as journal_mod
from captioner.transcript.journal_recovery import find_unfinished, is_closed, read_journal, recover
from captioner.transcript.journal_writer import JournalWriter
from captioner.transcript.live import LiveTranscript


def words(n, start=0):
    return [TextDelta(f" w{i}", i * 0.1, i * 0.1 + 0.1, True, "You") for i in range(start, start + n)]


def test_add_never_writes_or_fsyncs_on_the_calling_thread(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_write = os.fsync, os.write
    monkeypatch.setattr(journal_mod.os, "fsync", lambda fd: (calls.append(("fsync", threading.current_thread())),
                                                             real_fsync(fd))[1])
    monkeypatch.setattr(journal_mod.os, "write", lambda fd, b: (calls.append(("write", threading.current_thread())),
                                                                real_write(fd, b))[1])
    live, notice = LiveTranscript.start(tmp_path, backend="b", sources=["You"])
    assert notice is None
    events = words(30) + [TurnBoundary(3.0, "semantic_vad", 0.9, "You")] + words(10, 30)
    for ev in events:
        assert live.add(ev) is None
    assert live.close() is None
    assert calls, "the journal was never written"
    here = threading.current_thread()
    assert [name for name, t in calls if t is here] == []  # before: every add wrote and fsynced here
    assert {t.name for _, t in calls} == {"captioner-journal"}
    records = read_journal(live.journal.path)
    assert [r["type"] for r in records] == ["header"] + ["text"] * 30 + ["turn"] + ["text"] * 10 + ["close"]
    assert recover(live.journal.path).final_text("You") == "".join(f" w{i}" for i in range(40))


def test_a_stuck_disk_never_blocks_add_and_a_burst_shares_one_fsync(tmp_path, monkeypatch):
    gate = threading.Event()
    entered = threading.Event()
    synced = []
    real_fsync = os.fsync

    def stuck_fsync(fd):
        entered.set()
        assert gate.wait(10)
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(journal_mod.os, "fsync", stuck_fsync)
    live, _ = LiveTranscript.start(tmp_path, backend="b", sources=["You"])
    live.add(words(1)[0])
    assert entered.wait(5)  # the writer is inside fsync, held there
    for ev in words(50, 1):  # before: the first add already waited for the held fsync
        assert live.add(ev) is None
    # all 50 wait in memory (51: the held fsync was the header's, w0 came after it)
    assert live.journal.pending in (50, 51) and synced == []
    assert live.transcript.final_text("You") == "".join(f" w{i}" for i in range(51))
    gate.set()
    assert live.flush() is None
    assert live.journal.pending == 0 and len(synced) == 2  # the held one, then the 50 together
    assert live.close() is None and len(synced) == 3
    assert recover(live.journal.path).final_text("You") == "".join(f" w{i}" for i in range(51))


def test_close_on_a_hung_disk_returns_in_time_and_finishes_later(tmp_path, monkeypatch):
    gate = threading.Event()
    real_fsync = os.fsync
    monkeypatch.setattr(journal_mod.os, "fsync", lambda fd: (gate.wait(10), real_fsync(fd))[1])
    live, _ = LiveTranscript.start(tmp_path, backend="b", sources=["You"])
    for ev in words(5):
        live.add(ev)
    t0 = time.monotonic()
    notice = live.close(timeout_s=0.3)
    assert time.monotonic() - t0 < 2.0  # Stop's 2-s rule
    assert notice is not None and notice.code == "journal_failed" and "still being written" in notice.message
    assert live.transcript.final_text("You") == " w0 w1 w2 w3 w4"  # the text is kept in memory
    gate.set()
    deadline = time.monotonic() + 5
    while not live.journal.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert live.journal.closed and is_closed(read_journal(live.journal.path))
    assert recover(live.journal.path).final_text("You") == " w0 w1 w2 w3 w4"
    assert live.add(words(1, 5)[0]) is None  # after close: kept in memory, not journaled, no error


def test_a_full_disk_is_retried_without_new_text_and_close_writes_everything(tmp_path, monkeypatch):
    monkeypatch.setattr(JournalWriter, "RETRY_S", 0.05)
    real_write = os.write
    full = {"on": False}

    def write(fd, data):
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(journal_mod.os, "write", write)
    live, _ = LiveTranscript.start(tmp_path, backend="b", sources=["You"])
    live.add(words(1)[0])
    assert live.flush() is None
    full["on"] = True
    for ev in words(3, 1):
        live.add(ev)
    notice = live.flush()
    assert notice is not None and notice.code == "journal_failed" and "disk is full" in notice.message
    assert live.journal.pending == 3
    full["on"] = False  # space freed; no new text arrives (a silent room)
    deadline = time.monotonic() + 5
    while live.journal.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert live.journal.pending == 0
    notice = live.flush()
    assert notice is not None and notice.code == "journal_ok"
    assert live.close() is None
    assert recover(live.journal.path).final_text("You") == " w0 w1 w2 w3"


def test_close_on_a_full_disk_says_so_and_the_journal_stays_recoverable(tmp_path, monkeypatch):
    live, _ = LiveTranscript.start(tmp_path, backend="b", sources=["You"])
    live.add(words(1)[0])
    assert live.flush() is None
    monkeypatch.setattr(journal_mod.os, "write", lambda fd, d: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    live.add(words(1, 1)[0])
    notice = live.close()
    assert notice is not None and notice.code == "journal_failed" and "disk is full" in notice.message
    assert live.transcript.final_text("You") == " w0 w1"
    assert find_unfinished(tmp_path) == [live.journal.path]
