"""Issue 13, message wording: one piece of advice per message, examples that fit the file, no
"..", no advice that cannot apply (a monitor source is never "used by another program")."""

from __future__ import annotations

import pytest

from captioner.audio.source import SourceError
from captioner.engine.qt_worker import describe_error

pytestmark = pytest.mark.gui


def test_a_file_that_is_not_audio_is_refused_at_start_with_one_piece_of_advice(make_window, tmp_path):
    win, record = make_window()
    bogus = tmp_path / "notes.wav"
    bogus.write_bytes(b"this is not audio at all " * 40)
    win.sources.file_edit.setText(str(bogus))
    win.start()
    text, severity, code = win.messages.messages()[-1]
    assert code == "config" and "notes.wav" in text and "not an audio file" in text
    assert "m4a" not in text and text.lower().count("convert") == 1
    assert "ffmpeg -i" in text and "notes.wav" in text.split("ffmpeg -i", 1)[1]
    assert not record["pipelines"]


def test_file_read_errors_from_the_engine_advise_once():
    detail = "cannot read /x/talk.wav as audio (Format not recognised); use WAV, FLAC or OGG, or convert it with ffmpeg/sox"
    text, code = describe_error(SourceError(detail), "sources", ["file"])
    assert code == "file_error"
    assert "m4a" not in text and text.lower().count("convert") == 1 and ".." not in text


def test_a_system_audio_error_reads_cleanly():
    detail = ("no system-audio source found. No PulseAudio/PipeWire monitor source was found; "
              "`pactl list short sources` must show a '.monitor' source.")
    text, code = describe_error(SourceError(detail), "sources", ["system"])
    assert code == "device_error"
    assert ".." not in text and "another program" not in text
    assert "Refresh devices" in text


def test_a_microphone_error_still_says_check_the_device():
    text, _ = describe_error(SourceError("no microphone found"), "sources", ["microphone"])
    assert "another program" in text and ".." not in text
