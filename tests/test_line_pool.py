"""Lines of a file read on a pool of two threads (issue 30.3): the events are exactly those of
reading each line in place, in stream order, even when a later line is read first."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from captioner.asr.base import PendingLine
from captioner.asr.moonshine import backend as ms
from captioner.asr.moonshine.line_pool import LinePool
from captioner.engine.readahead import ReadAhead
from captioner.engine.session import StreamingSession
from captioner.engine.turns import TurnSettings
from captioner.events import TextDelta, TurnBoundary
from tests.test_readahead import PROBS, blocks, models  # noqa: F401 - fixture
from tests.test_shared_vad import CountingBatchVad


class Model:
    """Text that depends on the clip only (its length), whatever thread reads it and when.

    ``hold_first``: the first clip's read waits until another read finished (the second line
    overtakes the first), at most 10 s.
    """

    def __init__(self, hold_first: bool = False, fail_len: int | None = None):
        self.hold_first = hold_first
        self.fail_len = fail_len
        self.lock = threading.Lock()
        self.started = 0
        self.finished: list[int] = []  # clip lengths in the order their reads ended
        self.overtaken = threading.Event()
        self.threads: set[str] = set()

    def transcribe(self, audio):
        n = len(audio) // 160
        with self.lock:
            self.started += 1
            first = self.started == 1
            self.threads.add(threading.current_thread().name)
        if first and self.hold_first:
            self.overtaken.wait(timeout=10.0)
        if self.fail_len is not None and n == self.fail_len:
            raise RuntimeError("model broke")
        with self.lock:
            self.finished.append(n)
            if not first:
                self.overtaken.set()
        return f"Line of {n} and," if n % 2 else f"Line of {n}."


def session(model, workers):
    backend = ms.MoonshineBackend(model=model, vad=CountingBatchVad(PROBS), partials=False, line_workers=workers)
    return StreamingSession(backend, "file.wav", TurnSettings()), backend


def in_place():
    """The events of reading every line inside its step, fed block by block."""
    s, backend = session(Model(), 1)
    try:
        assert backend._pool is None
        return [s.feed(b) for b in blocks()], s.end()
    finally:
        backend.close()


def line_lengths(per_block, end=()):
    """The clip length (10 ms units) each final text names, in event order."""
    return [int(e.text.split()[2].rstrip(",.")) for per in [*per_block, end] for e in per if isinstance(e, TextDelta)]


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(ms, "usable_cpus", lambda: 2)  # the pool also on a 1-CPU test machine


def test_a_later_line_read_first_still_comes_out_in_stream_order(models, two_cpus):
    want, want_end = in_place()
    model = Model(hold_first=True)
    s, backend = session(model, 2)
    try:
        assert isinstance(backend._pool, LinePool)
        got = list(ReadAhead(s, blocks()))
        got_end = s.end()
    finally:
        backend.close()
    lens = line_lengths(want, want_end)
    assert len(lens) == 3
    # the second line's read ended before the first's: the pool really read them at once
    assert model.overtaken.is_set() and model.finished[:2] == [lens[1], lens[0]]
    assert got == want and got_end == want_end
    finals = [e for per in got for e in per if isinstance(e, TextDelta)] + \
        [e for e in got_end if isinstance(e, TextDelta)]
    assert len(finals) == 3 and [e.start for e in finals] == sorted(e.start for e in finals)
    assert all(t.startswith("captioner-lines") for t in model.threads)
    assert any(isinstance(e, TurnBoundary) for per in got for e in per)


def test_feeding_block_by_block_with_the_pool_gives_the_same_events(models, two_cpus):
    want, want_end = in_place()
    s, backend = session(Model(), 2)
    try:
        got = [s.feed(b) for b in blocks()]
        got_end = s.end()
    finally:
        backend.close()
    assert got == want and got_end == want_end


def test_a_step_holds_a_pending_line_where_the_lines_events_go(two_cpus):
    s, backend = session(Model(), 2)
    try:
        rows = []
        for b in blocks():
            s._push(b)
            while (row := s._next_row()) is not None:
                result = backend.step([row])[0]
                s._advance(row, result, 0.0)
                rows.append(result.events)
        pending = [e for per in rows for e in per if isinstance(e, PendingLine)]
        assert len(pending) == 3 and all(isinstance(e, PendingLine) for per in rows for e in per)
        finals = [e for ev in pending for e in ev.events() if isinstance(e, TextDelta)]
        assert len(finals) == 3 and finals[0].text.startswith("Line of") and finals[0].start < finals[1].start
    finally:
        backend.close()


def test_a_failed_line_read_is_raised_after_the_lines_before_it(models, two_cpus):
    want, _ = in_place()
    lens = line_lengths(want)
    s, backend = session(Model(fail_len=lens[1]), 2)
    got = []
    try:
        with pytest.raises(RuntimeError, match="model broke"):
            for events in ReadAhead(s, blocks()):
                got.append(events)
    finally:
        backend.close()
    assert line_lengths(got) == lens[:1]


def test_partials_or_one_worker_read_lines_in_place(two_cpus):
    for partials, workers in ((True, 2), (False, 1)):
        backend = ms.MoonshineBackend(model=Model(), vad=CountingBatchVad(PROBS), partials=partials,
                                      line_workers=workers)
        try:
            assert backend._pool is None
        finally:
            backend.close()


def test_the_pool_waits_for_room_and_close_drops_what_did_not_start():
    gate = threading.Event()
    started = []

    def read(clip, at_end):
        started.append(len(clip))
        gate.wait(timeout=10.0)
        return str(len(clip))

    pool = LinePool(read, workers=1, max_pending=2)
    first = pool.submit(np.zeros(1, np.float32), False)
    second = pool.submit(np.zeros(2, np.float32), False)
    blocked = threading.Thread(target=pool.submit, args=(np.zeros(3, np.float32), False), daemon=True)
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # two lines not read yet: the third waits for room
    gate.set()
    assert first.result(timeout=10) == "1" and second.result(timeout=10) == "2"
    blocked.join(10)
    assert not blocked.is_alive()
    pool.close()
    assert started[:2] == [1, 2]


@pytest.mark.slow
def test_transcribe_on_the_real_model_writes_the_same_transcript_with_and_without_the_pool(tmp_path, monkeypatch,
                                                                                          two_cpus):
    import json

    from captioner.asr.moonshine import line_pool
    from captioner.cli import main
    from tests.speech import have_espeak, speech_file

    if not have_espeak():
        pytest.skip("espeak-ng is not installed")
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    wav, _ = speech_file(tmp_path / "speech.wav")
    import captioner.commands.transcribe as tr

    made, waits = [], []
    real = LinePool.__init__
    monkeypatch.setattr(LinePool, "__init__", lambda self, *a, **k: made.append(1) or real(self, *a, **k))
    session = tr.StreamingSession
    monkeypatch.setattr(tr, "StreamingSession", lambda engine, *a, **k: waits.append(engine.max_wait_ms) or session(
        engine, *a, **k))
    out = {}
    for workers in (1, 2):
        monkeypatch.setattr(line_pool, "WORKERS", workers)
        path = tmp_path / f"out{workers}.json"
        assert main(["transcribe", str(wav), "-o", str(path)]) == 0
        out[workers] = json.loads(path.read_text())
        out[workers].pop("metadata", None)
    assert made == [1]  # the pool only with two workers
    assert waits == [0.0, 0.0]  # one file, one session: the engine never waits for other sessions' chunks
    assert out[2] == out[1]
    assert len(out[1]["segments"]) >= 1 and "meeting" in json.dumps(out[1]).lower()
