"""Device choice with a fake sounddevice: rates/channels a device accepts, monitor listing per OS."""

import json

import pytest

from captioner.audio import devices as D
from captioner.audio import pulse as P
from captioner.audio.devices import InputDevice, PulseInventory, PulseSourceInfo
from captioner.audio.source import SourceError
from tests.audio_fakes import FakeDevice, FakeSD, device_table


def _dev(sd, name):
    return next(d for d in D.portaudio_inputs(sd) if d.name == name)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("USB mic 48k only", (48000, 1)),  # 16 kHz refused: its own rate, still mono
        ("Webcam mic 44.1k only", (44100, 2)),  # stereo-only: never mono, never more than 2
        ("Mono headset", (16000, 1)),
        ("default", (16000, 1)),  # 32-channel "default": opened mono, not with 32 channels
        ("HDMI 5.1 capture", (48000, 6)),  # only all 6 channels: downmixed at the edge
    ],
)
def test_choose_settings(name, expected):
    sd = FakeSD(device_table())
    assert D.choose_settings(_dev(sd, name), sd) == expected


def test_choose_settings_never_asks_more_channels_than_the_device_has():
    sd = FakeSD(device_table())
    for d in D.portaudio_inputs(sd):
        sd.checks.clear()
        D.choose_settings(d, sd)
        assert all(ch <= d.channels for _, ch, _ in sd.checks)


def test_choose_settings_error_names_device():
    sd = FakeSD([FakeDevice("Broken", 2, 48000.0, rates={11025})])
    with pytest.raises(SourceError, match="Broken"):
        D.choose_settings(D.portaudio_inputs(sd)[0], sd)


INV = PulseInventory(
    (
        PulseSourceInfo("alsa_output.pci.analog-stereo.monitor", "Monitor of Built-in Audio", "alsa_output.pci.analog-stereo", 2, 48000),
        PulseSourceInfo("meeting.monitor", "Monitor of Null Output", "meeting", 2, 44100),
        PulseSourceInfo("alsa_input.usb-mic", "USB Microphone", None, 1, 48000),
    ),
    default_sink="meeting",
    default_source="alsa_input.usb-mic",
    via="test",
)


def _linux_sd():
    return FakeSD([FakeDevice("HDA Intel: ALC (hw:0,0)", 2, 44100.0), FakeDevice("pulse", 32, 44100.0), FakeDevice("default", 32, 44100.0)], default_input=2)


def test_linux_lists_monitors_separately_default_sink_first():
    sd = _linux_sd()
    system = D.list_system_sources(sd, INV, "linux")
    mics = D.list_microphones(sd, INV, "linux")
    assert [d.name for d in system] == ["meeting.monitor", "alsa_output.pci.analog-stereo.monitor"]
    assert system[0].is_default and not system[1].is_default
    assert all(d.pulse_source == d.name and d.index == 1 for d in system)  # opened through "pulse"
    assert not any(".monitor" in d.name for d in mics)
    assert mics[0].name == "alsa_input.usb-mic" and mics[0].is_default
    assert sum(d.is_default for d in mics) == 1


def test_resolve_system_by_sink_name_and_never_a_microphone():
    sd = _linux_sd()
    assert D.resolve_system("alsa_output.pci.analog-stereo", sd, INV).name.endswith("analog-stereo.monitor")
    assert D.resolve_system(None, sd, INV).name == "meeting.monitor"
    with pytest.raises(SourceError, match="available"):
        D.resolve_system("usb-mic", sd, INV)  # the microphone is not a system-audio source
    empty = PulseInventory((INV.sources[2],), None, None, "test")
    with pytest.raises(SourceError, match="monitor source"):
        D.resolve_system(None, sd, empty)


def test_resolve_microphone_by_index_name_and_part():
    sd = FakeSD(device_table())
    inv = PulseInventory()
    assert D.resolve_microphone(None, sd, inv).name == "USB mic 48k only"
    assert D.resolve_microphone(2, sd, inv).name == "Mono headset"
    assert D.resolve_microphone("webcam", sd, inv).name == "Webcam mic 44.1k only"
    with pytest.raises(SourceError, match="Mono headset"):
        D.resolve_microphone("nonexistent", sd, inv)


def test_macos_blackhole_and_help():
    sd = FakeSD([FakeDevice("MacBook Pro Microphone", 1, 48000.0), FakeDevice("BlackHole 2ch", 2, 48000.0)], hostapis=["Core Audio"])
    system = D.list_system_sources(sd, platform="darwin")
    assert [d.name for d in system] == ["BlackHole 2ch"] and system[0].is_default
    assert [d.name for d in D.list_microphones(sd, platform="darwin")] == ["MacBook Pro Microphone"]
    sd2 = FakeSD([FakeDevice("MacBook Pro Microphone", 1, 48000.0)])
    assert D.list_system_sources(sd2, platform="darwin") == []
    assert "BlackHole" in D.system_audio_help("darwin")


def test_windows_portaudio_loopback_devices():
    sd = FakeSD(
        [FakeDevice("Microphone (Realtek)", 2, 48000.0), FakeDevice("Speakers (Realtek) [Loopback]", 2, 48000.0)],
        hostapis=["Windows WASAPI"],
    )
    system = D.list_system_sources(sd, platform="win32")
    assert [d.name for d in system] == ["Speakers (Realtek) [Loopback]"]
    assert system[0].kind == "system" and system[0].index == 1


def test_pactl_json_and_short_parsing(monkeypatch):
    sources = [
        {"name": "meeting.monitor", "description": "Monitor of Null Output", "monitor_of_sink": "meeting", "sample_specification": "s16le 2ch 44100Hz"},
        {"name": "virtmic", "description": "Virtual Source", "monitor_of_sink": "n/a", "sample_specification": "float32le 1ch 48000Hz"},
    ]
    info = {"default_sink_name": "meeting", "default_source_name": "virtmic"}
    monkeypatch.setattr(P, "_pactl", lambda *a: json.dumps(sources if "sources" in a else info))
    inv = P._inventory_pactl_json()
    assert inv.default_monitor == "meeting.monitor"
    assert inv.sources[1] == PulseSourceInfo("virtmic", "Virtual Source", None, 1, 48000)

    short = "0\tmeeting.monitor\tmodule-null-sink.c\ts16le 2ch 44100Hz\tIDLE\n2\tvirtmic\tmodule-virtual-source.c\tfloat32le 2ch 44100Hz\tIDLE\n"
    text_info = "Server Name: pulseaudio\nDefault Sink: meeting\nDefault Source: virtmic\n"
    monkeypatch.setattr(P, "_pactl", lambda *a: short if "short" in a else text_info)
    inv = P._inventory_pactl_short()
    assert [s.is_monitor for s in inv.sources] == [True, False]
    assert inv.default_sink == "meeting" and inv.default_monitor == "meeting.monitor"


def test_no_sound_server_gives_empty_inventory(monkeypatch):
    monkeypatch.setattr(P, "_inventory_pulsectl", lambda: (_ for _ in ()).throw(RuntimeError("no server")))
    monkeypatch.setattr(P.shutil, "which", lambda name: None)
    assert D.pulse_inventory() == PulseInventory()


def test_device_label():
    d = InputDevice("system", "meeting.monitor", 1, "PulseAudio", 2, 44100.0, True, "meeting.monitor", "Monitor of Null Output")
    assert d.label() == "meeting.monitor (Monitor of Null Output, PulseAudio, 2 ch, 44.1 kHz)"
