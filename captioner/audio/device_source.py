"""A PortAudio input stream (``sounddevice.InputStream``) as an :class:`AudioSource`.

The stream is opened at a rate and channel count the device accepts
(:func:`captioner.audio.portaudio.choose_settings`) with ``blocksize=0`` (PortAudio's
own, variable block size: with the ALSA ``pulse`` device, fixed blocks of 1600 frames
lost audio, DESIGN section 5). The callback only copies ``indata`` into the source's
bounded queue and counts overflows; it takes no lock and never blocks.

No call into the audio library can block :meth:`~AudioSource.stop`: opening runs
under a timeout and closing (``abort()`` then ``close()``) on a thread that is
abandoned after :data:`~captioner.audio.abandon.CLOSE_WAIT_S` (:mod:`captioner.audio.abandon`; a frozen sound
server blocks even ``abort()``). Every stream carries a generation number: callbacks
of a stream that was given up are ignored.

A source opened on a sound-server source (``device.pulse_source``; Linux
PulseAudio/PipeWire) *supervises itself* (:class:`~captioner.audio.recovery.Recovery`):
it tells a stall from a lost device, keeps the session through a stall or a
sound-server restart, detects the server moving its stream to another device
(never delivering that audio) and, for system audio chosen as "the default
output", follows the default output when it changes. Other devices (Windows,
macOS, plain ALSA) are watched by the live pipeline's
:class:`~captioner.audio.watchdog.Watchdog` as before: no callback for about 1 s
ends that source.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import replace
from typing import Any, Callable

from captioner.audio.abandon import OPEN_TIMEOUT_S, CallTimeout, abandon_stream, call_with_timeout
from captioner.audio.device_info import InputDevice
from captioner.audio.portaudio import _sounddevice, choose_settings, pulse_source_env, stream_tag
from captioner.audio.source import MODEL_RATE, AudioSource, SourceError

class DeviceSource(AudioSource):
    """Capture from one :class:`~captioner.audio.device_info.InputDevice` through PortAudio.

    Args:
        device: the device to open (from :mod:`captioner.audio.devices`).
        label: source label ("You", "Meeting").
        sd: the sounddevice module or a stand-in (tests).
        target_rate: delivered rate (Hz), the backend's ``sample_rate``.
        max_queue_s: queue capacity in seconds (see :class:`AudioSource`).
        clock: monotonic clock (s).
        follow_default: system audio chosen as "the default output": follow the
            default sink's monitor when it changes (sound-server sources only).

    Attributes:
        supervised: True when the source recovers by itself (a sound-server source,
            pulsectl installed); the live pipeline's watchdog then only reports its
            ``error``.
        state: "idle", "starting", "running", "stalled", "reopening" or "gone".
    """

    def __init__(
        self,
        device: InputDevice,
        label: str,
        sd: Any = None,
        target_rate: int = MODEL_RATE,
        max_queue_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        follow_default: bool = False,
    ) -> None:
        super().__init__(label, target_rate, max_queue_s, clock)
        self.device = device
        self.kind = device.kind
        self._sd = sd
        self._stream: Any = None
        self._closing = threading.Event()
        self.follow_default = bool(follow_default and device.kind == "system" and device.pulse_source)
        self.supervised = device.pulse_source is not None and _pulsectl_available()
        self.state = "idle"
        self._recovery: Any = None

    @property
    def description(self) -> str:
        """The device's name (and its sound-server source when opened through ``pulse``)."""
        return self.device.description or self.device.name

    def _open(self) -> tuple[int, int]:
        self._closing.clear()
        gen = self._gen + 1
        self._gen = gen
        try:
            stream, rate, channels = call_with_timeout(
                lambda: self._open_stream(self.device.pulse_source, gen, initial=True), OPEN_TIMEOUT_S, "open"
            )
        except CallTimeout as exc:
            self._gen += 1  # if the open completes after all, it closes its stream itself
            raise SourceError(
                f"cannot start {self.kind} {self.device.name!r}: the sound server did not answer within "
                f"{OPEN_TIMEOUT_S:g} s. Check that it is running (pactl info) and try again."
            ) from exc
        self._stream = stream
        self.state = "starting"
        if self.supervised:
            from captioner.audio.recovery import Recovery

            self._recovery = Recovery(self, rate, channels)
            self._recovery.start()
        return rate, channels

    def _open_stream(self, pulse_source: str | None, gen: int, initial: bool = False) -> tuple[Any, int, int]:
        """Open and start one stream of generation ``gen`` (any thread; may block on the server).

        Raises:
            SourceError: the device refuses every format, cannot be opened, or this
                open was superseded (``gen`` is no longer current) meanwhile.
        """
        sd = _sounddevice(self._sd)
        device = self.device if pulse_source == self.device.pulse_source else replace(
            self.device, name=pulse_source, pulse_source=pulse_source, description=pulse_source
        )
        rate, channels = choose_settings(device, sd, self.target_rate)
        tag = stream_tag(self, gen)
        try:
            with pulse_source_env(pulse_source, tag):
                stream = sd.InputStream(
                    device=device.index,
                    samplerate=rate,
                    channels=channels,
                    dtype="float32",
                    blocksize=0,
                    callback=functools.partial(self._callback, gen),
                    finished_callback=functools.partial(self._finished, gen),
                )
                if gen != self._gen or self._closing.is_set():
                    abandon_stream(stream)
                    raise SourceError("superseded")
                if not initial:
                    self._push_break(rate, channels)  # before the first callback of the new stream
                stream.start()
        except SourceError:
            raise
        except Exception as exc:  # noqa: BLE001 - sd.PortAudioError, ValueError
            raise SourceError(
                f"cannot start {self.kind} {device.name!r} at {rate} Hz x{channels}: {exc}. "
                "Check that it is connected and not used exclusively by another program."
            ) from exc
        return stream, rate, channels

    def _close(self) -> None:
        self._closing.set()
        self._gen += 1  # callbacks of the stream being closed are ignored from now on
        recovery, self._recovery = self._recovery, None
        if recovery is not None:
            recovery.stop()
        stream, self._stream = self._stream, None
        self.state = "idle"
        abandon_stream(stream)

    # PortAudio thread ---------------------------------------------------------------------------
    def _callback(self, gen: int, indata: Any, frames: int, time_info: Any, status: Any) -> None:
        if gen == self._gen:
            self._push(indata, overflow=bool(getattr(status, "input_overflow", False)))

    def _finished(self, gen: int) -> None:
        if gen != self._gen or self._closing.is_set():
            return
        if self._recovery is not None:
            self._recovery.stream_ended()
        else:
            self._fail(f"the {self.kind} {self.device.name!r} stopped delivering audio")


def _pulsectl_available() -> bool:
    """pulsectl (and libpulse) load: a sound-server source can supervise itself."""
    try:
        import pulsectl  # noqa: F401
    except Exception:  # noqa: BLE001 - missing, or libpulse not loadable
        return False
    return True


__all__ = ["DeviceSource"]
