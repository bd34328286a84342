"""``captioner recover``: list unfinished journals, save one to any format (issue 9 item 5)."""

from __future__ import annotations

import json

import pytest

from captioner.cli import main
from captioner.events import TextDelta, TurnBoundary
from captioner.transcript.journal import Journal
from captioner.transcript.journal_recovery import find_unfinished, recover
from captioner.transcript.writers import format_transcript


@pytest.fixture
def crashed(tmp_path, monkeypatch):
    """Two journals left open by a 'crash' (never closed) and one closed cleanly."""
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "data" / "journal"
    old = Journal(folder / "session-20261130-090000-aaaaaa.jsonl", backend="default", sources=["You"])
    old.append(TextDelta("Yesterday's stand-up.", 0.0, 1.5, True, "You"))
    new = Journal(folder / "session-20261201-100000-bbbbbb.jsonl", backend="default", sources=["You", "Meeting"])
    new.append(TextDelta("Good morning everyone.", 0.4, 2.0, True, "Meeting"))
    new.append(TurnBoundary(2.1, "semantic", 0.93, "Meeting"))
    new.append(TextDelta("Friday works for me.", 3.0, 4.6, True, "You"))
    done = Journal(folder / "session-20261129-080000-cccccc.jsonl", sources=["You"])
    done.append(TextDelta("closed session", 0.0, 1.0, True, "You"))
    done.close()
    import os
    os.utime(old.path, (1_000_000_000, 1_000_000_000))  # older: listed second
    return new.path, old.path


def test_list_shows_unfinished_newest_first(crashed, capsys):
    assert main(["recover"]) == 0
    out = capsys.readouterr().out
    assert out.index("bbbbbb") < out.index("aaaaaa")
    assert "cccccc" not in out  # closed cleanly: nothing to recover
    assert "Good morning everyone." in out and "You, Meeting" in out and "2 lines" in out
    assert main(["recover", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["lines"] for r in rows] == [2, 1]
    assert rows[0]["seconds"] == pytest.approx(4.6)


def test_save_newest_as_srt_marks_it_recovered(crashed, tmp_path, capsys):
    newest, older = crashed
    expected = format_transcript(recover(newest), "srt")
    out = tmp_path / "meeting.srt"
    assert main(["recover", "1", "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected
    assert "Good morning everyone." in expected and "Friday works for me." in expected
    assert find_unfinished() == [older]  # no longer offered, by the GUI either


def test_print_by_path_as_json_keeps_boundaries_and_journal_open(crashed, capsys):
    newest, _ = crashed
    assert main(["recover", str(newest), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["text"] for s in doc["segments"]] == ["Good morning everyone.", "Friday works for me."]
    assert newest in find_unfinished()  # printing only does not mark it


def test_keep_and_usage_errors(crashed, tmp_path, capsys):
    newest, _ = crashed
    assert main(["recover", "1", "-o", str(tmp_path / "a.txt"), "--keep"]) == 0
    assert newest in find_unfinished()
    assert main(["recover", "7"]) == 2
    assert "no such journal" in capsys.readouterr().err
    assert main(["recover", "1", "-o", str(tmp_path / "a.docx")]) == 2
    assert main(["recover", "-o", str(tmp_path / "a.txt")]) == 2


def test_nothing_to_recover(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "empty"))
    assert main(["recover"]) == 0
    assert "nothing to recover" in capsys.readouterr().out
