"""The sound server's own view (Linux PulseAudio/PipeWire): its sources, monitors and defaults.

PortAudio never shows sink monitors as devices, which is why other tools "lose" them,
so the sources are listed by the server itself: pulsectl, else
``pactl -f json list sources``, else ``pactl list short sources``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass

#: How long (s) to wait for the sound server before assuming there is none.
PULSE_TIMEOUT_S = 1.5

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
    """The server's sources through pulsectl, bounded by :data:`PULSE_TIMEOUT_S` (a frozen server).

    pulsectl's own ``connect(timeout=...)`` (24.12) waits the whole timeout even when the
    server answers at once: with it every device listing, hence every opening of system
    audio, took 1.5 s (measured 2026-12-02, a private PulseAudio 16). The call runs on a
    thread that is abandoned past the bound instead.
    """
    from captioner.audio.abandon import call_with_timeout

    return call_with_timeout(_inventory_pulsectl_now, PULSE_TIMEOUT_S, "pulse-inventory")


def _inventory_pulsectl_now() -> PulseInventory:
    import pulsectl

    pulse = pulsectl.Pulse("captioner-devices", connect=False)
    try:
        pulse.connect(autospawn=False)  # no timeout here: see _inventory_pulsectl
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


__all__ = ["PULSE_TIMEOUT_S", "PulseInventory", "PulseSourceInfo", "pulse_inventory"]
