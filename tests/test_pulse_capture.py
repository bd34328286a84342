"""Integration: real PulseAudio, real speech, the project's own sources and the default backend.

The test starts its own PulseAudio daemon (``tests/pulse_server.py``: null sink
``meeting`` = system audio, virtual microphone ``virtmic``), plays espeak-ng speech
into the meeting sink with ``paplay`` and other speech into the virtual microphone at
the same time, captures both at once through MicrophoneSource and the system-audio
source, decodes them with the default backend in one LiveCaptioner, and checks that
each transcript has its own words under its own label.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess

import numpy as np
import pytest
import soundfile as sf

from tests.pulse_server import PulseServer, missing_tools

MEETING = "The quarterly budget meeting starts on Monday morning in the large conference room."
YOU = "Please remember to send the project report to the whole team before Friday."

pytestmark = [
    pytest.mark.slow,
    pytest.mark.pulse,
    pytest.mark.skipif(
        bool(missing_tools()) or shutil.which("espeak-ng") is None,
        reason=f"needs pulseaudio, pactl, paplay and espeak-ng (missing: {missing_tools() or ['espeak-ng']}); "
        "CI installs pulseaudio, pulseaudio-utils, espeak-ng, libportaudio2, libasound2-plugins",
    ),
]


def _words(text: str) -> set[str]:
    return set(re.sub(r"[^a-z ]+", " ", text.lower()).split())


def _speech(tmp_path, name: str, text: str, lead_s: float = 0.3, tail_s: float = 1.5):
    raw = tmp_path / f"{name}_raw.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(raw), text], check=True)
    x, rate = sf.read(raw, dtype="float32")
    out = tmp_path / f"{name}.wav"
    # silence around the speech: the last words are still in the server's buffers when paplay exits
    sf.write(out, np.concatenate([np.zeros(int(lead_s * rate), np.float32), x, np.zeros(int(tail_s * rate), np.float32)]), rate)
    return out


@pytest.fixture(scope="module")
def pulse():
    server = PulseServer().start()
    from captioner.audio.devices import rescan

    rescan()  # PortAudio lists the ALSA "pulse" device only while a server answers
    yield server
    server.stop()
    rescan()


@pytest.fixture(scope="module")
def backend():
    from captioner.asr import load_backend

    b = load_backend("default")
    yield b
    b.close()


def test_devices_lists_monitor_and_virtual_mic_separately(pulse):
    from captioner.audio import devices as D

    system = D.list_system_sources()
    mics = D.list_microphones()
    assert system[0].name == "meeting.monitor" and system[0].is_default  # the default sink's monitor
    assert {d.name for d in system} == {"meeting.monitor", "micsink.monitor"}
    assert "virtmic" in {d.name for d in mics}
    assert not any(d.name.endswith(".monitor") for d in mics)


def test_mic_and_system_audio_at_once_are_transcribed_and_labelled(pulse, backend, tmp_path):
    from captioner.audio.microphone import MicrophoneSource
    from captioner.audio.system import open_system_audio
    from captioner.engine.live import LiveCaptioner
    from captioner.events import Notice, Stats, TextDelta

    meeting_wav = _speech(tmp_path, "meeting", MEETING)
    you_wav = _speech(tmp_path, "you", YOU)
    events = []
    mic = MicrophoneSource("virtmic", target_rate=backend.sample_rate)
    system = open_system_audio(None, target_rate=backend.sample_rate)  # default: meeting.monitor
    assert system.device.pulse_source == "meeting.monitor" and mic.device.pulse_source == "virtmic"
    live = LiveCaptioner(backend, [mic, system], events.append)
    live.start()  # open the streams before playback (an idle monitor delivers bursts)
    players = [pulse.play("meeting", meeting_wav), pulse.play("micsink", you_wav)]
    for p in players:
        assert p.wait(60) == 0
    assert live.stop(drain=True, timeout=300)

    def text(label):
        return " ".join(e.text for e in events if isinstance(e, TextDelta) and e.final and e.source == label)

    heard_meeting, heard_you = _words(text("Meeting")), _words(text("You"))
    key_meeting = {"quarterly", "budget", "meeting", "monday", "morning", "conference", "room"}
    key_you = {"remember", "send", "project", "report", "team", "friday"}
    assert len(key_meeting & heard_meeting) >= 5, text("Meeting")
    assert len(key_you & heard_you) >= 4, text("You")
    assert not (key_meeting - {"meeting"}) & heard_you, "meeting speech leaked into the microphone"
    assert not key_you & heard_meeting, "microphone speech leaked into system audio"
    assert not [e for e in events if isinstance(e, Notice) and e.code in ("device_lost", "backend_error")]
    stats = live.source_stats()
    for label in ("You", "Meeting"):
        assert stats[label].dropped_blocks == 0
        assert stats[label].samples_out > 3 * 16000
    last = {e.source: e for e in events if isinstance(e, Stats)}
    assert last["Meeting"].overflows == stats["Meeting"].overflows


def test_listen_system_captions_the_default_sink(pulse, backend, tmp_path, monkeypatch):
    from captioner.commands import listen

    wav = _speech(tmp_path, "sys", MEETING)
    monkeypatch.setattr(listen, "_load_backend", lambda args: backend)
    import argparse

    parser = argparse.ArgumentParser()
    listen.add_parser(parser.add_subparsers(dest="command"))
    out, err = io.StringIO(), io.StringIO()
    args = parser.parse_args(["listen", "--system", "--duration", "10", "-o", str(tmp_path / "t.srt")])
    player = None

    class _Out(io.StringIO):
        """Starts playback when listen announces it is capturing."""

        def write(self, s):
            nonlocal player
            if player is None and s.startswith("listening:"):
                player = pulse.play("@DEFAULT_SINK@", wav)
            return super().write(s)

    err = _Out()
    assert listen.run(args, out, err) == 0, err.getvalue()
    assert player is not None and player.wait(30) == 0
    printed = out.getvalue()
    # system audio is split into speakers (issue 38): one voice is one speaker, every line labelled
    labels = re.findall(r"^\[([^\]]+)\]", printed, flags=re.M)
    assert labels and set(labels) == {"Speaker 1"}, printed
    assert len(_words(printed) & {"quarterly", "budget", "monday", "morning", "conference", "room"}) >= 4, printed
    srt_text = (tmp_path / "t.srt").read_text(encoding="utf-8")
    assert "budget" in srt_text.lower()  # one source: cues carry no label (the live lines above do)
