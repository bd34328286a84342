"""PortAudio access (``sounddevice``): the module itself, its input devices, a format a device
accepts, and the per-stream ``PULSE_SOURCE`` used to open sound-server sources.

Every function takes an optional ``sd`` argument (the ``sounddevice`` module or a
stand-in with ``query_devices``, ``query_hostapis``, ``check_input_settings``,
``default``) so tests run without audio hardware.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from captioner.audio.device_info import InputDevice
from captioner.audio.source import MODEL_RATE, SourceError

log = logging.getLogger(__name__)

#: Proplist key of the recording stream's tag (see :class:`pulse_source_env`).
STREAM_TAG_PROPERTY = "captioner.stream"


def stream_tag(source: Any, gen: int) -> str:
    """The ``captioner.stream`` proplist value of ``source``'s stream number ``gen``."""
    return f"{os.getpid()}-{id(source):x}-{gen}"


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
    stream is open (the UI's Start button, ``captioner devices``). Skipped (and
    logged) while an abandoned stream call is still blocked
    (:func:`captioner.audio.abandon.abandoned`): ``Pa_Terminate`` would block on it too.
    """
    from captioner.audio.abandon import abandoned

    stuck = abandoned()
    if stuck:
        log.warning("PortAudio not re-initialised: %s still blocked on the sound server", ", ".join(stuck))
        return
    sd = _sounddevice(sd)
    terminate, initialize = getattr(sd, "_terminate", None), getattr(sd, "_initialize", None)
    if terminate is not None and initialize is not None:
        terminate()
        initialize()


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
    """Context manager: set ``PULSE_SOURCE`` (and ``PULSE_PROP``) while a stream on the ALSA
    ``pulse`` device opens and starts.

    libpulse reads both variables when the ALSA plugin creates its context, i.e.
    during ``Pa_OpenStream``, so each stream gets its own source although the
    variables are process-wide; a lock serialises concurrent opens. ``tag`` is put
    in the stream's proplist as ``captioner.stream=TAG`` (the server shows it on the
    source-output), which is how :mod:`captioner.audio.pulse_watch` finds this
    stream again to see where the server has put it.

    Args:
        source: the sound-server source name, or ``None`` (nothing is set).
        tag: a token without spaces, or ``None``.
    """

    _lock = threading.RLock()

    def __init__(self, source: str | None, tag: str | None = None) -> None:
        self.source = source
        self.tag = tag
        self._old: dict[str, str | None] = {}

    def __enter__(self) -> "pulse_source_env":
        if self.source:
            self._lock.acquire()
            values = {"PULSE_SOURCE": self.source}
            if self.tag:  # added to the user's own PULSE_PROP, if any
                own = os.environ.get("PULSE_PROP", "")
                values["PULSE_PROP"] = f"{own} {STREAM_TAG_PROPERTY}={self.tag}".strip()
            for key, value in values.items():
                self._old[key] = os.environ.get(key)
                os.environ[key] = value
        return self

    def __exit__(self, *exc: object) -> None:
        if self.source:
            for key, old in self._old.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
            self._old.clear()
            self._lock.release()


__all__ = [
    "STREAM_TAG_PROPERTY",
    "choose_settings",
    "portaudio_inputs",
    "pulse_device_index",
    "pulse_source_env",
    "rescan",
]
