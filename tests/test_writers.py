"""TXT/SRT/WebVTT/JSON writers, checked with the maintained srt and webvtt-py parsers."""

from __future__ import annotations

import errno
import html
import json
import os
import re
from datetime import timedelta

import pytest
import srt
import webvtt

from captioner.events import TextDelta, TurnBoundary
from captioner.transcript import atomic_write
from captioner.transcript.atomic_write import TranscriptWriteError
from captioner.transcript.cues import display_width
from captioner.transcript.model import Transcript
from captioner.transcript.segment import Segment
from captioner.transcript.writers import (
    format_transcript,
    write_json,
    write_srt,
    write_transcript,
    write_txt,
    write_vtt,
)

ACCENTED = " Le café est très bon, über alles; we <love> R&D -- and arrows --> too, said the long sentence."
CJK = "中文字幕测试，没有空格的长句子需要按字符换行"
EMOJI = " Mic check 🎤 one two"

SRT_TIME = re.compile(r"^\d{2,}:\d{2}:\d{2},\d{3} --> \d{2,}:\d{2}:\d{2},\d{3}$")
VTT_TIME = re.compile(r"^\d{2,}:\d{2}:\d{2}\.\d{3} --> \d{2,}:\d{2}:\d{2}\.\d{3}$")


def build() -> Transcript:
    t = Transcript({"backend": "test backend", "created": "2026-11-30T10:00:00+00:00"})
    events = [
        TextDelta(ACCENTED[:40], 0.5, 2.0, True, "You"),
        TextDelta(CJK, 1.0, 4.0, True, "Meeting"),  # overlaps "You" in time
        TextDelta(ACCENTED[40:], 2.0, 6.0, True, "You"),
        TurnBoundary(6.5, "semantic_vad", 0.9, "You"),
        TurnBoundary(4.5, "line", 1.0, "Meeting"),
        TextDelta(EMOJI, 7.0, 8.0, True, "You"),
        TextDelta(" late", 3600 * 2 + 61.25, 3600 * 2 + 62.0, True, "Meeting"),  # hours in timestamps
    ]
    t.extend(events)
    return t


def check_cues(starts, ends, texts):
    assert all(a < b for a, b in zip(starts, starts[1:])), "cue starts must strictly increase"
    assert all(s < e for s, e in zip(starts, ends)), "every cue needs start < end"
    for text in texts:
        lines = text.split("\n")
        assert 1 <= len(lines) <= 2
        for line in lines:
            body = line.split(": ", 1)[1] if line.startswith(("You: ", "Meeting: ")) else line
            if re.search(r"[\u4e00-\u9fff]", body):
                assert len(line) <= 16 + len("Meeting: ")  # CJK: by characters
                assert len(body) <= 16
            assert display_width(line) <= 42


def test_srt_round_trip(tmp_path):
    path = write_srt(build(), tmp_path / "out.srt")
    raw = path.read_bytes()
    raw.decode("utf-8")  # strict: valid UTF-8
    assert "é".encode("utf-8") in raw and "中文".encode("utf-8") in raw and "🎤".encode("utf-8") in raw
    assert not raw.startswith(b"\xef\xbb\xbf") and b"\r\n" not in raw
    text = raw.decode("utf-8")
    time_lines = [line for line in text.splitlines() if "-->" in line and line[0].isdigit()]
    assert time_lines and all(SRT_TIME.match(line) for line in time_lines)
    subs = list(srt.parse(text))
    assert [s.index for s in subs] == list(range(1, len(subs) + 1))
    check_cues([s.start for s in subs], [s.end for s in subs], [s.content for s in subs])
    assert subs[0].start == timedelta(milliseconds=500)
    assert subs[0].content.startswith("You: Le café")
    cjk_cues = [s for s in subs if re.search(r"[\u4e00-\u9fff]", s.content)]
    # The 22-character CJK line is split by characters (the label takes room on line 1).
    assert [s.content for s in cjk_cues] == ["Meeting: 中文字幕测试，没有\n空格的长句子需要按字符换行"]
    assert "".join(s.content.replace("Meeting: ", "").replace("\n", "") for s in cjk_cues) == CJK
    assert all(len(line) <= 16 for s in cjk_cues for line in s.content.replace("Meeting: ", "").split("\n"))
    assert subs[-1].start == timedelta(hours=2, seconds=61.25)
    assert "02:01:01,250 --> 02:01:02,000" in text
    assert any("🎤" in s.content for s in subs)


def test_vtt_round_trip(tmp_path):
    path = write_vtt(build(), tmp_path / "out.vtt")
    raw = path.read_bytes()
    text = raw.decode("utf-8")
    assert text.startswith("WEBVTT\n\n")
    time_lines = [line for line in text.splitlines() if " --> " in line]
    assert time_lines and all(VTT_TIME.match(line) for line in time_lines)
    assert "<love>" not in text and "&lt;love&gt;" in text and "R&amp;D" in text
    captions = list(webvtt.from_string(text))
    starts = [c.start_time.in_milliseconds() for c in captions]
    ends = [c.end_time.in_milliseconds() for c in captions]
    texts = [html.unescape(c.text) for c in captions]
    check_cues(starts, ends, texts)
    assert starts[0] == 500 and captions[-1].start == "02:01:01.250"
    all_text = " ".join(texts)
    assert "R&D" in all_text and "<love>" in all_text and "-->" in html.unescape(text)
    assert "".join(t.replace("Meeting: ", "").replace("\n", "") for t in texts if "中" in t or "换" in t) == CJK
    # Also parse from the file on disk with the library's reader.
    assert len(webvtt.read(str(path)).captions) == len(captions)


def test_srt_and_vtt_have_identical_cues():
    t = build()
    subs = list(srt.parse(format_transcript(t, "srt")))
    caps = list(webvtt.from_string(format_transcript(t, "vtt")))
    assert [round(s.start.total_seconds() * 1000) for s in subs] == [c.start_time.in_milliseconds() for c in caps]
    assert [s.content for s in subs] == [html.unescape(c.text) for c in caps]


def test_json_round_trip(tmp_path):
    t = build()
    path = write_json(t, tmp_path / "out.json")
    raw = path.read_bytes()
    assert "中文字幕".encode("utf-8") in raw  # not \\u-escaped
    doc = json.loads(raw.decode("utf-8"))
    assert doc["format"] == "captioner-transcript" and doc["version"] == 1
    assert doc["metadata"]["backend"] == "test backend"
    assert doc["metadata"]["created"] == "2026-11-30T10:00:00+00:00"
    assert doc["sources"] == ["You", "Meeting"]
    segs = [Segment(**s) for s in doc["segments"]]
    # the same segments, text without the space a model puts between deltas
    assert segs == [Segment(s.source, s.start, s.end, s.text.strip(), s.turn_end, s.boundary) for s in t.segments]
    assert any(s.text != s.text.strip() for s in t.segments)  # the fixture has such a space
    assert doc["segments"][0] == {
        "source": "You",
        "start": 0.5,
        "end": 6.0,
        "text": ACCENTED.strip(),
        "turn_end": True,
        "boundary": "semantic_vad",
    }


def test_txt(tmp_path):
    path = write_txt(build(), tmp_path / "out.txt")
    lines = path.read_bytes().decode("utf-8").split("\n")
    assert lines[0] == "[00:00:00] You: " + ACCENTED.strip()
    assert lines[1] == "[00:00:01] Meeting: " + CJK
    assert lines[2] == "[00:00:07] You: Mic check 🎤 one two"
    assert lines[3] == "[02:01:01] Meeting: late"
    assert lines[4] == ""
    plain = format_transcript(build(), "txt", timestamps=False, label_sources=False)
    assert plain.splitlines()[2] == "Mic check 🎤 one two"
    assert format_transcript(Transcript(), "txt") == ""


def test_write_transcript_picks_format_from_suffix(tmp_path):
    t = build()
    for name in ("a.txt", "a.srt", "a.vtt", "a.json"):
        path = write_transcript(t, tmp_path / name)
        assert path.read_text(encoding="utf-8") == format_transcript(t, name.split(".")[1])
    with pytest.raises(ValueError, match="txt, srt, vtt, json"):
        write_transcript(t, tmp_path / "a.docx")


def test_failed_write_keeps_old_file_and_explains(tmp_path, monkeypatch):
    target = tmp_path / "keep.srt"
    target.write_text("old content", encoding="utf-8")
    real_write = os.write

    def full(fd, data):
        real_write(fd, bytes(data[:5]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "write", full)
    with pytest.raises(TranscriptWriteError) as info:
        write_srt(build(), target)
    assert "disk is full" in str(info.value) and str(target) in str(info.value)
    assert info.value.errno == errno.ENOSPC
    assert target.read_text(encoding="utf-8") == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.srt"]  # no temp file left behind


def test_unwritable_targets_explain(tmp_path):
    with pytest.raises(TranscriptWriteError, match="folder does not exist"):
        write_vtt(build(), tmp_path / "missing" / "x.vtt")
    with pytest.raises(TranscriptWriteError, match="folder"):
        write_txt(build(), tmp_path)


def test_empty_transcript_files_are_valid():
    assert format_transcript(Transcript(), "srt") == ""
    assert format_transcript(Transcript(), "vtt").startswith("WEBVTT")
    assert list(webvtt.from_string(format_transcript(Transcript(), "vtt"))) == []
    assert json.loads(format_transcript(Transcript(), "json"))["segments"] == []


def test_single_source_cjk_srt_lines_split_by_characters_and_balanced():
    t = Transcript()
    long_cjk = CJK * 3  # 66 characters, no spaces
    t.add(TextDelta(long_cjk, 0.0, 9.0, True, "You"))
    subs = list(srt.parse(format_transcript(t, "srt")))
    lines = [line for s in subs for line in s.content.split("\n")]
    assert "".join(lines) == long_cjk
    # 66 characters need 5 lines of 16 -> 3 cues; balanced that is 6 lines of 11, no stub.
    assert [len(line) for line in lines] == [11] * 6
    assert [len(s.content.split("\n")) for s in subs] == [2, 2, 2]
    # Equal character counts -> equal thirds of the 9 s segment.
    assert [(s.start.total_seconds(), s.end.total_seconds()) for s in subs] == [(0, 3), (3, 6), (6, 9)]
