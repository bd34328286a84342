"""Test doubles for audio tests: a fake ``sounddevice`` module, a fake clock and a tiny backend.

The fake sounddevice mimics the parts of the real API the project uses
(``query_devices``, ``query_hostapis``, ``default.device``, ``check_input_settings``,
``InputStream`` with ``callback``/``finished_callback``); tests drive the callback
themselves with :meth:`FakeStream.deliver`, so nothing depends on timing.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Sequence

import numpy as np

from captioner.asr.base import Backend, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.audio.source import AudioSource
from captioner.events import TextDelta


class PortAudioError(Exception):
    """Stand-in for sounddevice.PortAudioError."""


@dataclass
class FakeDevice:
    """A device table row. ``rates``/``channels_ok``: accepted values (None = any up to max)."""

    name: str
    max_input_channels: int
    default_samplerate: float = 48000.0
    rates: set | None = None
    channels_ok: set | None = None
    hostapi: int = 0

    def accepts(self, rate: float, channels: int) -> bool:
        if channels < 1 or channels > self.max_input_channels:
            return False
        if self.channels_ok is not None and channels not in self.channels_ok:
            return False
        return self.rates is None or int(rate) in self.rates


class FakeClock:
    """A settable monotonic clock (seconds)."""

    def __init__(self, t: float = 100.0) -> None:
        self.t = t
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.t

    def advance(self, dt: float) -> None:
        with self._lock:
            self.t += dt


class FakeStream:
    """What ``FakeSD.InputStream`` returns; the test calls :meth:`deliver`."""

    def __init__(self, sd: "FakeSD", **kw) -> None:
        self.sd = sd
        self.kw = kw
        self.device = kw.get("device")
        self.samplerate = kw["samplerate"]
        self.channels = kw["channels"]
        self.blocksize = kw.get("blocksize")
        self.callback = kw["callback"]
        self.finished_callback = kw.get("finished_callback")
        self.pulse_source = os.environ.get("PULSE_SOURCE")
        self.started = self.aborted = self.closed = False

    def start(self) -> None:
        self.started = True

    def abort(self) -> None:
        self.aborted = True

    def stop(self) -> None:  # the project must never call it (it can hang on ALSA pulse)
        raise AssertionError("stream.stop() called; use abort()")

    def close(self) -> None:
        self.closed = True
        if self.finished_callback:
            self.finished_callback()

    def deliver(self, frames: np.ndarray, overflow: bool = False) -> None:
        """Call the callback like PortAudio does (the buffer is reused afterwards)."""
        frames = np.asarray(frames, dtype=np.float32)
        if frames.ndim == 1:
            frames = np.repeat(frames[:, None], self.channels, axis=1)
        assert frames.shape[1] == self.channels
        buf = frames.copy()
        self.callback(buf, len(buf), None, SimpleNamespace(input_overflow=overflow))
        buf[:] = np.nan  # PortAudio reuses its buffer: a source must have copied

    def vanish(self) -> None:
        """PortAudio reports the stream ended by itself (device error)."""
        self.finished_callback()


class FakeSD:
    """A fake ``sounddevice`` module over a device table."""

    PortAudioError = PortAudioError

    def __init__(self, devices: Sequence[FakeDevice], default_input: int = 0, hostapis: Sequence[str] = ("ALSA",)):
        self.devices = list(devices)
        self.hostapis = list(hostapis)
        self.default = SimpleNamespace(device=[default_input, -1])
        self.streams: list[FakeStream] = []
        self.checks: list[tuple] = []

    def query_devices(self):
        return [
            {
                "name": d.name,
                "index": i,
                "hostapi": d.hostapi,
                "max_input_channels": d.max_input_channels,
                "max_output_channels": 0,
                "default_samplerate": d.default_samplerate,
            }
            for i, d in enumerate(self.devices)
        ]

    def query_hostapis(self):
        return [{"name": n} for n in self.hostapis]

    def _dev(self, device) -> FakeDevice:
        if device is None:
            return self.devices[self.default.device[0]]
        return self.devices[int(device)]

    def check_input_settings(self, device=None, channels=None, dtype=None, samplerate=None, **_):
        self.checks.append((device, channels, samplerate))
        if not self._dev(device).accepts(samplerate, channels):
            raise PortAudioError(f"Invalid sample rate or channel count: {samplerate} Hz x{channels}")

    def InputStream(self, **kw):  # noqa: N802 - mirrors sounddevice
        dev = self._dev(kw.get("device"))
        if not dev.accepts(kw["samplerate"], kw["channels"]):
            raise PortAudioError("Invalid sample rate")
        s = FakeStream(self, **kw)
        self.streams.append(s)
        return s


def device_table() -> list[FakeDevice]:
    """The awkward devices of issue #3."""
    return [
        FakeDevice("USB mic 48k only", 2, 48000.0, rates={48000}),
        FakeDevice("Webcam mic 44.1k only", 2, 44100.0, rates={44100}, channels_ok={2}),
        FakeDevice("Mono headset", 1, 16000.0),
        FakeDevice("default", 32, 44100.0),
        FakeDevice("HDMI 5.1 capture", 6, 48000.0, rates={48000}, channels_ok={6}),
    ]


class FakeBackend(Backend):
    """16 kHz, 100 ms chunks; a final word per chunk whose RMS exceeds ``threshold``.

    Words are ``"<label>"`` when given, else ``"w<k>"``; ``real_samples`` counts the
    non-padding audio it was given per session (by ``id`` of its state).
    """

    name = "fake"

    def __init__(self, batch_size: int = 2, threshold: float = 0.01, word: str | None = None) -> None:
        self.geometry = ChunkGeometry(16000, 1600, 1600)
        self.batch_size = batch_size
        self.threshold = threshold
        self.word = word
        self.calls: list[int] = []
        self.real_samples: dict[int, int] = {}
        self.lock = threading.Lock()

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        self.calls.append(len(rows))
        out = []
        for row in rows:
            state = row.state if row.state is not None else {"id": object(), "k": 0, "n": 0}
            events = []
            if row.audio is not None:
                n_real = int(round((row.end - row.start) * 16000))
                state["n"] += n_real
                real = row.audio[:n_real]
                if n_real and float(np.sqrt(np.mean(real.astype(np.float64) ** 2))) > self.threshold:
                    state["k"] += 1
                    events.append(TextDelta(f"{self.word or 'w'}{state['k']} ", row.start, row.end))
            out.append(StepResult(state, events))
        return out


def tone(seconds: float, rate: int, freq: float = 440.0, amp: float = 0.5) -> np.ndarray:
    """``[n] float32`` sine."""
    t = np.arange(int(round(seconds * rate))) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


class Speaker:
    """Someone talking in real time from :meth:`play` on: ``audio`` (16 kHz mono), then silence.

    A live source started later hears only what is said from then on, like a microphone or a
    sound-server monitor (the words said before it opened are gone).
    """

    RATE = 16000

    def __init__(self, audio: np.ndarray) -> None:
        self.audio = np.asarray(audio, dtype=np.float32)
        self.t0: float | None = None

    def play(self) -> None:
        """Start talking now."""
        self.t0 = time.monotonic()

    def position(self) -> int:
        """Samples said so far (0 before :meth:`play`)."""
        return 0 if self.t0 is None else int((time.monotonic() - self.t0) * self.RATE)

    def said(self, a: int, b: int) -> np.ndarray:
        """Samples ``a:b`` of what is said (silence past the end of ``audio``)."""
        out = np.zeros(max(0, b - a), dtype=np.float32)
        part = self.audio[a:b]
        out[: len(part)] = part
        return out


class SpeakerSource(AudioSource):
    """A live source (``kind = "microphone"``) that records a :class:`Speaker` from the moment it is
    started, in 20 ms callbacks on its own thread; its first sample is aligned down to ``align``
    samples (so a fake model's chunks line up with the words)."""

    kind = "microphone"

    def __init__(self, speaker: Speaker, label: str = "You", align: int = 1, **kw) -> None:
        super().__init__(label, target_rate=Speaker.RATE, **kw)
        self.speaker = speaker
        self.align = int(align)
        self.opened_at: float | None = None
        self.closed = threading.Event()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def description(self) -> str:
        return "a fake microphone"

    def _open(self) -> tuple[int, int]:
        self.opened_at = time.monotonic()
        self._halt.clear()
        self.closed.clear()
        pos = self.speaker.position() // self.align * self.align
        self._thread = threading.Thread(target=self._run, args=(pos,), daemon=True)
        self._thread.start()
        return Speaker.RATE, 1

    def _run(self, pos: int) -> None:
        while not self._halt.wait(0.02):
            now = self.speaker.position()
            if now > pos:
                self._push(self.speaker.said(pos, now)[:, None])
                pos = now

    def _close(self) -> None:
        self._halt.set()
        self.closed.set()
