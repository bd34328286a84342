"""Properties of the streaming core (session + batch engine) on a small causal model.

These are the properties the TensorFlowASR inference page pins (section 9): streaming
equals one pass, state is used, only the overlap stays, end() flushes only new audio,
requests share one call, batching does not change a transcript, errors reach every
caller and the worker survives, async equals sync.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from captioner.engine.batcher import BatchEngine
from captioner.engine.rounds import feed_many
from captioner.engine.session import StreamingSession
from captioner.events import TextDelta, TurnBoundary
from tests.toy_model import ToyCausalBackend


def speechy(n: int, seed: int = 0) -> np.ndarray:
    """[n] float32: amplitude-modulated noise, so frame energies vary a lot."""
    rng = np.random.default_rng(seed)
    env = 0.5 * (1 + np.sin(np.arange(n) / 700.0 + seed)) ** 2
    return np.clip(rng.standard_normal(n) * 0.2 * env, -1.0, 1.0).astype(np.float32)


def text_of(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta) and e.final)


def stream(session: StreamingSession, signal: np.ndarray, block: int, end: bool = True) -> str:
    events = []
    for i in range(0, len(signal), block):
        events += session.feed(signal[i : i + block])
    if end:
        events += session.end()
    return text_of(events)


@pytest.fixture
def backend():
    return ToyCausalBackend(batch_size=2)


@pytest.fixture
def engine(backend):
    eng = BatchEngine(backend, max_wait_ms=5)
    yield eng
    eng.close()


def test_block_size_does_not_change_transcript(engine):
    sig = speechy(16000 * 2 + 1234)
    texts = {b: stream(StreamingSession(engine), sig, b) for b in (1, 100, 640, 7919, len(sig))}
    assert len(set(texts.values())) == 1, texts
    assert len(texts[100]) > 20  # the model really emits text on this signal


def test_streaming_equals_one_pass_on_whole_chunks(engine, backend):
    g = backend.geometry
    n_chunks = 40
    sig = speechy(g.chunk_size + (n_chunks - 1) * g.chunk_step, seed=3)
    assert stream(StreamingSession(engine), sig, 333, end=False) == backend.one_pass(sig)
    # and end() on a whole number of chunks adds nothing: no new audio beyond the overlap
    s = StreamingSession(engine)
    s.feed(sig)
    assert text_of(s.end()) == ""


def test_state_is_carried(engine, backend):
    g = backend.geometry
    sig = speechy(g.chunk_size + 5 * g.chunk_step, seed=5)
    s = StreamingSession(engine)
    per_chunk = []
    for k in range(6):
        lo = 0 if k == 0 else g.chunk_size + (k - 1) * g.chunk_step
        hi = g.chunk_size + k * g.chunk_step
        per_chunk.append(text_of(s.feed(sig[lo:hi])))
    # the 4th chunk decoded from a fresh session differs from the carried-state decode
    k = 4
    fresh = StreamingSession(engine)
    chunk4 = sig[k * g.chunk_step : k * g.chunk_step + g.chunk_size]
    assert text_of(fresh.feed(chunk4)) != per_chunk[k]


def test_only_overlap_stays_in_buffer(engine, backend):
    g = backend.geometry
    s = StreamingSession(engine)
    s.feed(speechy(g.chunk_size))
    assert len(s.buffer) == g.overlap == 80
    assert s.pending_samples == 0
    s.feed(speechy(100))
    assert len(s.buffer) == g.overlap + 100
    assert s.pending_samples == 100


def test_end_flushes_only_new_audio(engine, backend):
    g = backend.geometry
    sig = speechy(g.chunk_size + 3 * g.chunk_step + 200, seed=9)
    s = StreamingSession(engine)
    s.feed(sig)
    calls_before = len(backend.calls)
    tail = s.end()
    assert len(backend.calls) - calls_before == 1  # exactly one padded chunk for 200 new samples
    padded = np.concatenate([sig, np.zeros(g.chunk_step - 200, np.float32)])
    assert text_of(s.feed(padded)) == backend.one_pass(padded)  # s was reset by end()
    assert isinstance(tail[-1], TurnBoundary) and tail[-1].kind == "end_of_stream"
    # a session holding only overlap decodes nothing at end (finish-only row)
    s2 = StreamingSession(engine)
    s2.feed(sig[: g.chunk_size])
    before = [r for r in backend.calls]
    assert text_of(s2.end()) == ""
    assert backend.calls[len(before) :] == [1]  # one finish-only row, no audio decoded


def test_end_resets_session(engine):
    sig = speechy(5000)
    s = StreamingSession(engine, source="Meeting")
    a = stream(s, sig, 512)
    assert s.samples_in == 0 and s.state is None and len(s.buffer) == 0
    assert stream(s, sig, 512) == a


def test_requests_share_one_call_and_extra_wait(backend):
    eng = BatchEngine(backend, max_wait_ms=200)
    try:
        g = backend.geometry
        sessions = [StreamingSession(eng, f"s{i}") for i in range(3)]
        barrier = threading.Barrier(3)
        results = {}

        def run(i):
            barrier.wait()
            results[i] = sessions[i].feed(speechy(g.chunk_size, seed=i))

        threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
        [t.start() for t in threads]
        [t.join(10) for t in threads]
        assert sorted(backend.calls) == [1, 2]  # B=2: two share a call, the third waits
        assert all(i in results for i in range(3))
    finally:
        eng.close()


def test_feed_many_batches_two_sources(engine, backend):
    a, b = StreamingSession(engine, "You"), StreamingSession(engine, "Meeting")
    sa, sb = speechy(9000, seed=1), speechy(9000, seed=2)
    ev = feed_many([(a, sa), (b, sb)], end=True)
    assert max(backend.calls) == 2
    assert text_of(e for e in ev if e.source == "You") == stream(StreamingSession(engine), sa, len(sa))
    assert text_of(e for e in ev if e.source == "Meeting") == stream(StreamingSession(engine), sb, len(sb))


def test_row_decodes_same_alone_or_batched(engine, backend):
    sa, sb = speechy(12000, seed=11), speechy(7000, seed=12)
    alone_a = stream(StreamingSession(engine), sa, 640)
    alone_b = stream(StreamingSession(engine), sb, 640)
    a, b = StreamingSession(engine, "A"), StreamingSession(engine, "B")
    ev = []
    for i in range(0, 12000, 640):  # b runs out first: later rows of a decode alone
        ev += feed_many([(a, sa[i : i + 640]), (b, sb[i : i + 640] if i < 7000 else None)])
    ev += feed_many([(a, None), (b, None)], end=True)
    assert 2 in backend.calls and 1 in backend.calls
    assert text_of(e for e in ev if e.source == "A") == alone_a
    assert text_of(e for e in ev if e.source == "B") == alone_b


def test_model_error_reaches_every_waiter_and_worker_survives(backend):
    backend.fail_next = 1
    eng = BatchEngine(backend, max_wait_ms=200)
    try:
        g = backend.geometry
        a, b = StreamingSession(eng, "A"), StreamingSession(eng, "B")
        with pytest.raises(RuntimeError, match="injected model failure"):
            feed_many([(a, speechy(g.chunk_size)), (b, speechy(g.chunk_size, 1))])
        assert backend.calls == [2]
        # both sessions still hold their chunk; the next request works
        ok = feed_many([(a, None), (b, None)])
        assert backend.calls[-1] == 2 and text_of(ok)
    finally:
        eng.close()


def test_async_equals_sync(engine):
    sig = speechy(20000, seed=21)
    sync = stream(StreamingSession(engine), sig, 1000)

    async def run():
        s = StreamingSession(engine)
        ev = []
        for i in range(0, len(sig), 1000):
            ev += await s.infer(sig[i : i + 1000])
        ev += await s.aend()
        return text_of(ev)

    assert asyncio.run(run()) == sync


def test_nan_and_clipped_audio_are_safe(engine):
    sig = speechy(8000, seed=4)
    bad = sig.copy()
    bad[100:200] = np.nan
    bad[300] = np.inf
    bad[400:410] = 7.0
    s = StreamingSession(engine)
    s.feed(bad)
    assert s.nonfinite_samples == 101
    assert s.stats().nonfinite_samples == 101
    ref = sig.copy()
    ref[100:200] = 0
    ref[300] = 0
    ref[400:410] = 1.0
    assert stream(StreamingSession(engine), bad, 777) == stream(StreamingSession(engine), ref, 777)


def test_stereo_block_is_refused_with_message(engine):
    with pytest.raises(ValueError, match="mono"):
        StreamingSession(engine).feed(np.zeros((2, 100), np.float32))


def test_shared_engine_per_backend(backend):
    assert BatchEngine.shared(backend) is BatchEngine.shared(backend)
    assert StreamingSession(backend).engine is StreamingSession(backend).engine
    BatchEngine.shared(backend).close()
