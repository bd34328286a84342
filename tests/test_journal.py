"""Autosave journal: fsynced records, crash recovery with torn lines, unfinished sessions, full disk."""

from __future__ import annotations

import errno
import json
import os

import pytest

from captioner import paths
from captioner.events import Stats, TextDelta, TurnBoundary
from captioner.transcript import journal as journal_mod
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.journal_recovery import find_unfinished, mark_closed, prune_closed, read_journal, recover
from captioner.transcript.journal_writer import JournalWriter
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import Transcript

EVENTS = [
    TextDelta(" Bonjour", 0.0, 0.4, True, "You"),
    TextDelta(" à", 0.4, 0.5, False, "You"),  # partial: not journaled
    TextDelta(" à tous", 0.4, 0.9, True, "You"),
    TextDelta("中文字幕", 0.2, 1.0, True, "Meeting"),
    TurnBoundary(1.5, "semantic_vad", 0.91, "You"),
    Stats(step_ms=12.0),  # not journaled
    TextDelta(" ça va? 🎤", 2.0, 2.6, True, "You"),
    TextDelta("测试", 1.0, 1.6, True, "Meeting"),
]


@pytest.fixture()
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "data"))
    monkeypatch.delenv(paths.CONFIG_ENV, raising=False)
    return tmp_path / "data"


def live_transcript(events):
    t = Transcript()
    t.extend(events)
    return t


def test_paths_follow_env_override(data_dir, monkeypatch):
    assert paths.data_dir() == data_dir
    assert paths.journal_dir() == data_dir / "journal"
    assert paths.config_dir() == data_dir / "config"
    monkeypatch.setenv(paths.CONFIG_ENV, str(data_dir / "cfg"))
    assert paths.config_dir() == data_dir / "cfg"
    monkeypatch.delenv(paths.DATA_ENV)
    monkeypatch.delenv(paths.CONFIG_ENV)
    assert paths.data_dir().name == "captioner"  # platformdirs location, app name
    assert paths.config_dir().name == "captioner"


def test_records_header_finals_turns_and_close(data_dir):
    j = Journal.create(backend="moonshine base-en", sources=["You", "Meeting"])
    assert j.path.parent == data_dir / "journal"
    assert j.path.name.startswith("session-") and j.path.suffix == ".jsonl"
    written = [j.append(e) for e in EVENTS]
    assert written == [True, False, True, True, True, False, True, True]
    j.close()
    j.close()  # idempotent
    raw = j.path.read_bytes()
    assert "中文字幕".encode("utf-8") in raw and "🎤".encode("utf-8") in raw  # UTF-8, not \u escapes
    records = read_journal(j.path)
    assert [r["type"] for r in records] == ["header", "text", "text", "text", "turn", "text", "text", "close"]
    assert records[0]["version"] == 1 and records[0]["backend"] == "moonshine base-en"
    assert records[0]["sources"] == ["You", "Meeting"]
    assert records[1] == {"type": "text", "source": "You", "start": 0.0, "end": 0.4, "text": " Bonjour"}
    assert records[4] == {"type": "turn", "source": "You", "time": 1.5, "kind": "semantic_vad", "probability": 0.91}
    with pytest.raises(JournalError, match="closed"):
        j.append(EVENTS[0])


def test_every_record_is_fsynced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(journal_mod.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    j = Journal(tmp_path / "j.jsonl")
    assert synced == [] and j.pending == 1  # the header waits for the first flush (no I/O here)
    j.append(EVENTS[0])
    assert len(synced) == 1 and j.pending == 0  # header + record: one write, one fsync
    assert [r["type"] for r in read_journal(j.path)] == ["header", "text"]
    assert j.enqueue(EVENTS[4]) and j.enqueue(EVENTS[6]) and not j.enqueue(EVENTS[1])
    assert len(synced) == 1 and j.pending == 2  # enqueue does no I/O
    j.flush()
    assert len(synced) == 2 and j.pending == 0
    assert [r["type"] for r in read_journal(j.path)] == ["header", "text", "turn", "text"]
    j.close()


def test_recover_equals_live_transcript(tmp_path):
    j = Journal(tmp_path / "s.jsonl", backend="b", sources=["You"])
    for e in EVENTS:
        j.append(e)
    # no close: the app "crashed"
    rebuilt = recover(j.path)
    live = live_transcript(EVENTS)
    assert rebuilt.segments == live.segments
    assert rebuilt.final_text("You") == " Bonjour à tous ça va? 🎤"
    assert rebuilt.final_text("Meeting") == "中文字幕测试"
    assert rebuilt.metadata["backend"] == "b" and rebuilt.metadata["journal"] == str(j.path)
    assert rebuilt.partial("You") == ""  # partials are never journaled


def test_recover_after_kill_mid_line(tmp_path):
    path = tmp_path / "killed.jsonl"
    j = Journal(path)
    for e in EVENTS:
        j.append(e)
    complete = path.read_bytes()
    # Simulate a kill while the last record was half written: cut the file inside it.
    last_line_start = complete.rstrip(b"\n").rfind(b"\n") + 1
    cut = last_line_start + 20
    with open(path, "r+b") as f:
        f.truncate(cut)
    assert not path.read_bytes().endswith(b"\n")
    rebuilt = recover(path)
    assert rebuilt.final_text("You") == " Bonjour à tous ça va? 🎤"  # every complete final survives
    assert rebuilt.final_text("Meeting") == "中文字幕"  # only the torn "测试" record is lost
    assert find_unfinished(tmp_path) == [path]


def test_torn_line_garbage_and_half_utf8_are_skipped(tmp_path):
    path = tmp_path / "torn.jsonl"
    good = {"type": "text", "source": "You", "start": 0.0, "end": 1.0, "text": "é ü"}
    with open(path, "wb") as f:
        f.write(json.dumps({"type": "header", "version": 1}).encode() + b"\n")
        f.write(json.dumps(good, ensure_ascii=False).encode() + b"\n")
        f.write(b"\x00\x00\x00garbage\n")
        f.write(b"[1, 2]\n\n")
        f.write(b'{"type": "text", "source": "You", "start": "x", "text": "bad time"}\n')
        f.write(b'{"type": "text", "source": "You", "start": 1.0, "end": 2.0, "text": " ok"}\n')
        f.write('{"type": "text", "source": "You", "start": 2.0, "end": 3.0, "text": "中'.encode()[:-1])
    records = read_journal(path)
    assert [r["type"] for r in records] == ["header", "text", "text", "text"]
    assert recover(path).final_text("You") == "é ü ok"


def test_reopening_a_torn_journal_starts_on_a_new_line(tmp_path):
    path = tmp_path / "t.jsonl"
    j = Journal(path)
    j.append(EVENTS[0])
    with open(path, "ab") as f:
        f.write(b'{"type": "text", "sou')  # torn by a crash
    mark_closed(path, "recovered")
    records = read_journal(path)
    assert [r["type"] for r in records] == ["header", "text", "close"]
    assert records[-1]["reason"] == "recovered"
    assert find_unfinished(tmp_path) == []


def test_find_unfinished_lists_only_crashed_journals_with_text(tmp_path):
    folder = tmp_path / "journal"
    crashed = Journal(folder / "session-a.jsonl")
    crashed.append(EVENTS[0])
    clean = Journal(folder / "session-b.jsonl")
    clean.append(EVENTS[0])
    clean.close()
    empty = Journal(folder / "session-c.jsonl")  # header only: nothing to recover
    os.utime(crashed.path, (1000, 1000))
    crashed2 = Journal(folder / "session-d.jsonl")
    crashed2.append(EVENTS[3])
    (folder / "notes.txt").write_text("not a journal")
    assert find_unfinished(folder) == [crashed2.path, crashed.path]  # newest first
    assert find_unfinished(tmp_path / "missing") == []
    empty.close()
    recovered = recover(clean.path)
    assert all(s.turn_end and s.boundary == "end_of_stream" for s in recovered.segments)


def test_uncreatable_journal_gives_clear_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(JournalError) as info:
        Journal(blocker / "journal" / "s.jsonl")
    message = str(info.value)
    assert str(blocker / "journal" / "s.jsonl") in message
    assert "CAPTIONER_DATA_DIR" in message
    live, notice = LiveTranscript.start(blocker / "journal", backend="x", sources=["You"])
    assert live.journal is None and notice.code == "journal_unavailable" and notice.severity == "warning"
    assert live.add(EVENTS[0]) is None
    assert live.transcript.final_text("You") == " Bonjour"


def test_disk_full_keeps_text_and_catches_up(tmp_path, monkeypatch):
    live, notice = LiveTranscript.start(tmp_path, backend="test", sources=["You"])
    assert notice is None
    assert live.transcript.metadata["created"] == live.journal.created
    path = live.journal.path
    assert live.add(EVENTS[0]) is None and live.flush() is None

    real_write = os.write
    full = {"on": True}

    def write(fd, data):
        if full["on"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(journal_mod.os, "write", write)
    monkeypatch.setattr(JournalWriter, "RETRY_S", 3600.0)  # retries only with new records here
    assert live.add(EVENTS[2]) is None  # written on the writer thread: add returns at once
    notice = live.flush()
    assert notice is not None and notice.code == "journal_failed" and notice.severity == "error"
    assert "disk is full" in notice.message and str(path) in notice.message
    assert live.add(EVENTS[6]) is None and live.flush() is None  # reported once, not per event
    assert live.journal.pending == 2
    assert isinstance(live.journal.error, JournalError) and live.journal.error.errno == errno.ENOSPC
    # The in-memory transcript kept everything.
    assert live.transcript.final_text("You") == " Bonjour à tous ça va? 🎤"
    assert recover(path).final_text("You") == " Bonjour"

    full["on"] = False  # space freed
    live.add(EVENTS[3])
    notice = live.flush()
    assert notice is not None and notice.code == "journal_ok"
    assert live.journal.pending == 0 and live.journal.error is None
    assert live.close() is None
    rebuilt = recover(path)
    assert rebuilt.final_text("You") == " Bonjour à tous ça va? 🎤"
    assert rebuilt.final_text("Meeting") == "中文字幕"


def test_partial_write_then_error_completes_the_line_later(tmp_path, monkeypatch):
    j = Journal(tmp_path / "p.jsonl")
    real_write = os.write
    calls = {"n": 0}

    def flaky(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[:7]))  # short write
        if calls["n"] == 2:
            raise OSError(errno.EIO, "Input/output error")
        return real_write(fd, data)

    monkeypatch.setattr(journal_mod.os, "write", flaky)
    with pytest.raises(JournalError, match="Input/output error"):
        j.append(EVENTS[0])
    assert j.pending == 2  # the rest of the header, and the record
    j.append(EVENTS[2])
    j.close()
    assert recover(j.path).final_text("You") == " Bonjour à tous"
    assert [r["type"] for r in read_journal(j.path)] == ["header", "text", "text", "close"]


def test_find_unfinished_reads_only_head_and_tail_of_big_journals(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_mod.os, "fsync", lambda fd: None)  # keep the test fast
    j = Journal(tmp_path / "big.jsonl")
    for i in range(3000):  # ~250 KB, larger than the head + tail that are peeked at
        j.append(TextDelta(f" word{i}", i * 0.08, i * 0.08 + 0.08, True, "You"))
    assert j.path.stat().st_size > 200_000
    assert find_unfinished(tmp_path) == [j.path]
    j.close()
    assert find_unfinished(tmp_path) == []
    assert recover(j.path).final_text("You") == "".join(f" word{i}" for i in range(3000))


def test_prune_closed_deletes_only_old_clean_journals(tmp_path):
    old_clean = Journal(tmp_path / "a.jsonl")
    old_clean.append(EVENTS[0])
    old_clean.close()
    old_crashed = Journal(tmp_path / "b.jsonl")
    old_crashed.append(EVENTS[0])
    new_clean = Journal(tmp_path / "c.jsonl")
    new_clean.close()
    month_ago = 1_000_000_000
    os.utime(old_clean.path, (month_ago, month_ago))
    os.utime(old_crashed.path, (month_ago, month_ago))
    assert prune_closed(tmp_path, older_than_days=14) == [old_clean.path]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.jsonl", "c.jsonl"]


def test_close_on_full_disk_can_be_retried(tmp_path, monkeypatch):
    j = Journal(tmp_path / "c.jsonl")
    j.append(EVENTS[0])
    real_write = os.write
    monkeypatch.setattr(journal_mod.os, "write", lambda fd, data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    for _ in range(2):
        with pytest.raises(JournalError, match="disk is full"):
            j.close()
    assert not j.closed and find_unfinished(tmp_path) == [j.path]
    monkeypatch.setattr(journal_mod.os, "write", real_write)
    j.close()
    assert j.closed and [r["type"] for r in read_journal(j.path)] == ["header", "text", "close"]
