"""Finding input devices: microphones and system-audio (loopback/monitor) sources, per OS.

* Microphones are PortAudio input devices (``sounddevice.query_devices``); on Linux
  with PulseAudio/PipeWire the sound server's own non-monitor sources are listed too,
  with their real names, and are opened through the ALSA ``pulse`` device.
* System audio on Linux is a sink *monitor* source listed by the sound server itself
  (pulsectl, else ``pactl -f json list sources``, else ``pactl list short sources``):
  PortAudio never shows monitors as devices, which is why other tools "lose" them.
  The default sink's monitor is pre-selected.
* Windows: WASAPI loopback. PortAudio builds with loopback support (PortAudio
  PR #672, after the 19.7 release) list "[Loopback]" input devices, which are used
  as they are; otherwise the maintained ``soundcard`` package (``include_loopback``)
  captures the output device (sounddevice issue #510: no sounddevice release
  exposes loopback yet).
* macOS has no loopback API: a loopback driver (BlackHole, Rogue Amoeba Loopback,
  Soundflower) shows up as an input device; :func:`system_audio_help` explains how
  to install one when none is found.

Every function takes an optional ``sd`` argument (the ``sounddevice`` module or a
stand-in, see :mod:`captioner.audio.portaudio`) so tests run without audio hardware.
The sound server's inventory lives in :mod:`captioner.audio.pulse`, PortAudio access
and format negotiation in :mod:`captioner.audio.portaudio`; their public names are
re-exported here.
"""

from __future__ import annotations

import re
import sys
from dataclasses import replace
from typing import Any

from captioner.audio.device_info import InputDevice
from captioner.audio.portaudio import (
    _sounddevice,
    choose_settings,
    portaudio_inputs,
    pulse_device_index,
    pulse_source_env,
    rescan,
)
from captioner.audio.pulse import PulseInventory, PulseSourceInfo, pulse_inventory
from captioner.audio.source import SourceError

#: Input-device names that are loopback drivers on macOS (and virtual cables elsewhere).
LOOPBACK_DRIVER_PATTERN = re.compile(r"blackhole|loopback|soundflower|vb-audio|cable output|stereo mix", re.I)


def _is_loopback_name(name: str) -> bool:
    return "[loopback]" in name.lower() or bool(LOOPBACK_DRIVER_PATTERN.search(name))


# -- public listings ---------------------------------------------------------------------------------------
def _pulse_device(
    src: "PulseSourceInfo", kind: str, pulse_idx: int | None, is_default: bool, description: str
) -> InputDevice:
    """A sound-server source as an input reached through PortAudio's ``pulse`` device."""
    return InputDevice(
        kind=kind,
        name=src.name,
        index=pulse_idx,
        hostapi="PulseAudio",
        channels=src.channels,
        default_rate=float(src.rate),
        is_default=is_default,
        pulse_source=src.name,
        description=description,
    )


def list_microphones(sd: Any = None, inventory: PulseInventory | None = None, platform: str | None = None) -> list[InputDevice]:
    """Microphones (real inputs), the default first.

    Args:
        sd: sounddevice module or a stand-in.
        inventory: sound-server sources (Linux); queried when ``None``.
        platform: ``sys.platform`` override for tests.

    Returns:
        PortAudio inputs that are not loopback devices, then (Linux) the sound
        server's non-monitor sources, opened through the ``pulse`` device. Exactly
        one entry has ``is_default`` when any device exists.

    Raises:
        SourceError: PortAudio itself is missing.
    """
    sd = _sounddevice(sd)
    platform = platform or sys.platform
    mics = [d for d in portaudio_inputs(sd) if not _is_loopback_name(d.name)]
    if platform.startswith("linux"):
        inv = pulse_inventory() if inventory is None else inventory
        pulse_idx = pulse_device_index(sd)
        if inv.sources and pulse_idx is not None:
            server = [
                _pulse_device(s, "microphone", pulse_idx, s.name == inv.default_source, s.description)
                for s in inv.sources
                if not s.is_monitor
            ]
            if any(d.is_default for d in server):
                mics = [replace(d, is_default=False) for d in mics]
            mics = server + mics
    if mics and not any(d.is_default for d in mics):
        mics[0] = replace(mics[0], is_default=True)
    return sorted(mics, key=lambda d: not d.is_default)


def list_system_sources(
    sd: Any = None, inventory: PulseInventory | None = None, platform: str | None = None
) -> list[InputDevice]:
    """System-audio (loopback/monitor) inputs, the pre-selected one first.

    Linux: every sink monitor from the sound server (default sink's monitor first).
    Windows: PortAudio "[Loopback]" devices, else soundcard loopback speakers.
    macOS: loopback-driver input devices (BlackHole, Loopback, Soundflower).
    Empty when none exists; :func:`system_audio_help` says what to do then.

    Raises:
        SourceError: PortAudio itself is missing.
    """
    sd = _sounddevice(sd)
    platform = platform or sys.platform
    if platform.startswith("linux"):
        inv = pulse_inventory() if inventory is None else inventory
        pulse_idx = pulse_device_index(sd)
        default = inv.default_monitor
        out = [
            _pulse_device(s, "system", pulse_idx, s.name == default, s.description or f"Monitor of {s.monitor_of}")
            for s in inv.sources
            if s.is_monitor
        ]
    else:
        out = [
            replace(d, kind="system", is_default=False)
            for d in portaudio_inputs(sd)
            if _is_loopback_name(d.name)
        ]
        if platform == "win32" and not any("[loopback]" in d.name.lower() for d in out):
            out += _soundcard_loopbacks()
        if out:
            out[0] = replace(out[0], is_default=True)
    return sorted(out, key=lambda d: not d.is_default)


def _soundcard_loopbacks() -> list[InputDevice]:
    """Windows output devices capturable through the soundcard package (WASAPI loopback)."""
    try:
        import soundcard  # optional, Windows only
    except Exception:  # noqa: BLE001 - not installed
        return []
    try:
        default = soundcard.default_speaker().name
        mics = soundcard.all_microphones(include_loopback=True)
    except Exception:  # noqa: BLE001
        return []
    return [
        InputDevice(
            kind="system",
            name=m.name,
            index=None,
            hostapi="soundcard (WASAPI loopback)",
            channels=int(getattr(m, "channels", 0) or 0),
            is_default=m.name == default,
            extra={"soundcard_id": m.id},
        )
        for m in mics
        if getattr(m, "isloopback", False)
    ]


def system_audio_help(platform: str | None = None) -> str:
    """What to do when no system-audio source exists, for this OS (one paragraph)."""
    platform = platform or sys.platform
    if platform == "darwin":
        return (
            "macOS cannot record system audio without a loopback driver. Install BlackHole "
            "(`brew install blackhole-2ch`, or https://existential.audio/blackhole), then in Audio MIDI Setup "
            "create a Multi-Output Device with your speakers and BlackHole 2ch and select it as the output; "
            "BlackHole then appears here as the system-audio source."
        )
    if platform == "win32":
        return (
            "No WASAPI loopback device was found. Install the optional package `soundcard` "
            "(pip install soundcard), which records any output device, or enable 'Stereo Mix' in "
            "Sound settings > Recording devices."
        )
    return (
        "No PulseAudio/PipeWire monitor source was found. Start the sound server (PipeWire with "
        "pipewire-pulse, or PulseAudio) and install `pulseaudio-utils` (pactl) and the ALSA plugin "
        "(Debian/Ubuntu: libasound2-plugins; PipeWire: pipewire-alsa); `pactl list short sources` must show "
        "a '.monitor' source."
    )


# -- resolving user choices --------------------------------------------------------------------------------
def _match(devices: list[InputDevice], spec: str | int | None, kind: str) -> InputDevice:
    if not devices:
        raise SourceError(
            f"no {'microphone' if kind == 'microphone' else 'system-audio source'} found"
            + ("" if kind == "microphone" else f". {system_audio_help()}")
        )
    if spec is None or spec == "" or spec == "default":
        return next((d for d in devices if d.is_default), devices[0])
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit()):
        idx = int(spec)
        for d in devices:
            if d.index == idx and d.pulse_source is None:
                return d
    else:
        text = str(spec)
        for test in (
            lambda d: d.name == text or d.pulse_source == text,
            lambda d: d.name.lower() == text.lower(),
            lambda d: text.lower() in d.name.lower() or text.lower() in d.description.lower(),
        ):
            hits = [d for d in devices if test(d)]
            if hits:
                return hits[0]
        if kind == "system" and not text.endswith(".monitor"):
            # "captioner listen --system meeting": the monitor of sink "meeting"
            hits = [d for d in devices if d.pulse_source == text + ".monitor"]
            if hits:
                return hits[0]
    names = ", ".join(repr(d.name) for d in devices[:12])
    raise SourceError(f"no {kind} matches {spec!r}; available: {names} (run `captioner devices`)")


def resolve_microphone(spec: str | int | None = None, sd: Any = None, inventory: PulseInventory | None = None) -> InputDevice:
    """The microphone for a user choice: ``None``/"default", a PortAudio index, an exact
    name, or a case-insensitive part of a name or description.

    Raises:
        SourceError: nothing matches (the message lists what exists).
    """
    return _match(list_microphones(sd, inventory), spec, "microphone")


def resolve_system(spec: str | None = None, sd: Any = None, inventory: PulseInventory | None = None) -> InputDevice:
    """The system-audio source for a user choice (``None`` = the default sink's monitor);
    a sink name selects that sink's monitor. Never returns a microphone.

    Raises:
        SourceError: no system-audio source exists (the message says how to get one)
            or nothing matches.
    """
    return _match(list_system_sources(sd, inventory), spec, "system")


__all__ = [
    "InputDevice",
    "PulseInventory",
    "PulseSourceInfo",
    "choose_settings",
    "list_microphones",
    "list_system_sources",
    "pulse_device_index",
    "pulse_inventory",
    "pulse_source_env",
    "rescan",
    "resolve_microphone",
    "resolve_system",
    "system_audio_help",
]

