"""Speaker labels in the transcript layer (issue 38): segments, every file format, renames,
the journal and ``recover``, and ``--speakers`` on ``transcribe`` / ``listen``.

Scripted ``TextDelta`` events and scripted trackers only: no speaker model.
"""

from __future__ import annotations

import argparse
import io
import json

import numpy as np
import pytest
import soundfile as sf
import srt
import webvtt

from captioner.events import TextDelta, TurnBoundary
from captioner.speakers.options import AUTO, OFF, SpeakerOptions
from captioner.speakers.tracker import SpeakerTracker
from captioner.transcript.journal import Journal
from captioner.transcript.journal_recovery import read_journal, recover
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import SpeakerRename, Transcript
from captioner.transcript.profanity import ProfanityFilter
from captioner.transcript.segment import BOUNDARY_SPEAKER
from captioner.transcript.writers import format_transcript

CALL = "call.wav"
LONG = "Good & <great>, thanks for asking me that question today, really."


def two_speakers() -> list:
    """Speaker 1, then Speaker 2 over two turns, then Speaker 1 again (a two-cue line)."""
    return [
        TextDelta("Hello there.", 0.0, 1.0, True, CALL, speaker="Speaker 1"),
        TextDelta(" How are you?", 1.0, 2.0, True, CALL, speaker="Speaker 1"),
        TextDelta(" Fine, thanks.", 2.5, 3.5, True, CALL, speaker="Speaker 2"),  # a change inside the turn
        TurnBoundary(3.8, "semantic", 0.9, CALL),
        TextDelta("And you?", 4.0, 4.6, True, CALL, speaker="Speaker 2"),
        TurnBoundary(4.8, "semantic", 0.9, CALL),
        TextDelta(LONG, 5.0, 8.0, True, CALL, speaker="Speaker 1"),
    ]


def build(events=None) -> Transcript:
    t = Transcript()
    t.extend(two_speakers() if events is None else events)
    t.close_all()
    return t


# ------------------------------------------------------------------------------ the model
def test_a_change_of_speaker_closes_the_segment_without_ending_the_turn():
    t = Transcript()
    assert t.add(two_speakers()[0]) == [] and t.add(two_speakers()[1]) == []
    (closed,) = t.add(two_speakers()[2])
    assert (closed.text, closed.speaker, closed.boundary, closed.turn_end) == (
        "Hello there. How are you?", "Speaker 1", BOUNDARY_SPEAKER, False)
    (open_,) = [s for s in t.segments if s.is_open]
    assert (open_.text, open_.speaker, open_.start) == (" Fine, thanks.", "Speaker 2", 2.5)
    t.extend(two_speakers()[3:])
    t.close_all()
    assert [(s.speaker, s.boundary) for s in t.segments] == [
        ("Speaker 1", "speaker"), ("Speaker 2", "semantic"), ("Speaker 2", "semantic"), ("Speaker 1", "end_of_stream")]
    assert t.speakers == ["Speaker 1", "Speaker 2"]


def test_unlabelled_text_joins_the_open_segment_and_the_same_speaker_does_not_split():
    t = build([
        TextDelta("one", 0.0, 0.5, True, CALL, speaker="Speaker 1"),
        TextDelta(" two", 0.5, 1.0, True, CALL),  # not attributed: stays with Speaker 1's words
        TextDelta(" three", 1.0, 1.5, True, CALL, speaker="Speaker 1"),
        TextDelta("mic", 0.2, 0.4, True, "You"),  # another source: its own segment, no speaker
    ])
    assert [(s.source, s.text, s.speaker) for s in t.segments] == [
        (CALL, "one two three", "Speaker 1"), ("You", "mic", "")]


def test_rename_applies_to_past_segments_and_clears_back_to_the_id():
    t = build()
    assert t.rename_speaker("Speaker 2", "  Alice\n Smith ") == "Alice Smith"  # one line
    assert [t.display_label(s) for s in t.segments] == ["Speaker 1", "Alice Smith", "Alice Smith", "Speaker 1"]
    assert t.speaker_name("Speaker 2") == "Alice Smith" and t.speaker_name("") == ""
    assert t.add(SpeakerRename("Speaker 2", "")) == []  # the event form, as the journal replays it
    assert t.speaker_name("Speaker 2") == "Speaker 2" and t.speaker_names == {}
    assert t.rename_speaker("", "Nobody") == "" and t.speaker_names == {}
    unattributed = Transcript()
    unattributed.add(TextDelta("hi", 0.0, 1.0, True, "You"))
    assert unattributed.display_label(unattributed.segments[0]) == "You"


# ---------------------------------------------------------------------------- the writers
SRT = """1
00:00:00,000 --> 00:00:02,000
Speaker 1: Hello there. How are you?

2
00:00:02,500 --> 00:00:03,500
Speaker 2: Fine, thanks.

3
00:00:04,000 --> 00:00:04,600
And you?

4
00:00:05,000 --> 00:00:08,000
Speaker 1: Good & <great>, thanks for
asking me that question today, really.

"""

VTT = """WEBVTT

00:00:00.000 --> 00:00:02.000
<v Speaker 1>Hello there. How are you?</v>

00:00:02.500 --> 00:00:03.500
<v Speaker 2>Fine, thanks.</v>

00:00:04.000 --> 00:00:04.600
<v Speaker 2>And you?</v>

00:00:05.000 --> 00:00:08.000
<v Speaker 1>Good &amp; &lt;great&gt;, thanks for asking
me that question today, really.</v>
"""

TXT = """[00:00:00] Speaker 1: Hello there. How are you?
[00:00:02] Speaker 2: Fine, thanks.
[00:00:04] And you?
[00:00:05] Speaker 1: Good & <great>, thanks for asking me that question today, really.
"""


def test_srt_prefixes_the_speaker_at_each_change_only():
    text = format_transcript(build(), "srt")
    assert text == SRT
    assert [c.content.split("\n")[0] for c in srt.parse(text)][2] == "And you?"


def test_vtt_puts_every_attributed_cue_in_a_voice_span():
    text = format_transcript(build(), "vtt")
    assert text == VTT
    cues = list(webvtt.from_string(text))
    assert [c.voice for c in cues] == ["Speaker 1", "Speaker 2", "Speaker 2", "Speaker 1"]
    assert cues[0].text == "Hello there. How are you?"  # the span is a tag, not text


def test_txt_prefixes_the_speaker_at_each_change_only():
    assert format_transcript(build(), "txt") == TXT
    assert format_transcript(build(), "txt", timestamps=False).splitlines()[1:3] == [
        "Speaker 2: Fine, thanks.", "And you?"]


def test_json_gives_every_segment_a_speaker():
    doc = json.loads(format_transcript(build(), "json"))
    assert [(s["speaker"], s["speaker_id"], s["text"]) for s in doc["segments"]] == [
        ("Speaker 1", "Speaker 1", "Hello there. How are you?"),
        ("Speaker 2", "Speaker 2", "Fine, thanks."),
        ("Speaker 2", "Speaker 2", "And you?"),
        ("Speaker 1", "Speaker 1", LONG),
    ]
    assert doc["speakers"] == [{"id": "Speaker 1", "name": "Speaker 1"}, {"id": "Speaker 2", "name": "Speaker 2"}]
    assert list(doc) == ["format", "version", "metadata", "sources", "speakers", "segments", "turns"]


def test_a_rename_reaches_every_format_and_the_name_is_escaped_in_vtt():
    t = build()
    t.rename_speaker("Speaker 2", "Bob <host>")
    assert format_transcript(t, "srt") == SRT.replace("Speaker 2:", "Bob <host>:")
    assert format_transcript(t, "txt") == TXT.replace("Speaker 2:", "Bob <host>:")
    vtt = format_transcript(t, "vtt")
    assert vtt == VTT.replace("<v Speaker 2>", "<v Bob &lt;host&gt;>")
    assert [c.voice for c in webvtt.from_string(vtt)][1:3] == ["Bob &lt;host&gt;"] * 2
    doc = json.loads(format_transcript(t, "json"))
    assert [s["speaker"] for s in doc["segments"]] == ["Speaker 1", "Bob <host>", "Bob <host>", "Speaker 1"]
    assert [s["speaker_id"] for s in doc["segments"]][1] == "Speaker 2"
    assert doc["speakers"][1] == {"id": "Speaker 2", "name": "Bob <host>"}


def test_the_profanity_mask_applies_to_text_not_to_names():
    t = Transcript()
    t.add(TextDelta("Oh shit.", 0.0, 1.0, True, CALL, speaker="Speaker 1"))
    t.rename_speaker("Speaker 1", "Shit Creek FM")  # the user's own words: not masked
    assert format_transcript(t, "txt", mask=ProfanityFilter(), timestamps=False) == "Shit Creek FM: Oh s***.\n"
    vtt = format_transcript(t, "vtt", mask=ProfanityFilter())
    assert vtt.endswith("<v Shit Creek FM>Oh s***.</v>\n")


def test_mixed_sources_keep_source_labels_and_relabel_a_speaker_after_an_interruption():
    t = build([
        TextDelta("Hi all.", 0.0, 1.0, True, "Meeting", speaker="Speaker 1"),
        TurnBoundary(1.1, "semantic", 0.9, "Meeting"),
        TextDelta("More.", 1.2, 1.8, True, "Meeting", speaker="Speaker 1"),
        TurnBoundary(1.9, "semantic", 0.9, "Meeting"),
        TextDelta("Hello.", 2.0, 3.0, True, "You"),
        TextDelta("Welcome.", 3.5, 4.0, True, "Meeting", speaker="Speaker 1"),
    ])
    assert format_transcript(t, "txt", timestamps=False) == (
        "Speaker 1: Hi all.\nMore.\nYou: Hello.\nSpeaker 1: Welcome.\n")
    assert [c.content for c in srt.parse(format_transcript(t, "srt"))] == [
        "Speaker 1: Hi all.", "More.", "You: Hello.", "Speaker 1: Welcome."]
    cues = list(webvtt.from_string(format_transcript(t, "vtt")))
    assert [(c.voice, c.text) for c in cues] == [
        ("Speaker 1", "Hi all."), ("Speaker 1", "More."), (None, "You: Hello."), ("Speaker 1", "Welcome.")]
    doc = json.loads(format_transcript(t, "json"))
    assert [(s["speaker"], s["speaker_id"]) for s in doc["segments"]][2] == ("You", "")


def test_an_unattributed_transcript_is_written_as_before():
    """The bytes of a transcript without speakers (checked against the writers before issue 38)."""
    t = Transcript()
    t.extend([
        TextDelta(" Hello there. How are you doing today, my dear old friend of many years?", 0.0, 3.0, True, "You"),
        TextDelta("Fine & <ok>.", 1.0, 2.0, True, "Meeting"),
        TurnBoundary(3.2, "semantic", 0.9, "You"),
    ])
    t.close_all()
    assert format_transcript(t, "srt") == (
        "1\n00:00:00,000 --> 00:00:03,000\nYou: Hello there. How are you doing\n"
        "today, my dear old friend of many years?\n\n"
        "2\n00:00:01,000 --> 00:00:02,000\nMeeting: Fine & <ok>.\n\n")
    assert format_transcript(t, "vtt") == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:03.000\nYou: Hello there. How are you doing\n"
        "today, my dear old friend of many years?\n\n"
        "00:00:01.000 --> 00:00:02.000\nMeeting: Fine &amp; &lt;ok&gt;.\n")
    assert format_transcript(t, "txt") == (
        "[00:00:00] You: Hello there. How are you doing today, my dear old friend of many years?\n"
        "[00:00:01] Meeting: Fine & <ok>.\n")
    doc = json.loads(format_transcript(t, "json"))
    assert "speakers" not in doc and all("speaker" not in s and "speaker_id" not in s for s in doc["segments"])
    assert list(doc["segments"][0]) == ["source", "start", "end", "text", "turn_end", "boundary"]


# ------------------------------------------------------------------- journal and recover
def test_journal_round_trip_keeps_speakers_and_renames(tmp_path, monkeypatch, capsys):
    from captioner.cli import main

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    path = tmp_path / "session-20261201-100000-abcdef.jsonl"
    live = LiveTranscript(Journal(path, sources=[CALL]))
    for ev in two_speakers():
        live.add(ev)
    assert live.rename_speaker("Speaker 2", "Alice") is None
    assert live.flush() is None  # then the "crash": no close record
    records = read_journal(path)
    assert [r.get("speaker") for r in records if r["type"] == "text"] == ["Speaker 1"] * 2 + ["Speaker 2"] * 2 + [
        "Speaker 1"]
    assert records[-1] == {"type": "speaker_name", "speaker": "Speaker 2", "name": "Alice"}
    rebuilt = recover(path)
    assert rebuilt.speaker_names == {"Speaker 2": "Alice"}
    assert [(s.text, s.speaker) for s in rebuilt.segments] == [(s.text, s.speaker) for s in live.transcript.segments]
    for fmt in ("txt", "srt", "vtt", "json"):
        if fmt != "json":  # json holds the journal path in its metadata
            assert format_transcript(rebuilt, fmt) == format_transcript(live.transcript, fmt)
    assert main(["recover", str(path), "--format", "srt", "--keep"]) == 0
    out = capsys.readouterr().out
    assert "Alice: Fine, thanks." in out and "Speaker 1: Hello there. How are you?" in out


def test_old_journals_and_bad_speaker_fields_still_recover(tmp_path):
    path = tmp_path / "old.jsonl"
    lines = [
        {"type": "header", "version": 1, "created": "2026-11-30T10:00:00+00:00", "sources": [CALL]},
        {"type": "text", "source": CALL, "start": 0.0, "end": 1.0, "text": "old line"},  # before issue 38
        {"type": "text", "source": CALL, "start": 1.0, "end": 2.0, "text": " odd", "speaker": 7},
        {"type": "speaker_name", "speaker": 3, "name": "x"},  # garbage: skipped
        {"type": "speaker_name", "speaker": "Speaker 1"},  # no name: back to the id
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    t = recover(path)
    assert [(s.text, s.speaker) for s in t.segments] == [("old line odd", "")]
    assert t.speaker_names == {}


# ------------------------------------------------------------------------ --speakers flags
def _parser():
    from captioner.commands import listen, transcribe

    parser = argparse.ArgumentParser(prog="captioner")
    sub = parser.add_subparsers(dest="command")
    listen.add_parser(sub)
    transcribe.add_parser(sub)
    return parser


@pytest.mark.parametrize("command", [["listen"], ["transcribe", "a.wav"]])
def test_speakers_flag_parses_auto_off_and_n(command):
    parser = _parser()
    assert parser.parse_args(command).speakers == AUTO
    assert parser.parse_args(command + ["--speakers", "off"]).speakers == OFF
    assert parser.parse_args(command + ["--speakers", "3"]).speakers == SpeakerOptions(True, 3)
    assert parser.parse_args(command + ["--speakers", "AUTO"]).speakers == AUTO


@pytest.mark.parametrize("command", [["listen"], ["transcribe", "a.wav"]])
@pytest.mark.parametrize("bad", ["many", "-1", "999", "2.5"])
def test_a_bad_speakers_value_is_a_usage_error(command, bad, capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args(command + ["--speakers", bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --speakers" in err and "Traceback" not in err
    assert "auto, off or a number" in err or "1 to 20 speakers" in err


def test_speakers_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["listen", "--help"])
    assert "--speakers 2" in " ".join(capsys.readouterr().out.split())


class ScriptedTracker(SpeakerTracker):
    """Labels final text by time: Speaker 1 before ``change_s``, Speaker 2 after."""

    def __init__(self, options, sample_rate=16000, registry=None, change_s=0.25):
        super().__init__(options, sample_rate, registry)
        self.change_s = change_s

    def label(self, events):
        from dataclasses import replace

        return [replace(e, speaker="Speaker 1" if e.start < self.change_s else "Speaker 2")
                if isinstance(e, TextDelta) and e.final and e.text else e for e in events]


def _tone_file(path, seconds=0.5):
    t = np.arange(int(seconds * 16000)) / 16000
    sf.write(path, (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), 16000)
    return str(path)


def test_transcribe_labels_the_file_through_its_tracker(tmp_path, monkeypatch, capsys):
    from captioner.cli import main
    from captioner.commands import transcribe
    from captioner.engine import turn_models
    from tests.audio_fakes import FakeBackend

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(turn_models, "preload", lambda *a, **k: None)
    monkeypatch.setattr(transcribe, "open_backend", lambda args: FakeBackend())
    made = []

    def make(options, kind, rate=16000, registry=None):
        made.append((options, kind, rate))
        return ScriptedTracker(options, rate, registry) if options.enabled else None

    monkeypatch.setattr(transcribe, "make_tracker", make)
    monkeypatch.setattr(transcribe, "new_registry", lambda options: None)  # no speaker model
    audio = _tone_file(tmp_path / "call.wav")
    assert main(["transcribe", audio, "--format", "txt", "--speakers", "2", "--sounds", "off"]) == 0  # a tone: no ringtone
    out = capsys.readouterr().out
    assert made == [(SpeakerOptions(True, 2), "file", 16000)]
    assert out == "[00:00:00] Speaker 1: w1 w2 w3\n[00:00:00] Speaker 2: w4 w5\n"
    assert main(["transcribe", audio, "--format", "txt", "--speakers", "off", "--sounds", "off"]) == 0
    assert capsys.readouterr().out == "[00:00:00] w1 w2 w3 w4 w5\n" and made[-1][0] == OFF


def test_listen_prints_and_saves_speaker_labels(tmp_path, monkeypatch):
    from captioner.commands import listen
    from captioner.engine import live as engine_live
    from tests.audio_fakes import FakeBackend

    monkeypatch.setattr(listen, "_load_backend", lambda args: FakeBackend(batch_size=2))
    kinds = []

    def make(options, kind, rate=16000, registry=None):
        kinds.append((options, kind))
        return ScriptedTracker(options, rate, registry) if options is not None and options.applies_to(kind) else None

    monkeypatch.setattr(engine_live, "make_tracker", make)
    monkeypatch.setattr(engine_live, "new_registry", lambda options: None)  # no speaker model
    target = tmp_path / "out.srt"
    out, err = io.StringIO(), io.StringIO()
    args = _parser().parse_args(["listen", "--file", _tone_file(tmp_path / "call.wav"), "--fast", "-o", str(target),
                                 "--journal-dir", str(tmp_path / "journal"), "--speakers", "4", "--sounds", "off"])
    assert listen.run(args, out, err) == 0, err.getvalue()
    assert kinds == [(SpeakerOptions(True, 4), "file")]
    printed = out.getvalue().splitlines()
    assert printed[0] == "[Speaker 1] w1" and printed[-1] == "[Speaker 2] w5"
    assert [c.content for c in srt.parse(target.read_text(encoding="utf-8"))] == [
        "Speaker 1: w1 w2 w3", "Speaker 2: w4 w5"]


def test_listen_loads_no_speaker_model_when_only_the_microphone_speaks(tmp_path, monkeypatch):
    from captioner.audio.filesource import FileSource
    from captioner.commands import listen
    from captioner.engine import live as engine_live
    from tests.audio_fakes import FakeBackend

    monkeypatch.setattr(listen, "_load_backend", lambda args: FakeBackend(batch_size=2))
    registries = []
    monkeypatch.setattr(engine_live, "new_registry", lambda options: registries.append(options))
    real_build = listen._build_sources

    def as_microphone(args, rate):
        sources = real_build(args, rate)
        for s in sources:
            s.kind = "microphone"  # a file standing in for the microphone
        return sources

    monkeypatch.setattr(listen, "_build_sources", as_microphone)
    out, err = io.StringIO(), io.StringIO()
    args = _parser().parse_args(["listen", "--file", _tone_file(tmp_path / "mic.wav"), "--fast",
                                 "--journal-dir", str(tmp_path / "journal")])
    assert args.speakers == AUTO
    assert listen.run(args, out, err) == 0, err.getvalue()
    assert registries == [] and out.getvalue().splitlines()[0] == "[mic.wav] w1"
