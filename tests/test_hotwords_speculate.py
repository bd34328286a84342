"""A steered hotword start runs alongside the plain token in one batch of 2 (issue 28: the
decode cost with 500 hotwords), so giving the hotword back costs no extra decoder step."""

from __future__ import annotations

import pytest

from captioner.asr.moonshine import hotword_speculation as hs
from captioner.asr.moonshine import model as mm
from captioner.asr.moonshine.files import default_model_dir
from tests.speech import have_espeak


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return mm.MoonshineModel(default_model_dir(), cache_root=tmp_path_factory.mktemp("model-cache"))


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_speculation_saves_decoder_steps_and_changes_no_token(model, tmp_path, monkeypatch):
    from bench.hotwords import synthetic_words
    from tests.test_hotwords import _clip

    tree = model.hotwords(synthetic_words(500))
    runs = [0]
    real = model.decoder.run_with_iobinding

    def counted(*a, **k):
        runs[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(model.decoder, "run_with_iobinding", counted)
    clips = [_clip(tmp_path, s) for s in ("The meeting will start at nine tomorrow morning in the small conference room.",
                                          "Then call Siobhan and ask about the Kubernetes upgrade.")]
    hidden = [model.encode(c) for c in clips]
    budgets = [model.max_tokens(len(c)) for c in clips]
    fast = [model.decode(h, b, tree) for h, b in zip(hidden, budgets)]
    fast_runs, runs[0] = runs[0], 0
    monkeypatch.setattr(hs, "SPECULATE", False)
    slow = [model.decode(h, b, tree) for h, b in zip(hidden, budgets)]
    assert fast == slow
    assert fast_runs < runs[0], (fast_runs, runs[0])


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_second_tries_and_later_hotword_tokens_run_in_the_batch_and_change_no_token(model, tmp_path, monkeypatch):
    """A place's second hotword try runs in the steered start's batch (a batch of 3), and a
    steered match's later tokens run beside the plain path's next step (two different
    caches in one batch): same tokens as one decoder step at a time, fewer decoder calls."""
    from bench.hotwords import synthetic_words
    from tests.test_hotwords import _clip

    tree = model.hotwords(synthetic_words(500))
    runs = [0]
    real = model.decoder.run_with_iobinding
    real_batch = hs.batch
    kinds = []

    def counted(*a, **k):
        runs[0] += 1
        return real(*a, **k)

    def batch(decoder, outputs, hidden, states, cross, firsts, fixed=None):
        kinds.append((len(firsts), len({id(s) for s in states})))
        return real_batch(decoder, outputs, hidden, states, cross, firsts, fixed)

    monkeypatch.setattr(model.decoder, "run_with_iobinding", counted)
    monkeypatch.setattr(hs, "batch", batch)
    clips = [_clip(tmp_path, s, v) for s, v in (("Then call Siobhan and ask about the Kubernetes upgrade.", "en-gb-scotland"),
                                                ("Doctor Okonkwo will review the Nakamura contract tomorrow.",
                                                 "en-029"))]
    hidden = [model.encode(c) for c in clips]
    budgets = [model.max_tokens(len(c)) for c in clips]
    fast = [model.decode(h, b, tree) for h, b in zip(hidden, budgets)]
    fast_runs, runs[0] = runs[0], 0
    assert (3, 1) in kinds and (2, 2) in kinds, kinds  # a second try batched; a later token beside the plain path
    monkeypatch.setattr(hs, "SPECULATE", False)
    slow = [model.decode(h, b, tree) for h, b in zip(hidden, budgets)]
    assert fast == slow
    assert fast_runs < runs[0], (fast_runs, runs[0])


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_a_float_decoder_is_prepacked_only_once_a_list_is_set(model, tmp_path, monkeypatch):
    """Issue 40: with no hotword list a float decoder's weights are not prepacked (~57 MB less
    resident); the first list swaps in a prepacked session, once, and the plain reading's
    tokens stay the same. (Float: a CPU without fast int8 kernels, :mod:`captioner.asr.moonshine.int8`.)"""
    from captioner.asr.moonshine import int8 as moonshine_int8
    from tests.test_hotwords import _clip

    monkeypatch.setattr(moonshine_int8, "fast_int8", lambda: False)
    fresh = mm.MoonshineModel(default_model_dir(), cache_root=tmp_path / "float-cache")
    assert not fresh.prepared.int8_decoder
    plain = fresh.decoder
    clip = _clip(tmp_path, "The meeting will start at nine tomorrow morning in the small conference room.")
    before = fresh.generate(clip)
    assert not fresh.prepacked
    fresh.hotwords([])
    assert not fresh.prepacked and fresh.decoder is plain  # an empty list is no list
    fresh.hotwords(["Quantaloop"])
    packed = fresh.decoder
    assert fresh.prepacked and packed is not plain
    fresh.hotwords(["Veltrona", "Brightlyne"])
    assert fresh.decoder is packed  # loaded once
    assert fresh.generate(clip) == before


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_an_8_bit_decoder_is_prepacked_from_the_start(model, tmp_path):
    """The 8-bit decoder's kernels run on packed weights only: it is loaded prepacked, and a
    hotword list swaps in nothing."""
    from tests.test_hotwords import _clip

    if not model.prepared.int8_decoder:
        pytest.skip("this CPU runs the float decoder (no fast int8 kernels)")
    fresh = mm.MoonshineModel(default_model_dir(), prepared=model.prepared)
    plain = fresh.decoder
    assert fresh.prepacked
    clip = _clip(tmp_path, "The meeting will start at nine tomorrow morning in the small conference room.")
    before = fresh.generate(clip)
    fresh.hotwords(["Quantaloop"])
    assert fresh.decoder is plain and fresh.generate(clip) == before
