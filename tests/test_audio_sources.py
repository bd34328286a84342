"""Sources with a fake sounddevice: open settings, exact stream time, overflow/drop counting, files."""

import os

import numpy as np
import pytest
import soundfile as sf

from captioner.audio.devices import InputDevice, PulseInventory, PulseSourceInfo
from captioner.audio.filesource import FileSource
from captioner.audio.microphone import MicrophoneSource
from captioner.audio.source import AudioSource, SourceError
from captioner.audio.system import SystemAudioSource, open_system_audio
from tests.audio_fakes import FakeClock, FakeDevice, FakeSD, device_table, tone

NO_SERVER = PulseInventory()


def _mic(name, sd, **kw):
    from captioner.audio.devices import resolve_microphone

    return MicrophoneSource(resolve_microphone(name, sd, NO_SERVER), sd=sd, **kw)


def _deliver_random(stream, x, rng, max_block=700):
    pos = 0
    while pos < len(x):
        k = int(rng.integers(1, max_block))
        stream.deliver(x[pos : pos + k])
        pos += k


@pytest.mark.parametrize(
    "name, rate, channels",
    [("USB mic 48k only", 48000, 1), ("Webcam mic 44.1k only", 44100, 2), (3, 16000, 1), ("HDMI 5.1 capture", 48000, 6)],
)
def test_opens_supported_settings_and_delivers_exact_stream_time(name, rate, channels):
    sd = FakeSD(device_table())
    src = _mic(name, sd)
    src.start()
    (stream,) = sd.streams
    assert (stream.samplerate, stream.channels, stream.blocksize) == (rate, channels, 0)
    assert (src.native_rate, src.native_channels) == (rate, channels)
    _deliver_random(stream, np.repeat(tone(1.0, rate)[:, None], channels, axis=1), np.random.default_rng(0))
    blocks = [src.read()]
    src.stop()
    assert stream.aborted and stream.closed
    blocks.append(src.read(flush=True))
    blocks = [b for b in blocks if b is not None]
    assert sum(len(b.samples) for b in blocks) == 16000  # 1.000 s of device audio -> 16000 samples
    assert blocks[0].start == 0.0
    assert all(b.start == a.end for a, b in zip(blocks, blocks[1:]))  # contiguous stream time
    assert all(b.source == "You" and b.samples.dtype == np.float32 for b in blocks)
    assert not any(np.isnan(b.samples).any() for b in blocks)  # copied before PortAudio reused its buffer
    assert src.error is None  # our own abort is not a device error


def test_overflow_and_full_queue_are_counted_not_silent():
    sd = FakeSD(device_table())
    clock = FakeClock()
    src = _mic("Mono headset", sd, max_queue_s=0.1, clock=clock)
    src.start()
    stream = sd.streams[0]
    stream.deliver(np.zeros(800), overflow=True)
    stream.deliver(np.zeros(800))
    stream.deliver(np.zeros(800))  # 0.15 s > 0.1 s capacity: dropped
    st = src.stats()
    assert st.overflows == 1
    assert (st.dropped_blocks, st.dropped_frames) == (1, 800)
    assert st.dropped_s == pytest.approx(0.05)
    assert st.queued_s == pytest.approx(0.1)
    clock.advance(0.03)
    block = src.read()
    assert len(block.samples) == 1600
    st = src.stats()
    assert st.queued_frames == 0 and st.latency_count == 2
    assert st.latency_mean_ms == pytest.approx(30.0) and st.latency_max_ms == pytest.approx(30.0)


def test_portaudio_error_is_recorded_for_the_watchdog():
    sd = FakeSD(device_table())
    src = _mic("Mono headset", sd)
    src.start()
    sd.streams[0].vanish()
    assert "stopped delivering audio" in src.error


def test_open_failure_is_a_clear_source_error():
    class Refusing(FakeSD):
        def InputStream(self, **kw):  # noqa: N802
            raise self.PortAudioError("Device unavailable")

    sd = Refusing(device_table())
    src = _mic("Mono headset", sd)
    with pytest.raises(SourceError, match="Mono headset.*Device unavailable"):
        src.start()
    assert not src.is_running


def test_pulse_source_is_set_only_while_its_stream_opens(monkeypatch):
    monkeypatch.delenv("PULSE_SOURCE", raising=False)
    sd = FakeSD([FakeDevice("pulse", 32, 44100.0), FakeDevice("default", 32, 44100.0)])
    inv = PulseInventory(
        (
            PulseSourceInfo("meeting.monitor", "", "meeting", 2, 44100),
            PulseSourceInfo("virtmic", "", None, 1, 44100),
        ),
        "meeting",
        "virtmic",
    )
    from captioner.audio.devices import resolve_microphone, resolve_system

    system = open_system_audio(resolve_system(None, sd, inv), sd=sd)
    mic = MicrophoneSource(resolve_microphone(None, sd, inv), sd=sd)
    system.start()
    mic.start()
    assert [s.pulse_source for s in sd.streams] == ["meeting.monitor", "virtmic"]
    assert [s.device for s in sd.streams] == [0, 0]
    assert "PULSE_SOURCE" not in os.environ
    assert (system.label, mic.label) == ("Meeting", "You")


def test_system_source_refuses_a_microphone():
    with pytest.raises(SourceError, match="not a system-audio source"):
        SystemAudioSource(InputDevice("microphone", "Mic", 0))


def _write(path, data, rate):
    sf.write(path, data, rate)
    return path


def test_file_source_six_channel_centre_only(tmp_path):
    rate = 48000
    x = np.zeros((rate * 2, 6), np.float32)
    x[:, 2] = tone(2.0, rate, 300.0, 0.6)
    src = FileSource(_write(tmp_path / "film.wav", x, rate), realtime=False, fast_read_s=0.5)
    src.start()
    assert (src.native_rate, src.native_channels, src.label) == (rate, 6, "film.wav")
    blocks = []
    while not src.finished:
        blocks.append(src.read(flush=False))
    blocks.append(src.read(flush=True))
    out = np.concatenate([b.samples for b in blocks if b is not None])
    assert len(out) == 32000
    assert np.max(np.abs(out[1000:-1000])) == pytest.approx(0.1, rel=0.02)


def test_file_source_paced_by_clock(tmp_path):
    clock = FakeClock()
    src = FileSource(_write(tmp_path / "a.wav", tone(1.0, 22050), 22050), clock=clock, block_s=0.01)
    src.start()
    assert src.read() is None  # nothing due at t=0
    assert src.seconds_until_due() == pytest.approx(0.01, abs=1e-3)
    clock.advance(0.5)
    first = src.read()
    assert abs(first.end - 0.5) < 0.05 and not src.finished  # about 0.5 s so far (resampler delay aside)
    clock.advance(0.6)
    rest = src.read(flush=True)
    assert src.finished
    assert len(first.samples) + len(rest.samples) == 16000


def test_paced_file_source_delivers_whole_device_blocks(tmp_path):
    """Like a device: 25 ms after start a 20 ms-block source has delivered one block, not
    the 25 ms "due" so far (reading every few frames as they fell due kept the capture
    thread spinning), and the file's short last block still comes."""
    clock = FakeClock()
    src = FileSource(_write(tmp_path / "b.wav", tone(0.11, 16000), 16000), clock=clock, block_s=0.02)
    src.start()
    clock.advance(0.025)
    first = src.read()
    assert src.stats().frames_in == 320 and src.stats().callbacks == 1 and len(first.samples) == 320
    clock.advance(0.004)  # 29 ms: still inside the second block
    assert src.read() is None
    clock.advance(0.2)  # the rest: four whole blocks and the 10 ms tail
    rest = src.read(flush=True)
    assert src.finished and len(first.samples) + len(rest.samples) == 1760


def test_missing_file():
    with pytest.raises(SourceError, match="not found"):
        FileSource("/nonexistent/x.wav").start()


class _Scripted(AudioSource):
    """A source the test pushes into by hand (as a device callback would), on a fake clock."""

    kind = "system"
    description = "scripted"

    def _open(self):
        return 16000, 1

    def _close(self):
        pass


def test_a_break_delivers_the_audio_before_it_then_marks_the_real_gap_and_new_format():
    from tests.audio_fakes import FakeClock

    clock = FakeClock(100.0)
    src = _Scripted("Meeting", clock=clock)
    src.start()
    for _ in range(10):  # 1.0 s at 16 kHz mono, in 100 ms callbacks
        clock.advance(0.1)
        src._push(np.full((1600, 1), 0.25, np.float32))
    src._push_break(48000, 2)  # the stream was reopened on a 48 kHz stereo device...
    clock.advance(3.0)  # ...3 s later
    src._push(np.full((4800, 2), 0.5, np.float32))
    before = src.read()
    assert before.start == 0.0 and before.gap_before == 0.0
    assert abs(before.duration - 1.0) < 1e-3 and np.allclose(before.samples[100:-100], 0.25, atol=1e-3)
    after = src.read()
    # the last audio ended at 101.0; the 0.1 s block called back at 104.0 began at 103.9
    assert after.gap_before == pytest.approx(2.9, abs=1e-6)
    assert after.start == pytest.approx(before.end + 2.9, abs=1e-3)  # stream time counts the gap
    assert src.native_rate == 48000 and src.native_channels == 2
    assert np.allclose(after.samples[200:1000], 0.5, atol=1e-3)
    st = src.stats()
    assert st.gaps == 1 and st.gap_s == pytest.approx(2.9, abs=1e-6)


def test_audio_of_an_untrusted_stream_is_never_delivered():
    src = _Scripted("Meeting")
    src.start()
    src._push(np.full((1600, 1), 0.25, np.float32))
    src._untrusted.add(src._gen)  # the sound server moved this stream to the microphone
    src._push(np.full((800, 1), 0.9, np.float32))
    assert src.read() is None
    assert src.stats().untrusted_frames == 2400 and src.stats().samples_out == 0


def test_stop_returns_at_once_when_abort_blocks_on_a_frozen_server():
    import threading
    import time

    release = threading.Event()

    class Frozen(FakeSD):
        def InputStream(self, **kw):  # noqa: N802
            s = super().InputStream(**kw)
            s.abort = lambda: release.wait(30)  # a SIGSTOPped sound server: abort() never returns
            return s

    sd = Frozen(device_table())
    src = _mic("Mono headset", sd)
    src.start()
    t0 = time.monotonic()
    stopper = threading.Thread(target=src.stop, daemon=True)
    stopper.start()
    stopper.join(2.0)
    took = time.monotonic() - t0
    release.set()
    assert not stopper.is_alive() and took < 1.0, took
    assert not src.is_running
