"""The microphone source: a PortAudio input device chosen by the user (or the default)."""

from __future__ import annotations

import time
from typing import Any, Callable

from captioner.audio.device_source import DeviceSource
from captioner.audio.devices import InputDevice, resolve_microphone
from captioner.audio.source import MODEL_RATE

#: Default label of the microphone source (the user's own voice).
MIC_LABEL = "You"


class MicrophoneSource(DeviceSource):
    """Capture a microphone.

    Args:
        device: an :class:`InputDevice`, a PortAudio index, a name (or part of one,
            PulseAudio/PipeWire source names included), or ``None`` for the default.
        label: source label, "You" by default (renamable through ``label``).
        sd: sounddevice module or a stand-in (tests).
        target_rate: delivered rate in Hz.
        max_queue_s: queue capacity in seconds.
        clock: monotonic clock (s).

    Raises:
        SourceError: no microphone matches ``device`` (the message lists the ones
            that exist). Opening errors are raised by :meth:`start`.
    """

    kind = "microphone"

    def __init__(
        self,
        device: InputDevice | int | str | None = None,
        label: str = MIC_LABEL,
        sd: Any = None,
        target_rate: int = MODEL_RATE,
        max_queue_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(device, InputDevice):
            device = resolve_microphone(device, sd)
        super().__init__(device, label, sd, target_rate, max_queue_s, clock)
