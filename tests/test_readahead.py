"""Reading a file ahead (issue 30.3): the turn half of one chunk overlaps the decoding of the
next, and the events are exactly those of feeding block by block."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from captioner.asr.moonshine import backend as ms
from captioner.engine import turn_models
from captioner.engine.readahead import ReadAhead
from captioner.engine.session import StreamingSession
from captioner.engine.turns import TurnModels, TurnSettings
from captioner.events import TextDelta, TurnBoundary
from tests.test_shared_vad import CountingBatchVad

SR = 16000
#: Speech / pause pattern (32 ms windows): three lines, pauses the classifier is asked about.
PROBS = ([0.0] * 10 + [0.9] * 60 + [0.0] * 40 + [0.9] * 50 + [0.0] * 110 + [0.9] * 40 + [0.0] * 100)


class Model:
    """Text that depends on the clip (length), so a wrong clip shows."""

    def __init__(self, fail_at: int | None = None):
        self.n = 0
        self.fail_at = fail_at

    def transcribe(self, audio):
        self.n += 1
        if self.fail_at is not None and self.n >= self.fail_at:
            raise RuntimeError("model broke")
        return f"Line of {len(audio) // 160} and," if self.n % 2 else f"Line of {len(audio) // 160}."


@pytest.fixture
def models(monkeypatch):
    asked = []

    def classifier(audio):
        asked.append(len(audio))
        return 0.7

    monkeypatch.setitem(turn_models._models, True, TurnModels(CountingBatchVad(PROBS), classifier))
    return asked


def session(model=None):
    backend = ms.MoonshineBackend(model=model or Model(), vad=CountingBatchVad(PROBS), partials=False)
    return StreamingSession(backend, "file.wav", TurnSettings()), backend


def blocks():
    audio = np.zeros(len(PROBS) * 512, np.float32)
    return [audio[i : i + 1600] for i in range(0, len(audio), 1600)]


def sequential():
    s, backend = session()
    try:
        return [s.feed(b) for b in blocks()], s.end()
    finally:
        backend.close()


def test_read_ahead_gives_the_events_of_feeding_block_by_block(models):
    want, want_end = sequential()
    asked_before = list(models)
    models.clear()
    s, backend = session()
    try:
        got = list(ReadAhead(s, blocks(), max_ahead=7))  # a small queue: the reader waits for room too
        got_end = s.end()
    finally:
        backend.close()
    assert got == want and got_end == want_end
    kinds = [e.kind for per in want for e in per if isinstance(e, TurnBoundary)]
    assert "semantic" in kinds and any(isinstance(e, TextDelta) for per in want for e in per)
    assert models == asked_before  # the classifier ran on the same pauses, once each


def test_the_turn_half_of_a_chunk_runs_while_the_next_chunk_decodes(models):
    s, backend = session()
    decoded = threading.Event()
    step = backend.step

    def counting_step(rows):
        out = step(rows)
        if s._steps >= 1:  # a second chunk reached the model
            decoded.set()
        return out

    backend.step = counting_step
    post, seen = s._post, []

    def slow_post(*a, **k):
        if not seen:
            seen.append(decoded.wait(timeout=10.0))  # feed() would wait here forever: it decodes after
        return post(*a, **k)

    s._post = slow_post
    try:
        ahead = ReadAhead(s, blocks())
        next(ahead)
        ahead.close()
    finally:
        backend.close()
    assert seen == [True]


def test_close_hands_out_what_was_decoded_and_the_session_can_end(models):
    want, want_end = sequential()
    s, backend = session()
    try:
        ahead = ReadAhead(s, blocks(), max_ahead=20)
        got = [next(ahead) for _ in range(20)]
        rest = ahead.close()
        n = s._steps  # chunks decoded in all
        assert n >= 20
        assert [e for per in got for e in per] + rest == [e for per in want[:n] for e in per]
        s.end()  # idle again: nothing raises
    finally:
        backend.close()


def test_a_model_failure_comes_after_the_events_decoded_before_it(models):
    want, _ = sequential()
    s, backend = session(Model(fail_at=2))
    got = []
    try:
        with pytest.raises(RuntimeError, match="model broke"):
            for events in ReadAhead(s, blocks()):
                got.append(events)
    finally:
        backend.close()
    assert got and got == want[: len(got)]
    assert any(isinstance(e, TextDelta) for per in got for e in per)  # the first line's text came out
