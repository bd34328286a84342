"""Audio8 streaming step on a tiny random checkpoint (CPU): exactness, batching, rolling window, VAD."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from audio8_helpers import decode_stream, make_audio, one_torch_thread, reference_tokens, tiny_dir  # noqa: E402,F401

from captioner.asr.audio8 import load_audio8_backend  # noqa: E402
from captioner.asr.audio8.detok import IncrementalDetokenizer  # noqa: E402
from captioner.asr.audio8.streaming import StreamingDecoder  # noqa: E402
from captioner.asr.audio8.tiny import build_tiny_checkpoint  # noqa: E402
from captioner.asr.audio8.vad import TurnHysteresis  # noqa: E402
from captioner.engine.batcher import BatchEngine  # noqa: E402
from captioner.engine.session import StreamingSession, feed_many  # noqa: E402
from captioner.events import TextDelta, TurnBoundary, VadProbabilities  # noqa: E402


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def backend(tiny_dir):
    return load_audio8_backend(tiny_dir, clock_ms=80, delay_ms=480, language="en", check_speed=False)


def _decoder(backend, **kw):
    d = backend.decoder
    args = dict(window_tokens=d.window, trim_interval_tokens=d.interval, tower_capacity=None)
    args.update(kw)
    return StreamingDecoder(backend.checkpoint.model, backend.checkpoint.feature_extractor, backend.point,
                            d.prompt_ids, d.eos_id, **args)


def _tokens(outs):
    return [t.token for t in outs]


def _text(events):
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("clock,delay,seconds", [(80, 480, 2.3), (120, 240, 1.7), (160, 480, 2.0)])
def test_stream_equals_one_pass_reference(tiny_dir, clock, delay, seconds):
    b = load_audio8_backend(tiny_dir, clock_ms=clock, delay_ms=delay, check_speed=False)
    audio = make_audio(seconds, seed=clock)
    state = b.new_state()
    got = _tokens(decode_stream(b.decoder, state, audio, b.point.samples_per_token))
    ref = reference_tokens(b.checkpoint, b.point, b.decoder.prompt_ids, audio)
    assert got == ref
    assert len(got) == math.ceil(len(audio) / b.point.samples_per_token) + 10
    assert len(set(got)) > 2  # the tokens follow the audio, not one token forever
    if clock == 80:
        assert state.tower_rebases >= 1  # the reference tower never re-bases: re-basing is exact


def test_session_token_count_and_times(backend):
    audio = make_audio(2.05, seed=3)
    s = StreamingSession(backend, "mic")
    events = s.feed(audio) + s.end()
    vads = [e for e in events if isinstance(e, VadProbabilities)]
    assert len(vads) == math.ceil(len(audio) / 1280) + 10  # one step per clock step + right pad
    assert all(len(v.eot) == 4 and v.horizons == (0.5, 1.0, 2.0, 3.0) for v in vads)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert deltas and all(d.final and d.source == "mic" for d in deltas)
    real_end = len(audio) / 16000
    for d in deltas:
        assert 0.0 <= d.start <= d.end <= real_end + 1e-9
    assert [d.start for d in deltas] == sorted(d.start for d in deltas)


@pytest.mark.parametrize("block", [100, 1279, 4000])
def test_block_size_does_not_change_tokens(backend, block):
    audio = make_audio(1.6, seed=5)
    s = StreamingSession(backend)
    whole = s.feed(audio) + s.end()
    s = StreamingSession(backend)
    parts = []
    for i in range(0, len(audio), block):
        parts += s.feed(audio[i : i + block])
    parts += s.end()
    assert [e for e in parts if not isinstance(e, VadProbabilities)] == [
        e for e in whole if not isinstance(e, VadProbabilities)]
    assert [e.eot for e in parts if isinstance(e, VadProbabilities)] == [
        e.eot for e in whole if isinstance(e, VadProbabilities)]


def test_batched_sessions_decode_as_alone(backend):
    a, c = make_audio(2.2, seed=7), make_audio(1.5, seed=8)

    def alone(audio):
        s = StreamingSession(backend, "x")
        return s.feed(audio) + s.end()

    ref_a, ref_c = alone(a), alone(c)
    engine = BatchEngine(backend, max_wait_ms=50)
    try:
        sa, sc = StreamingSession(engine, "x"), StreamingSession(engine, "y")
        # sessions at different phases: c starts 0.7 s later, so prefill and steady rows and
        # different cache lengths share calls
        ev = feed_many([(sa, a[:11200]), (sc, None)])
        ev += feed_many([(sa, a[11200:]), (sc, c)], end=True)
    finally:
        engine.close()
    assert engine.rows > engine.calls  # some calls really carried two rows
    got_a = [e for e in ev if e.source == "x"]
    got_c = [e for e in ev if e.source == "y"]
    assert _text(got_a) == _text(ref_a) and _text(got_c) == _text(ref_c.copy())
    for got, ref in ((got_a, ref_a), (got_c, ref_c)):
        gv = [e.eot for e in got if isinstance(e, VadProbabilities)]
        rv = [e.eot for e in ref if isinstance(e, VadProbabilities)]
        assert len(gv) == len(rv)
        np.testing.assert_allclose(np.array(gv), np.array(rv), atol=1e-5)


def test_long_window_changes_nothing(backend):
    audio = make_audio(2.0, seed=11)
    n = math.ceil(len(audio) / 1280) + 10
    exact = backend.point.prefill_tokens + n - 1  # ledger length at the end of the stream
    toks = {}
    for window in (exact, 10_000):
        dec = _decoder(backend, window_tokens=window, trim_interval_tokens=4)
        state = dec.new_state(0.5, 0.2)
        toks[window] = _tokens(decode_stream(dec, state, audio, 1280))
        assert state.trims == 0
    assert toks[exact] == toks[10_000]


def test_short_window_rebased_decode_equals_fresh_decode(backend):
    model = backend.checkpoint.model
    dec = _decoder(backend, window_tokens=34, trim_interval_tokens=3)
    state = dec.new_state(0.5, 0.2)
    audio = make_audio(3.0, seed=13)
    spt = 1280
    n = math.ceil(len(audio) / spt) + 10
    lag = backend.point.num_delay_tokens + 1
    padded = np.zeros((n + lag) * spt, np.float32)  # the silence the final row would synthesise
    padded[: len(audio)] = audio
    checked = 0
    prefix = None
    for i in range(n + lag):  # never the final row: exactly one token per call, checked right away
        dec.push_audio(state, padded[i * spt : (i + 1) * spt], False)
        outs = dec.run([state])[0]
        assert len(outs) == (1 if i >= lag else 0)
        for tok in outs:
            length = state.decoder.length
            assert length <= 34
            if prefix is None:
                prefix = state.ledger[:16].clone()
            with torch.inference_mode():
                fresh = model.decoder(state.ledger[None, :length], torch.arange(length)[None], None, None, dec.t_cond)
                logits = model.logits(fresh[0, -1])
                logits[dec.eos_id] = float("-inf")
            assert int(logits.argmax()) == tok.token
            checked += 1
    assert state.trims >= 5 and checked == n
    assert torch.equal(state.ledger[:16], prefix)  # the stable prefix (BOS + language + pads) survives


def test_tower_rebasing_is_exact(backend):
    audio = make_audio(5.0, seed=17)
    small = _decoder(backend)  # capacity 160 positions: re-bases every ~34 steps
    big = _decoder(backend, tower_capacity=4000)
    s1, s2 = small.new_state(0.5, 0.2), big.new_state(0.5, 0.2)
    t1 = decode_stream(small, s1, audio, 1280)
    t2 = decode_stream(big, s2, audio, 1280)
    assert s1.tower_rebases >= 2 and s2.tower_rebases == 0
    assert _tokens(t1) == _tokens(t2)
    np.testing.assert_allclose([t.eot for t in t1], [t.eot for t in t2], atol=1e-4)


def test_two_hour_stream_keeps_memory_bounded(backend):
    """A long stream at tiny size: thousands of steps cross the rolling window and the tower's
    re-base point many times; every buffer keeps its size (a 2-hour stream is the same loop)."""
    dec = _decoder(backend, window_tokens=40, trim_interval_tokens=4)
    state = dec.new_state(0.5, 0.2)
    rng = np.random.default_rng(0)
    shapes = (state.tower.keys.shape, state.decoder.keys.shape, state.ledger.shape)
    max_audio = 0
    steps = 2500  # 200 s of audio at 80 ms
    for i in range(steps):
        dec.push_audio(state, (0.1 * rng.standard_normal(1280)).astype(np.float32), False)
        dec.run([state])
        max_audio = max(max_audio, len(state.audio))
        assert state.decoder.length <= 40 and state.tower.length <= state.tower.capacity
    assert (state.tower.keys.shape, state.decoder.keys.shape, state.ledger.shape) == shapes
    assert state.windows_done == steps - backend.point.num_delay_tokens - 1
    assert state.trims >= 500 and state.tower_rebases >= 60
    assert max_audio <= 2 * 1280 + 840 + 40 + 18 * 1280 + 7 * 1280  # look-back + delay lag, never the stream


def test_vad_hysteresis_fires_once_per_pause():
    h = TurnHysteresis(threshold=0.6, hysteresis=0.2)
    seq = [0.9, 0.9, 0.1, 0.2, 0.7, 0.8, 0.9, 0.5, 0.45, 0.7, 0.3, 0.65, 0.9]
    fired = [i for i, p in enumerate(seq) if h.update(p)]
    # leading silence is no turn end; 0.5/0.45 stay above the re-arm level 0.4; 0.3 re-arms
    assert fired == [4, 11]
    with pytest.raises(ValueError):
        TurnHysteresis(threshold=0.0)


def test_turn_boundaries_follow_the_selected_horizon(tiny_dir):
    b = load_audio8_backend(tiny_dir, vad_horizon_s=0.5, vad_threshold=0.2, vad_hysteresis=0.05,
                            check_speed=False)
    s = StreamingSession(b, "mic", turns=False)  # the backend's own boundaries, before the session's turn rules
    events = s.feed(make_audio(4.0, seed=21)) + s.end()
    ref = TurnHysteresis(0.2, 0.05)
    expected = [v.time for v in events if isinstance(v, VadProbabilities) and ref.update(v.eot[0])]
    got = [e for e in events if isinstance(e, TurnBoundary) and e.kind == "semantic_vad"]
    assert got and [e.time for e in got] == expected
    assert all(e.probability >= 0.2 for e in got)


def test_detokenizer_never_splits_a_character(backend):
    tok = backend.checkpoint.tokenizer
    ids = tok.encode("龍x").ids  # not in the tiny corpus: 3 byte tokens + 'x'
    assert len(ids) == 4
    d = IncrementalDetokenizer()
    assert d.push(tok, ids[0], 0) is None and d.push(tok, ids[1], 1) is None
    assert d.push(tok, ids[2], 2) == ("龍", 0)
    assert d.push(tok, ids[3], 3) == ("x", 3)
    assert d.push(tok, ids[0], 4) is None
    assert d.flush(tok) == ("\ufffd", 4)  # end of stream releases what is held


def test_empty_stream_and_finish_only_rows(backend):
    from captioner.asr.base import BackendError, StepRow

    s = StreamingSession(backend)
    assert s.feed(np.zeros(0, np.float32)) == [] and s.end() == []  # nothing fed: nothing decoded
    res = backend.step([StepRow(None, None, 0.0, 0.0, True)])
    assert res[0].state is None and res[0].events == []
    # a session that ends between chunks: the final row decodes every remaining step
    s = StreamingSession(backend)
    ev = s.feed(make_audio(0.3, seed=2)) + s.end()
    assert len([e for e in ev if isinstance(e, VadProbabilities)]) == math.ceil(0.3 * 16000 / 1280) + 10
    with pytest.raises(BackendError, match="3 rows for a batch of 2"):
        backend.step([StepRow(np.zeros(1280, np.float32), None, 0.0, 0.08)] * 3)
    with pytest.raises(BackendError, match="chunks of 1280 samples"):
        backend.step([StepRow(np.zeros(1000, np.float32), None, 0.0, 0.08)])
