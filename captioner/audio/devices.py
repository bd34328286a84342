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
stand-in with ``query_devices``, ``query_hostapis``, ``check_input_settings``,
``default``) so tests run without audio hardware.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from captioner.audio.source import MODEL_RATE, SourceError

#: Input-device names that are loopback drivers on macOS (and virtual cables elsewhere).
LOOPBACK_DRIVER_PATTERN = re.compile(r"blackhole|loopback|soundflower|vb-audio|cable output|stereo mix", re.I)

#: How long (s) to wait for the sound server before assuming there is none.
PULSE_TIMEOUT_S = 1.5


@dataclass(frozen=True)
class InputDevice:
    """One capturable input, as listed for the user and as opened by a source.

    Attributes:
        kind: ``"microphone"`` or ``"system"``.
        name: what the user sees and may pass on the command line (a PortAudio
            device name or a PulseAudio/PipeWire source name).
        index: PortAudio device index to open, or ``None`` for a non-PortAudio
            path (the soundcard loopback on Windows).
        hostapi: PortAudio host API name ("ALSA", "Windows WASAPI", "Core Audio"),
            or "PulseAudio"/"soundcard" for sound-server and soundcard entries.
        channels: input channels the device offers (0 when unknown).
        default_rate: the device's default rate in Hz (0.0 when unknown).
        is_default: the pre-selected entry of its kind.
        pulse_source: the PulseAudio/PipeWire source opened through the ALSA
            ``pulse`` device (``PULSE_SOURCE``), or ``None``.
        description: longer human text ("Monitor of Built-in Audio").
        extra: backend-specific data (the soundcard speaker id on Windows).
    """

    kind: str
    name: str
    index: int | None
    hostapi: str = ""
    channels: int = 0
    default_rate: float = 0.0
    is_default: bool = False
    pulse_source: str | None = None
    description: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def label(self) -> str:
        """One line for listings: ``name (description, channels, rate)``."""
        bits = [b for b in (self.description if self.description != self.name else "", self.hostapi) if b]
        if self.channels:
            bits.append(f"{self.channels} ch")
        if self.default_rate:
            bits.append(f"{self.default_rate / 1000:g} kHz")
        return f"{self.name} ({', '.join(bits)})" if bits else self.name


@dataclass(frozen=True)
class PulseSourceInfo:
    """A PulseAudio/PipeWire source as the sound server reports it.

    Attributes:
        name: source name (``alsa_output.pci-0000_00_1f.3.analog-stereo.monitor``).
        description: human name ("Monitor of Built-in Audio Analog Stereo").
        monitor_of: name of the sink it monitors, or ``None`` for a real input.
        channels: channel count (0 when unknown).
        rate: sample rate in Hz (0 when unknown).
    """

    name: str
    description: str = ""
    monitor_of: str | None = None
    channels: int = 0
    rate: int = 0

    @property
    def is_monitor(self) -> bool:
        """True for a sink monitor (system audio)."""
        return self.monitor_of is not None


@dataclass(frozen=True)
class PulseInventory:
    """Sources of the running sound server plus its defaults (empty when there is none).

    Attributes:
        sources: every source, monitors included.
        default_sink: name of the default sink, or ``None``.
        default_source: name of the default source, or ``None``.
        via: which tool answered: "pulsectl", "pactl-json", "pactl" or "" (none).
    """

    sources: tuple[PulseSourceInfo, ...] = ()
    default_sink: str | None = None
    default_source: str | None = None
    via: str = ""

    @property
    def default_monitor(self) -> str | None:
        """The default sink's monitor source name (system audio pre-selection)."""
        for s in self.sources:
            if s.is_monitor and s.monitor_of == self.default_sink:
                return s.name
        monitors = [s.name for s in self.sources if s.is_monitor]
        return monitors[0] if monitors else None


def _sounddevice(sd: Any = None) -> Any:
    if sd is not None:
        return sd
    try:
        import sounddevice
    except OSError as exc:  # libportaudio missing
        raise SourceError(
            f"PortAudio is not available ({exc}); install it (Debian/Ubuntu: apt install libportaudio2)"
        ) from exc
    return sounddevice


def rescan(sd: Any = None) -> None:
    """Make PortAudio enumerate devices again (it only does so when it initialises).

    Needed after a device was plugged in or the sound server (re)started: the ALSA
    ``pulse`` device only appears while a server answers. Call it only while no
    stream is open (the UI's Start button, ``captioner devices``).
    """
    sd = _sounddevice(sd)
    terminate, initialize = getattr(sd, "_terminate", None), getattr(sd, "_initialize", None)
    if terminate is not None and initialize is not None:
        terminate()
        initialize()


# -- the sound server (Linux) ----------------------------------------------------------------------
def pulse_inventory(use_pulsectl: bool = True) -> PulseInventory:
    """List PulseAudio/PipeWire sources from the server itself.

    Tries pulsectl, then ``pactl -f json``, then ``pactl list short``. Never raises:
    with no server (or no tools) it returns an empty :class:`PulseInventory`.
    """
    if use_pulsectl:
        try:
            return _inventory_pulsectl()
        except Exception:  # noqa: BLE001 - pulsectl missing or no server: try pactl
            pass
    if shutil.which("pactl"):
        try:
            return _inventory_pactl_json()
        except Exception:  # noqa: BLE001 - old pactl without -f json
            pass
        try:
            return _inventory_pactl_short()
        except Exception:  # noqa: BLE001
            pass
    return PulseInventory()


def _inventory_pulsectl() -> PulseInventory:
    import pulsectl

    pulse = pulsectl.Pulse("captioner-devices", connect=False)
    try:
        pulse.connect(timeout=PULSE_TIMEOUT_S, autospawn=False)
        info = pulse.server_info()
        sinks = {s.index: s.name for s in pulse.sink_list()}
        out = []
        for s in pulse.source_list():
            monitor_of = sinks.get(s.monitor_of_sink) if s.monitor_of_sink != 0xFFFFFFFF else None
            if monitor_of is None and s.name.endswith(".monitor") and s.monitor_of_sink != 0xFFFFFFFF:
                monitor_of = s.name[: -len(".monitor")]
            out.append(PulseSourceInfo(s.name, s.description, monitor_of, s.channel_count, s.sample_spec.rate))
        return PulseInventory(tuple(out), info.default_sink_name, info.default_source_name, "pulsectl")
    finally:
        pulse.close()


def _pactl(*args: str) -> str:
    return subprocess.run(
        ["pactl", *args], capture_output=True, text=True, check=True, timeout=PULSE_TIMEOUT_S + 2
    ).stdout


def _parse_spec(spec: str) -> tuple[int, int]:
    """``"s16le 2ch 44100Hz"`` -> ``(2, 44100)``."""
    ch = re.search(r"(\d+)ch", spec or "")
    hz = re.search(r"(\d+)Hz", spec or "")
    return (int(ch.group(1)) if ch else 0, int(hz.group(1)) if hz else 0)


def _inventory_pactl_json() -> PulseInventory:
    sources = json.loads(_pactl("-f", "json", "list", "sources"))
    info = json.loads(_pactl("-f", "json", "info"))
    out = []
    for s in sources:
        monitor = s.get("monitor_of_sink")
        monitor = None if monitor in (None, "", "n/a") else str(monitor)
        ch, hz = _parse_spec(s.get("sample_specification", ""))
        out.append(PulseSourceInfo(s["name"], s.get("description", ""), monitor, ch, hz))
    return PulseInventory(tuple(out), info.get("default_sink_name"), info.get("default_source_name"), "pactl-json")


def _inventory_pactl_short() -> PulseInventory:
    out = []
    for line in _pactl("list", "short", "sources").splitlines():
        cols = line.split("\t")
        if len(cols) < 2:
            continue
        name = cols[1]
        ch, hz = _parse_spec(cols[3] if len(cols) > 3 else "")
        monitor = name[: -len(".monitor")] if name.endswith(".monitor") else None
        out.append(PulseSourceInfo(name, name, monitor, ch, hz))
    default_sink = default_source = None
    for line in _pactl("info").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Default Sink":
            default_sink = value.strip()
        elif key.strip() == "Default Source":
            default_source = value.strip()
    return PulseInventory(tuple(out), default_sink, default_source, "pactl")


# -- PortAudio -----------------------------------------------------------------------------------------
def _hostapi_names(sd: Any) -> list[str]:
    try:
        return [h["name"] for h in sd.query_hostapis()]
    except Exception:  # noqa: BLE001
        return []


def _default_input_index(sd: Any) -> int | None:
    try:
        dev = sd.default.device
        idx = dev[0] if isinstance(dev, (list, tuple)) else dev
        idx = int(idx) if idx is not None else -1
    except (TypeError, ValueError, AttributeError):
        idx = -1
    return idx if idx >= 0 else None


def portaudio_inputs(sd: Any = None) -> list[InputDevice]:
    """Every PortAudio device with input channels, as microphones (no filtering)."""
    sd = _sounddevice(sd)
    apis = _hostapi_names(sd)
    default = _default_input_index(sd)
    out = []
    for i, d in enumerate(sd.query_devices()):
        if int(d.get("max_input_channels", 0)) <= 0:
            continue
        api_i = d.get("hostapi", 0)
        out.append(
            InputDevice(
                kind="microphone",
                name=d["name"],
                index=d.get("index", i),
                hostapi=apis[api_i] if 0 <= api_i < len(apis) else "",
                channels=int(d["max_input_channels"]),
                default_rate=float(d.get("default_samplerate") or 0.0),
                is_default=d.get("index", i) == default,
            )
        )
    return out


def pulse_device_index(sd: Any = None) -> int | None:
    """PortAudio index of the ALSA ``pulse`` device (else ``default``), through which
    PulseAudio/PipeWire sources are opened; ``None`` when PortAudio has neither."""
    ins = portaudio_inputs(sd)
    for wanted in ("pulse", "default", "pipewire"):
        for d in ins:
            if d.name == wanted:
                return d.index
    return None


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


def choose_settings(device: InputDevice, sd: Any = None, preferred_rate: int = MODEL_RATE) -> tuple[int, int]:
    """A ``(rate, channels)`` the device accepts, asking PortAudio (``check_input_settings``).

    Tries mono first, then stereo, then all the device's channels (never more than
    it has); for each, the model rate first, then the device's default rate, then
    48 and 44.1 kHz. Extra channels are downmixed at the edge.

    Raises:
        SourceError: no combination is accepted (the message names the device).
    """
    sd = _sounddevice(sd)
    max_ch = device.channels or 2
    channels = []
    for ch in (1, min(2, max_ch), max_ch):
        if 1 <= ch <= max_ch and ch not in channels:
            channels.append(ch)
    rates = []
    for r in (preferred_rate, int(device.default_rate or 0), 48000, 44100):
        if r > 0 and r not in rates:
            rates.append(r)
    errors = []
    for ch in channels:
        for rate in rates:
            try:
                with pulse_source_env(device.pulse_source):
                    sd.check_input_settings(device=device.index, channels=ch, samplerate=rate, dtype="float32")
                return rate, ch
            except Exception as exc:  # noqa: BLE001 - PortAudioError or ValueError from sounddevice
                errors.append(f"{rate} Hz x{ch}: {exc}")
    raise SourceError(
        f"cannot open {device.name!r}: it accepts none of {rates} Hz with {channels} channel(s) "
        f"({'; '.join(errors[:3])}). Choose another device or check it is not in exclusive use."
    )


class pulse_source_env:
    """Context manager: set ``PULSE_SOURCE`` while a stream on the ALSA ``pulse`` device opens.

    libpulse reads ``PULSE_SOURCE`` when the ALSA plugin creates its context, i.e.
    during ``Pa_OpenStream``, so each stream gets its own source although the
    variable is process-wide; a lock serialises concurrent opens.
    """

    _lock = threading.RLock()

    def __init__(self, source: str | None) -> None:
        self.source = source
        self._old: str | None = None

    def __enter__(self) -> "pulse_source_env":
        if self.source:
            self._lock.acquire()
            self._old = os.environ.get("PULSE_SOURCE")
            os.environ["PULSE_SOURCE"] = self.source
        return self

    def __exit__(self, *exc: object) -> None:
        if self.source:
            if self._old is None:
                os.environ.pop("PULSE_SOURCE", None)
            else:
                os.environ["PULSE_SOURCE"] = self._old
            self._lock.release()


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
