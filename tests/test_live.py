"""LiveCaptioner with a fake backend: labelled sources sharing model calls, drain on stop,
device-lost handling, continued stream time, dropped-audio notices. No sleeps: threading
events and ``wait()`` synchronise."""

import threading
import time

import numpy as np
import pytest
import soundfile as sf

from captioner.audio.devices import PulseInventory, resolve_microphone
from captioner.audio.filesource import FileSource
from captioner.audio.microphone import MicrophoneSource
from captioner.engine.batcher import BatchEngine
from captioner.engine.live import LiveCaptioner
from captioner.events import Level, Notice, Stats, TextDelta, TurnBoundary
from tests.audio_fakes import FakeBackend, FakeClock, FakeSD, device_table, tone


class Recorder:
    """Collects events; ``when(pred)`` returns an Event set once an event matches."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()
        self.waiters = []

    def __call__(self, ev):
        with self.lock:
            self.events.append(ev)
            for pred, flag in self.waiters:
                if pred(ev):
                    flag.set()

    def when(self, pred):
        flag = threading.Event()
        with self.lock:
            self.waiters.append((pred, flag))
            if any(pred(e) for e in self.events):
                flag.set()
        return flag

    def of(self, kind, source=None):
        return [e for e in self.events if isinstance(e, kind) and (source is None or e.source == source)]


def _speech_like(path, seconds, rate, channels=1, centre_only=False):
    x = tone(seconds, rate, 300.0, 0.5)
    if channels > 1:
        frames = np.zeros((len(x), channels), np.float32)
        frames[:, 2 if centre_only else slice(None)] = x if centre_only else x[:, None]
        x = frames
    sf.write(path, x, rate)
    return path


def test_two_labelled_sources_share_model_calls_and_end_cleanly(tmp_path):
    backend = FakeBackend(batch_size=2)
    rec = Recorder()
    you = FileSource(_speech_like(tmp_path / "you.wav", 1.0, 44100), "You", realtime=False)
    meeting = FileSource(_speech_like(tmp_path / "meet.wav", 1.0, 48000, 6, centre_only=True), "Meeting", realtime=False)
    live = LiveCaptioner(backend, [you, meeting], rec)
    live.start()
    assert live.wait(30)
    assert not live.is_running
    for label in ("You", "Meeting"):
        words = "".join(e.text for e in rec.of(TextDelta, label))
        assert words.split() == [f"w{i}" for i in range(1, 11)], label  # 1.0 s = 10 chunks of 100 ms
        assert rec.of(TurnBoundary, label)[-1].kind == "end_of_stream"
        assert any(n.code == "source_ended" for n in rec.of(Notice, label))
        assert rec.of(Level, label) and rec.of(Stats, label)
    assert isinstance(rec.events[-1], Notice) and rec.events[-1].code == "stopped"
    assert max(backend.calls) == 2  # mic and system audio decoded in one model call
    engine = BatchEngine.shared(backend)
    assert engine.rows > engine.calls


def test_stop_drains_queue_and_flushes_last_words():
    sd = FakeSD(device_table())
    clock = FakeClock()
    mic = MicrophoneSource(resolve_microphone(0, sd, PulseInventory()), sd=sd, clock=clock)  # 48 kHz only
    backend = FakeBackend(batch_size=1)
    rec = Recorder()
    live = LiveCaptioner(backend, [mic], rec, clock=clock)
    live.start()
    stream = sd.streams[0]
    x = tone(1.25, 48000)
    for i in range(0, len(x), 480):
        stream.deliver(x[i : i + 480], overflow=i == 4800)  # the device reports one overflow
    assert live.stop(drain=True, timeout=30)
    assert stream.aborted
    text = "".join(e.text for e in rec.of(TextDelta, "You"))
    assert len(text.split()) == 13  # 12 whole chunks + the padded last 50 ms: nothing lost
    stats = rec.of(Stats, "You")[-1]
    assert stats.audio_s == pytest.approx(1.25)
    assert stats.backlog_s == 0.0 and stats.dropped_s == 0.0
    assert stats.overflows == 1  # surfaced, not silent
    assert rec.of(TurnBoundary, "You")[-1].kind == "end_of_stream"


def test_capture_takes_a_live_device_in_read_interval_steps_not_block_by_block():
    """A device calls back every 10 ms; the capture thread takes what it queued once per
    ``READ_INTERVAL_S`` (it used to wake, read, meter and wake the decoder for each block:
    5 % of a core), and nothing is lost or late beyond that interval."""
    import captioner.engine.live_capture as live_mod

    sd = FakeSD(device_table())
    mic = MicrophoneSource(resolve_microphone(0, sd, PulseInventory()), sd=sd)
    rec = Recorder()
    live = LiveCaptioner(FakeBackend(batch_size=1), [mic], rec)
    paused = threading.Event()
    waits = []

    class Halt(threading.Event):
        def wait(self, timeout=None):
            if timeout:
                waits.append(timeout)
                paused.set()
            return super().wait(timeout)

    live._halt = Halt()
    live.start()
    stream = sd.streams[0]
    x = tone(0.5, 48000)
    for i in range(0, 4800, 480):  # 100 ms: enough to come out of the 48 -> 16 kHz resampler
        stream.deliver(x[i : i + 480])
    assert paused.wait(10), "the capture thread read audio and went straight back for more"
    assert 0.0 < waits[0] <= live_mod.READ_INTERVAL_S
    for i in range(4800, len(x), 480):  # meanwhile the device goes on queueing
        stream.deliver(x[i : i + 480])
    assert live.stop(drain=True, timeout=30)
    assert rec.of(Stats, "You")[-1].audio_s == pytest.approx(0.5)  # every block arrived


def test_device_lost_keeps_text_notifies_and_allows_restart():
    sd = FakeSD(device_table())
    clock = FakeClock()
    mic = MicrophoneSource(resolve_microphone(2, sd, PulseInventory()), sd=sd, clock=clock)  # mono 16 kHz
    rec = Recorder()
    live = LiveCaptioner(FakeBackend(batch_size=1), [mic], rec, clock=clock, watchdog_s=1.0)
    live.start()
    stream = sd.streams[0]
    x = tone(3.0, 16000)
    for i in range(0, len(x), 160):  # the device works for 3 s of stream time, then vanishes
        stream.deliver(x[i : i + 160])
        clock.advance(0.01)
    decoded = rec.when(lambda e: isinstance(e, TextDelta) and e.text == "w30 ")
    assert decoded.wait(30)
    lost = rec.when(lambda e: isinstance(e, Notice) and e.code == "device_lost")
    clock.advance(0.9)
    assert not lost.wait(0.2)  # 0.9 s without a callback is not yet "lost"
    clock.advance(0.2)
    assert lost.wait(30)
    assert live.wait(30)  # the only source is gone: the run ended by itself
    (notice,) = [n for n in rec.of(Notice) if n.code == "device_lost"]
    assert notice.source == "You" and notice.severity == "error"
    assert "Mono headset" in notice.message and "Text so far is kept" in notice.message
    assert "default device" in notice.message
    assert len("".join(e.text for e in rec.of(TextDelta)).split()) == 30  # every word kept
    assert stream.aborted

    # Start again: stream time continues after the 3 s already captured
    n_before = len(rec.events)
    live.start()
    stream2 = sd.streams[-1]
    stream2.deliver(tone(0.2, 16000))
    assert live.stop(timeout=30)
    new = [e for e in rec.events[n_before:] if isinstance(e, TextDelta)]
    assert [e.text for e in new] == ["w1 ", "w2 "]
    assert new[0].start == pytest.approx(3.0) and new[1].end == pytest.approx(3.2)


def wait_until(pred, timeout=30.0):
    """Poll ``pred`` until true (like qtbot.waitUntil); False on timeout."""
    tick = threading.Event()
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.005)
    return True


def _stuck_model():
    """A fake microphone and a backend whose ``step`` blocks until ``gate`` is set (``entered``
    is set once the model is inside the call): ``(sd, clock, mic, rec, backend, gate, entered)``."""
    sd = FakeSD(device_table())
    clock = FakeClock()
    mic = MicrophoneSource(resolve_microphone(2, sd, PulseInventory()), sd=sd, clock=clock)
    gate, entered = threading.Event(), threading.Event()

    class Slow(FakeBackend):
        def step(self, rows):
            entered.set()
            gate.wait(30)  # decoding stalls until the test lets it go
            return super().step(rows)

    return sd, clock, mic, Recorder(), Slow(batch_size=1), gate, entered


def test_slow_model_never_blocks_capture_and_full_backlog_drops_with_a_notice():
    sd, clock, mic, rec, slow, gate, entered = _stuck_model()
    live = LiveCaptioner(slow, [mic], rec, clock=clock, max_backlog_s=0.3)
    live.start()
    stream = sd.streams[0]
    stream.deliver(tone(0.1, 16000))
    assert entered.wait(30)  # the decoder is stuck inside the model
    for _ in range(8):  # 0.4 s more: 0.3 s fits the 0.3 s backlog, 0.1 s is dropped
        stream.deliver(tone(0.05, 16000))
    # capture goes on while the model is stuck: the device queue is emptied, levels keep coming
    assert wait_until(lambda: mic.stats().queued_frames == 0 and mic.stats().callbacks == 9)
    assert wait_until(lambda: live.backlog_s() >= 0.39)  # 0.3 s pending + the 0.1 s chunk in the model
    assert mic.stats().latency_max_ms < 1.0  # fake clock: blocks left the queue at once
    gate.set()
    assert live.stop(timeout=30)
    notices = [n for n in rec.of(Notice) if n.code == "dropped"]
    assert len(notices) == 1 and "0.1 s of You audio were dropped" in notices[0].message
    last = rec.of(Stats, "You")[-1]
    assert last.dropped_s == pytest.approx(0.1) and last.audio_s == pytest.approx(0.4)


def test_skip_backlog_counts_the_queue_but_not_the_chunk_inside_the_model():
    """Issue 30.1: Stop ran out of drain time with 0.1 s inside a model call and 0.3 s queued. The
    stop notice counted both (0.4 s), yet the call's word appears in the flush: 0.3 s is lost."""
    sd, clock, mic, rec, slow, gate, entered = _stuck_model()
    live = LiveCaptioner(slow, [mic], rec, clock=clock)
    live.start()
    stream = sd.streams[0]
    stream.deliver(tone(0.1, 16000))
    assert entered.wait(30)
    for _ in range(6):
        stream.deliver(tone(0.05, 16000))
    assert wait_until(lambda: live.backlog_s() >= 0.39)  # 0.3 s queued + 0.1 s in the model
    assert live.stop(drain=True, timeout=0.01) is False  # the drain runs out at once
    assert live.skip_backlog() == pytest.approx(0.3)
    gate.set()
    assert live.stop(drain=False, timeout=30)
    words = "".join(e.text for e in rec.of(TextDelta) if e.final).split()
    assert words == ["w1"]  # the chunk the model was decoding: captioned, not skipped


def test_rejects_bad_configuration(tmp_path):
    a = FileSource(tmp_path / "a.wav", "X")
    b = FileSource(tmp_path / "b.wav", "X")
    with pytest.raises(ValueError, match="labels must differ"):
        LiveCaptioner(FakeBackend(), [a, b], print)
    with pytest.raises(ValueError, match="at least one"):
        LiveCaptioner(FakeBackend(), [], print)
    c = FileSource(tmp_path / "c.wav", "Y", target_rate=8000)
    with pytest.raises(ValueError, match="8000 Hz"):
        LiveCaptioner(FakeBackend(), [c], print)


def test_a_gap_ends_the_session_there_and_later_text_keeps_its_true_times():
    """A source that resumes after a stall: the gap notice gives the true times, the
    session is ended at the gap (last words out) and restarted with its times shifted."""
    from captioner.audio.source import AudioSource

    clock = FakeClock(100.0)

    class Resuming(AudioSource):
        kind = "system"
        description = "scripted monitor"
        supervised = True  # it handles its own stalls (no watchdog silence check)

        def _open(self):
            return 16000, 1

        def _close(self):
            pass

    src = Resuming("Meeting", clock=clock)
    rec = Recorder()
    live = LiveCaptioner(FakeBackend(batch_size=1, word="m"), [src], rec)
    live.start()
    x = tone(1.0, 16000, 300.0, 0.5)
    for i in range(10):  # 1.0 s, then the device stalls
        clock.advance(0.1)
        src._push(x[i * 1600:(i + 1) * 1600, None])
    assert rec.when(lambda e: isinstance(e, TextDelta) and e.final and e.text.startswith("m9")).wait(10)
    src._notify("System audio 'scripted monitor' has delivered no audio for 1.0 s: ...", "warning", "stalled")
    src._push_break(16000, 1)
    clock.advance(5.0)  # audio returns 5 s later
    for i in range(10):
        src._push(x[i * 1600:(i + 1) * 1600, None])
        clock.advance(0.1)
    assert rec.when(lambda e: isinstance(e, Notice) and e.code == "gap").wait(10)
    assert live.stop(drain=True, timeout=10)
    words = [e for e in rec.of(TextDelta, "Meeting") if e.final and e.text.strip()]
    before = [w for w in words if w.end <= 1.0 + 1e-6]
    after = [w for w in words if w.start >= 1.0 + 1e-6]
    assert len(before) == 10 and len(after) == 10 and len(words) == 20
    assert after[0].start == pytest.approx(1.0 + 4.9, abs=0.01)  # 1.0 s of audio + the 4.9 s gap
    assert after[-1].end == pytest.approx(5.9 + 1.0, abs=0.01)
    (gap,) = [n for n in rec.of(Notice) if n.code == "gap"]
    assert "between 0:01.0 and 0:05.9 (4.9 s)" in gap.message and gap.source == "Meeting"
    assert [n.code for n in rec.of(Notice)].index("stalled") < [n.code for n in rec.of(Notice)].index("gap")
    ends = [e for e in rec.of(TurnBoundary, "Meeting") if e.kind == "end_of_stream"]
    assert ends and ends[0].time == pytest.approx(1.0, abs=0.11)  # the session ended at the gap
    # the notice comes after the last words and the session end before the gap, before the first after
    # it: a transcript pane that shows it as a line puts it between them
    order = rec.events.index
    assert order(before[-1]) < order(ends[0]) < order(gap) < order(after[0])
