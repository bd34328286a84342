"""The description of one capturable input (:class:`InputDevice`), shared by the listings and the sources."""

from __future__ import annotations

from dataclasses import dataclass, field


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



__all__ = ["InputDevice"]
