"""Audio8 streaming step on a tiny random checkpoint (CPU): exactness, batching, rolling window, VAD."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from audio8_helpers import (  # noqa: E402,F401
    decode_stream, interleaved_sessions, lockstep_sessions, make_audio, one_torch_thread, reference_tokens, tiny_dir)

from captioner.asr.audio8 import load_audio8_backend  # noqa: E402
from captioner.asr.audio8.detok import IncrementalDetokenizer  # noqa: E402
from captioner.asr.audio8.streaming import StreamingDecoder  # noqa: E402
from captioner.asr.audio8.tiny import build_tiny_checkpoint  # noqa: E402
from captioner.asr.audio8.vad import TurnHysteresis  # noqa: E402
from captioner.engine.batcher import BatchEngine  # noqa: E402
from captioner.engine.rounds import feed_many  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
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
    assert len(got) == math.ceil(len(audio) / b.point.samples_per_token) + 10 + 1
    assert len(set(got)) > 2  # the tokens follow the audio, not one token forever
    if clock == 80:
        assert state.tower_rebases >= 1  # the reference tower never re-bases: re-basing is exact


def test_session_token_count_and_times(backend):
    audio = make_audio(2.05, seed=3)
    s = StreamingSession(backend, "mic")
    events = s.feed(audio) + s.end()
    vads = [e for e in events if isinstance(e, VadProbabilities)]
    assert len(vads) == math.ceil(len(audio) / 1280) + 10 + 1  # one per clock step + right pad + 1
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
    n = math.ceil(len(audio) / 1280) + 10 + 1  # tokens
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


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        import os

        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_two_hour_stream_keeps_memory_bounded(backend):
    """A long stream at tiny size, two sessions in every call: thousands of steps cross the
    rolling window and the tower's re-base point many times; the static pools keep their
    tensors (same addresses: trims and re-bases work in place), every buffer keeps its size and
    the process does not grow (a 2-hour stream is the same loop)."""
    dec = _decoder(backend, window_tokens=40, trim_interval_tokens=4, slots=2)
    states = [dec.new_state(0.5, 0.2), dec.new_state(0.5, 0.2)]
    pools = (dec.tower_pool, dec.decoder_pool)
    ptrs = [(p.keys.data_ptr(), p.values.data_ptr()) for p in pools]
    rng = np.random.default_rng(0)
    shapes = [(s.tower.keys.shape, s.decoder.keys.shape, s.ledger.shape) for s in states]
    max_audio = 0
    steps = 2500  # 200 s of audio at 80 ms
    rss = []
    for i in range(steps):
        for s in states:
            dec.push_audio(s, (0.1 * rng.standard_normal(1280)).astype(np.float32), False)
        dec.run(states)
        for s in states:
            max_audio = max(max_audio, len(s.audio))
            assert s.decoder.length <= 40 and s.tower.length <= s.tower.capacity
        if i in (500, steps - 1):
            rss.append(_rss_mb())
    assert [(s.tower.keys.shape, s.decoder.keys.shape, s.ledger.shape) for s in states] == shapes
    assert [(p.keys.data_ptr(), p.values.data_ptr()) for p in pools] == ptrs and all(p.grows == 0 for p in pools)
    for s in states:
        assert s.windows_done == steps - backend.point.num_delay_tokens - 1
        assert s.trims >= 500 and s.tower_rebases >= 60
    assert max_audio <= 2 * 1280 + 840 + 40 + 18 * 1280 + 7 * 1280  # look-back + delay lag, never the stream
    assert rss[1] - rss[0] < 16.0, rss  # MB over 2000 steps: nothing accumulates per step


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
    assert len([e for e in ev if isinstance(e, VadProbabilities)]) == math.ceil(0.3 * 16000 / 1280) + 10 + 1
    with pytest.raises(BackendError, match="3 rows for a batch of 2"):
        backend.step([StepRow(np.zeros(1280, np.float32), None, 0.0, 0.08)] * 3)
    with pytest.raises(BackendError, match="chunks of 1280 samples"):
        backend.step([StepRow(np.zeros(1000, np.float32), None, 0.0, 0.08)])


#: Generated tokens for a 51,628-sample clip, as the reference's own
#: ``simulated_streaming_greedy_decode_batch`` counts them: left pad + delay + real audio
#: tokens + 1 + right pad positions, the first token from the last prefill position, i.e.
#: ceil(51628 / samples_per_token) + 10 + 1 (pinned numbers, not a formula of our own code).
REFERENCE_TOKEN_COUNTS = {(80, 480): 52, (80, 240): 52, (120, 240): 38, (120, 480): 38, (160, 320): 32,
                          (160, 480): 32}


@pytest.mark.parametrize("clock,delay", sorted(REFERENCE_TOKEN_COUNTS))
def test_token_count_matches_the_reference_schedule(tiny_dir, clock, delay):
    b = load_audio8_backend(tiny_dir, clock_ms=clock, delay_ms=delay, check_speed=False)
    audio = make_audio(51_628 / 16000, seed=clock + delay)
    assert len(audio) == 51_628
    expected = REFERENCE_TOKEN_COUNTS[(clock, delay)]
    # through a session (feed + end), in odd blocks: one VadProbabilities per generated token
    s = StreamingSession(b, "mic")
    events = []
    for i in range(0, len(audio), 3001):
        events += s.feed(audio[i : i + 3001])
    events += s.end()
    assert len([e for e in events if isinstance(e, VadProbabilities)]) == expected
    # the decoder's own stream and the one-pass reference schedule agree on count and tokens
    got = _tokens(decode_stream(b.decoder, b.new_state(), audio, b.point.samples_per_token))
    ref = reference_tokens(b.checkpoint, b.point, b.decoder.prompt_ids, audio)
    assert len(got) == len(ref) == expected
    assert got == ref


@pytest.mark.parametrize("window,interval,tower_capacity", [(40, 4, None), (34, 3, 200), (10_000, 38, 4000)])
def test_static_cache_equals_per_session_path(backend, window, interval, tower_capacity):
    """The static pool (rows of shared pre-allocated caches, trimmed and re-based in place, read
    as a view) gives exactly the tokens and VAD of the per-session buffers that each call stacks;
    with fixed shapes (attention over the whole capacity under a mask) the same tokens."""
    got = {}
    for kind, cache, fixed in (("per_session", "per_session", False), ("static", "static", False),
                               ("fixed", "static", True)):
        dec = _decoder(backend, window_tokens=window, trim_interval_tokens=interval, tower_capacity=tower_capacity,
                       cache=cache, slots=3, fixed_shapes=fixed)
        got[kind], counters = interleaved_sessions(dec, steps=110, seed=window)
        if window < 100:
            assert counters["trims"] >= 10
        if tower_capacity != 4000:
            assert counters["tower_rebases"] >= 3
        if cache == "static":
            pools = (dec.tower_pool, dec.decoder_pool)
            assert all(p.grows == 0 and p.slots == 3 for p in pools)  # d reused b's row
    assert got["static"] == got["per_session"]
    assert all(len(v) > 20 for v in got["static"].values())
    assert len(got["static"]["b"]) == 30 - 5 + 1 + 1  # 26 chunks, the final row decodes all + 1
    for name, ref in got["static"].items():
        fixed = got["fixed"][name]
        assert [t[:2] for t in fixed] == [t[:2] for t in ref]
        np.testing.assert_allclose([t[2] for t in fixed], [t[2] for t in ref], atol=1e-5)


def test_static_pool_rows_are_given_back(backend):
    dec = _decoder(backend, slots=2)
    pool = dec.decoder_pool
    a, b = dec.new_state(0.5, 0.2), dec.new_state(0.5, 0.2)
    assert (a.decoder.slot, b.decoder.slot, pool.in_use) == (0, 1, 2)
    c = dec.new_state(0.5, 0.2)  # a third live session grows the pool; nothing else allocates
    assert c.decoder.slot == 2 and pool.grows == 1 and pool.slots == 4
    del b  # a dropped state frees its rows
    assert pool.in_use == 2 and dec.tower_pool.in_use == 2
    assert dec.new_state(0.5, 0.2).decoder.slot == 1  # a temporary: freed again at once
    toks = decode_stream(dec, a, make_audio(0.5, seed=1), 1280)  # decoded to its end: freed
    assert len(toks) == math.ceil(8000 / 1280) + 10 + 1 and pool.in_use == 1
    with pytest.raises(RuntimeError, match="decoded to its end"):
        dec.run([a])
    ptrs = (pool.keys.data_ptr(), dec.tower_pool.keys.data_ptr())
    for _ in range(3):  # start/end cycles reuse the same rows and tensors
        s = dec.new_state(0.5, 0.2)
        decode_stream(dec, s, make_audio(0.3, seed=2), 1280)
    assert (pool.keys.data_ptr(), dec.tower_pool.keys.data_ptr()) == ptrs and pool.in_use == 1


@pytest.mark.parametrize("cache,fixed", [("static", False), ("per_session", False), ("static", True)])
def test_lockstep_prefills_and_trims_batch_as_alone(backend, cache, fixed):
    """Sessions in lock step prefill in one call and re-prefill their trims in one call; each
    row decodes the tokens it decodes alone (the same noise through a one-session decoder)."""
    dec = _decoder(backend, window_tokens=40, trim_interval_tokens=4, cache=cache, slots=3, fixed_shapes=fixed)
    together, states = lockstep_sessions(dec, sessions=3, steps=100, seed=4)
    assert all(s.trims >= 15 for s in states)
    rng = np.random.default_rng(4)
    noise = [[(0.1 * rng.standard_normal(1280)).astype(np.float32) for _ in range(3)] for _ in range(100)]
    for b in range(3):
        alone = _decoder(backend, window_tokens=40, trim_interval_tokens=4, cache=cache)
        s = alone.new_state(0.5, 0.2)
        toks = []
        for step in noise:
            alone.push_audio(s, step[b], False)
            toks += alone.run([s])[0]
        assert [t.token for t in toks] == [t[1] for t in together[b]]
        np.testing.assert_allclose([t.eot for t in toks], [t[2] for t in together[b]], atol=1e-5)


def test_fixed_shapes_keep_every_steady_step_one_shape(backend, monkeypatch):
    """With ``fixed_shapes`` a steady step's attention always spans the whole capacity, so its
    tensor shapes depend on the batch size alone; without it they grow with the stream."""
    from captioner.asr.audio8 import kv_caches

    seen: dict[bool, set] = {}
    update = kv_caches.PooledKV.update

    def spy(self, k, v, layer_idx, *a, **kw):
        if layer_idx == 0 and self.t in (1, backend.point.frame_len):  # steady steps only
            seen.setdefault(current, set()).add((self.t, self.total))
        return update(self, k, v, layer_idx, *a, **kw)

    monkeypatch.setattr(kv_caches.PooledKV, "update", spy)
    for current in (False, True):
        dec = _decoder(backend, window_tokens=40, trim_interval_tokens=4, slots=2, fixed_shapes=current)
        lockstep_sessions(dec, sessions=2, steps=60, seed=9)
    assert seen[True] == {(1, 40), (backend.point.frame_len, dec.tower_capacity)}
    assert len(seen[False]) > 20
