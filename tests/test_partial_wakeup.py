"""A finished re-decode reaches the screen at once, not with the next chunk (issue 27: partial
update latency). The partial thread wakes the live engine (``Backend.wakeup``), which hands the
result over with a collect-only row (``StepRow.audio`` of length 0) between two chunks.

No sleeps: the stand-in decodes block on semaphores the tests release, and threading events
say when something happened.
"""

from __future__ import annotations

import threading

import numpy as np

from captioner.asr.base import StepResult, StepRow
from captioner.asr.moonshine.backend import MoonshineBackend
from captioner.asr.moonshine.line_state import LineState
from captioner.asr.moonshine.lines import LineEvent
from captioner.asr.moonshine.partial_worker import PartialJob, PartialWorker
from captioner.audio.devices import PulseInventory, resolve_microphone
from captioner.audio.microphone import MicrophoneSource
from captioner.engine.live import LiveCaptioner
from captioner.engine.session import StreamingSession
from captioner.events import TextDelta
from tests.audio_fakes import FakeBackend, FakeClock, FakeSD, device_table, tone
from tests.test_live import Recorder

SR = 16000


class Gated:
    """Stand-in model: each re-decode waits for the test, then reads ``words`` for its clip."""

    def __init__(self) -> None:
        self.entered = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.calls = 0

    def transcribe(self, audio):
        self.calls += 1
        self.entered.release()
        assert self.release.acquire(timeout=30)
        return "Good morning everyone"


def test_the_worker_says_when_a_job_is_done_but_not_for_a_discarded_one():
    finished = threading.Semaphore(0)
    gate = Gated()
    w = PartialWorker(lambda clip: gate.transcribe(clip), on_done=finished.release)
    try:
        assert w.submit(PartialJob("a", np.zeros(1600, np.float32), tag=None))
        assert gate.entered.acquire(timeout=30)
        assert not w.done("a")
        gate.release.release()
        assert finished.acquire(timeout=30)  # called once the job can be collected ...
        assert w.done("a") and not w.done("b")
        assert w.poll("a").text == "Good morning everyone" and not w.done("a")
        assert w.submit(PartialJob("b", np.zeros(1600, np.float32), tag=None))
        assert gate.entered.acquire(timeout=30)
        w.discard("b")  # its line closed meanwhile
        gate.release.release()
        assert w.wait_idle(30)
        assert not finished.acquire(timeout=0)  # ... and not for a result nobody will collect
    finally:
        gate.release.release()
        w.close()


def test_a_finished_re_decode_is_collected_by_an_empty_row_which_starts_no_new_one():
    from captioner.engine.scheduler import DecodeBudget

    gate = Gated()
    now = [0.0]  # the budget's clock: a re-decode is due whenever one is asked for
    be = MoonshineBackend(model=gate, vad=object(), partials=True, budget=DecodeBudget(clock=lambda: now[0]))
    woken = threading.Event()
    be.wakeup = woken.set
    state = LineState(lines=None, speech=None)
    try:
        be._worker.close()  # threaded whatever the cores here, as live on two
        be._worker = PartialWorker(be._decode_clip, threaded=True, on_done=be._partial_done)
        be._lines(state, [LineEvent(0, 0)])
        audio = np.full(3 * SR, 0.1, np.float32)  # its first words are older than the tail's age bound
        be._keep(state, audio)
        state.total += len(audio)
        assert be._partial(state) == []  # submitted; running on the partial thread
        assert gate.entered.acquire(timeout=30)
        assert not be.ready(state)
        gate.release.release()
        assert woken.wait(30)  # the partial thread says so the moment it is done
        assert be.ready(state)
        now[0] += 10.0
        t = state.total / SR
        [result] = be.step([StepRow(np.zeros(0, np.float32), state, t, t)])
        shown = [ev for ev in result.events if isinstance(ev, TextDelta) and not ev.final]
        assert shown and shown[0].heard == 3.0  # the re-decode's partial, for the audio it heard
        assert shown[0].text.split()[0] == "Good"
        assert state.total == 3 * SR  # no audio added
        assert not be.ready(state) and not be._worker.busy  # no new re-decode without new audio
        before = gate.calls
        chunk = np.full(1600, 0.1, np.float32)
        be._keep(state, chunk)
        state.total += len(chunk)
        be._partial(state)  # what a step with the next chunk does after the line cutter: starts the next one
        assert gate.entered.acquire(timeout=30) and gate.calls == before + 1
    finally:
        gate.release.release()
        be.close()


class Background(FakeBackend):
    """Fake backend whose first chunk starts a re-decode on a thread of its own; the test lets it
    finish, and its text is handed over by a collect-only row (recorded in ``collect_rows``)."""

    def __init__(self) -> None:
        super().__init__(batch_size=1)
        self.release = threading.Event()
        self.ready_text: dict[int, str] = {}
        self.collect_rows = 0
        self.started = threading.Event()
        self.chunks = threading.Event()  # set once three chunks (0.3 s) were decoded
        self.audio_rows = 0

    def ready(self, state) -> bool:
        return id(state["id"]) in self.ready_text

    def _redecode(self, key: int) -> None:
        assert self.release.wait(30)
        self.ready_text[key] = "partial words"
        if self.wakeup is not None:
            self.wakeup()

    def step(self, rows):
        out = []
        for row in rows:
            if row.audio is not None and len(row.audio) == 0:
                self.collect_rows += 1
                text = self.ready_text.pop(id(row.state["id"]))
                out.append(StepResult(row.state, [TextDelta(text, row.start, row.end, final=False)]))
                continue
            [res] = super().step([row])
            self.audio_rows += row.audio is not None
            if self.audio_rows >= 3:
                self.chunks.set()
            if not res.state.get("redecode") and row.audio is not None:
                res.state["redecode"] = True
                threading.Thread(target=self._redecode, args=(id(res.state["id"]),), daemon=True).start()
                self.started.set()
            out.append(res)
        return out


class IdleSpy(threading.Event):
    """The live engine's decode wakeup, telling the test when the decode thread goes to sleep."""

    def __init__(self) -> None:
        super().__init__()
        self.sleeping = threading.Event()

    def wait(self, timeout=None):
        self.sleeping.set()
        return super().wait(timeout)


def test_live_shows_a_finished_re_decode_while_no_audio_arrives():
    sd = FakeSD(device_table())
    clock = FakeClock()  # the device watchdog never fires: the stream just goes quiet
    mic = MicrophoneSource(resolve_microphone(0, sd, PulseInventory()), sd=sd, clock=clock)
    backend = Background()
    rec = Recorder()
    # the decode thread's idle wait is the stats interval: long, so only the wakeup ends it
    live = LiveCaptioner(backend, [mic], rec, clock=clock, stats_interval_s=600.0)
    live._decode_wakeup = idle = IdleSpy()
    live.start()
    try:
        x = tone(0.5, 48000)  # the resampler holds some back: three whole chunks come through
        for i in range(0, len(x), 480):
            sd.streams[0].deliver(x[i : i + 480])
        assert backend.started.wait(30)
        assert backend.chunks.wait(30)  # every chunk decoded ...
        idle.sleeping.clear()
        assert idle.sleeping.wait(30)  # ... and the decode thread asleep, with no audio to wake it
        shown = rec.when(lambda e: isinstance(e, TextDelta) and e.text == "partial words")
        assert not shown.is_set()
        backend.release.set()  # only the wakeup can bring the re-decode's text now
        assert shown.wait(30)
        assert backend.collect_rows == 1
    finally:
        backend.release.set()
        assert live.stop(drain=True, timeout=30)


def test_a_session_without_anything_ready_sends_no_row():
    backend = FakeBackend(batch_size=1)
    session = StreamingSession(backend, "You")
    assert session.collect() == []  # nothing decoded yet
    session.feed(tone(0.2, SR))
    calls = len(backend.calls)
    assert session.collect() == [] and len(backend.calls) == calls  # Backend.ready: never by default
