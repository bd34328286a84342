"""System audio ("what the meeting sounds like"): the right loopback path for each OS.

* Linux: the sink monitor chosen in :func:`captioner.audio.devices.list_system_sources`
  (default: the default sink's monitor), opened through the ALSA ``pulse`` device with
  ``PULSE_SOURCE`` set for that stream only. Open it before playback starts: an idle
  monitor delivers its first audio in bursts (DESIGN section 5).
* Windows: a PortAudio "[Loopback]" device when the PortAudio build has them, else the
  ``soundcard`` package's WASAPI loopback recorder (:class:`SoundcardLoopbackSource`).
* macOS: a loopback driver's input device (BlackHole, Loopback).

When no system-audio source exists, :func:`open_system_audio` raises
:class:`SourceError` with installation help; it never falls back to a microphone.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

from captioner.audio.device_source import DeviceSource
from captioner.audio.devices import InputDevice, resolve_system
from captioner.audio.source import MODEL_RATE, AudioSource, SourceError

#: Default label of the system-audio source.
SYSTEM_LABEL = "Meeting"


class SystemAudioSource(DeviceSource):
    """A system-audio device opened through PortAudio (monitor, loopback or loopback driver).

    Args:
        device: an :class:`InputDevice` of kind "system".
        label: "Meeting" by default.
        Other arguments as :class:`~captioner.audio.device_source.DeviceSource`.

    Raises:
        SourceError: ``device`` is not a system-audio device (a microphone is refused,
            so system audio never silently records the microphone).
    """

    kind = "system"

    def __init__(self, device: InputDevice, label: str = SYSTEM_LABEL, **kwargs: Any) -> None:
        if device.kind != "system":
            raise SourceError(f"{device.name!r} is a microphone, not a system-audio source")
        if device.index is None:
            raise SourceError(
                f"system-audio source {device.name!r} has no PortAudio device to open it through; "
                "install the ALSA plugin for your sound server (libasound2-plugins or pipewire-alsa)"
            )
        super().__init__(device, label, **kwargs)


class SoundcardLoopbackSource(AudioSource):
    """Windows WASAPI loopback through the ``soundcard`` package (when PortAudio has none).

    A reader thread records ``block_frames`` at a time from the loopback "microphone"
    of an output device and pushes them into the queue like a PortAudio callback.

    Args:
        device: a "system" :class:`InputDevice` whose ``extra["soundcard_id"]`` is set.
        label: source label.
        target_rate: delivered rate in Hz.
        native_rate: rate (Hz) requested from WASAPI (the mix format is usually 48 kHz).
        block_frames: frames per read (480 = 10 ms at 48 kHz).
    """

    kind = "system"

    def __init__(
        self,
        device: InputDevice,
        label: str = SYSTEM_LABEL,
        target_rate: int = MODEL_RATE,
        native_rate: int = 48000,
        block_frames: int = 480,
        max_queue_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(label, target_rate, max_queue_s, clock)
        self.device = device
        self._rate = native_rate
        self._block = block_frames
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def description(self) -> str:
        """The output device's name."""
        return self.device.name

    def _open(self) -> tuple[int, int]:
        try:
            import soundcard

            mic = soundcard.get_microphone(self.device.extra["soundcard_id"], include_loopback=True)
            channels = max(1, int(getattr(mic, "channels", 2) or 2))
            recorder = mic.recorder(samplerate=self._rate, channels=channels, blocksize=self._block)
            recorder.__enter__()
        except Exception as exc:  # noqa: BLE001
            raise SourceError(f"cannot record the output of {self.device.name!r} (WASAPI loopback): {exc}") from exc
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, args=(recorder,), name="captioner-loopback", daemon=True)
        self._thread.start()
        return self._rate, channels

    def _run(self, recorder: Any) -> None:
        try:
            while not self._halt.is_set():
                self._push(np.asarray(recorder.record(numframes=self._block), dtype=np.float32))
        except Exception as exc:  # noqa: BLE001
            self._fail(f"system audio from {self.device.name!r} stopped: {exc}")
        finally:
            try:
                recorder.__exit__(None, None, None)
            except Exception:  # noqa: BLE001
                pass

    def _close(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None


def open_system_audio(
    source: InputDevice | str | None = None, label: str = SYSTEM_LABEL, sd: Any = None, **kwargs: Any
) -> AudioSource:
    """The system-audio source for a user choice (not started yet).

    Args:
        source: an :class:`InputDevice`, a monitor/loopback name or part of one, a
            sink name (its monitor), or ``None`` for the default sink's monitor; with
            ``None`` a sound-server source follows the default output when it changes
            (:mod:`captioner.audio.recovery`), otherwise it stays pinned to its source.
        label: source label, "Meeting" by default.
        sd: sounddevice module or a stand-in.
        kwargs: ``target_rate``, ``max_queue_s``, ``clock``.

    Raises:
        SourceError: no system-audio source exists (with OS-specific help) or none
            matches ``source``. Never returns a microphone.
    """
    device = source if isinstance(source, InputDevice) else resolve_system(source, sd)
    if device.index is None and "soundcard_id" in device.extra:
        return SoundcardLoopbackSource(device, label, **kwargs)
    follow = source is None or source == "" or source == "default"
    return SystemAudioSource(device, label, sd=sd, follow_default=follow, **kwargs)
