"""A PortAudio input stream (``sounddevice.InputStream``) as an :class:`AudioSource`.

The stream is opened at a rate and channel count the device accepts
(:func:`captioner.audio.devices.choose_settings`) with ``blocksize=0`` (PortAudio's
own, variable block size: with the ALSA ``pulse`` device, fixed blocks of 1600 frames
lost audio, DESIGN section 5). The callback only copies ``indata`` into the source's
bounded queue and counts overflows; it takes no lock and never blocks. A PortAudio
error or an unexpected end of the stream is recorded in ``error`` for the watchdog.
Stopping uses ``abort()``, which never hangs (``stop()`` can, DESIGN section 5).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from captioner.audio.devices import InputDevice, _sounddevice, choose_settings, pulse_source_env
from captioner.audio.source import MODEL_RATE, AudioSource, SourceError


class DeviceSource(AudioSource):
    """Capture from one :class:`~captioner.audio.devices.InputDevice` through PortAudio.

    Args:
        device: the device to open (from :mod:`captioner.audio.devices`).
        label: source label ("You", "Meeting").
        sd: the sounddevice module or a stand-in (tests).
        target_rate: delivered rate (Hz), the backend's ``sample_rate``.
        max_queue_s: queue capacity in seconds (see :class:`AudioSource`).
        clock: monotonic clock (s).
    """

    def __init__(
        self,
        device: InputDevice,
        label: str,
        sd: Any = None,
        target_rate: int = MODEL_RATE,
        max_queue_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(label, target_rate, max_queue_s, clock)
        self.device = device
        self.kind = device.kind
        self._sd = sd
        self._stream: Any = None
        self._closing = threading.Event()

    @property
    def description(self) -> str:
        """The device's name (and its sound-server source when opened through ``pulse``)."""
        return self.device.description or self.device.name

    def _open(self) -> tuple[int, int]:
        sd = _sounddevice(self._sd)
        rate, channels = choose_settings(self.device, sd, self.target_rate)
        self._closing.clear()
        try:
            with pulse_source_env(self.device.pulse_source):
                stream = sd.InputStream(
                    device=self.device.index,
                    samplerate=rate,
                    channels=channels,
                    dtype="float32",
                    blocksize=0,
                    callback=self._callback,
                    finished_callback=self._finished,
                )
            stream.start()
        except Exception as exc:  # noqa: BLE001 - sd.PortAudioError, ValueError
            raise SourceError(
                f"cannot start {self.kind} {self.device.name!r} at {rate} Hz x{channels}: {exc}. "
                "Check that it is connected and not used exclusively by another program."
            ) from exc
        self._stream = stream
        return rate, channels

    def _close(self) -> None:
        self._closing.set()
        stream, self._stream = self._stream, None
        if stream is None:
            return
        try:
            stream.abort()
        except Exception:  # noqa: BLE001 - the device may already be gone
            pass
        try:
            stream.close()
        except Exception:  # noqa: BLE001
            pass

    # PortAudio thread ---------------------------------------------------------------------------
    def _callback(self, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        self._push(indata, overflow=bool(getattr(status, "input_overflow", False)))

    def _finished(self) -> None:
        if not self._closing.is_set():
            self._fail(f"the {self.kind} {self.device.name!r} stopped delivering audio")
