"""The hotwords' second pass (issue 28): a decoded word that sounds like a hotword is respelled
when the model, teacher-forced, agrees (:mod:`captioner.asr.moonshine.hotword_respell`).

The fast tests use the real ``tokenizer.bin`` with scripted log-probabilities; the ``slow``
ones run the shipped Moonshine model on espeak-ng speech.
"""

from __future__ import annotations

import numpy as np
import pytest

from captioner.asr.moonshine import hotword_respell as hr
from captioner.asr.moonshine.hotwords import HotwordTree
from captioner.asr.moonshine.files import default_model_dir
from captioner.asr.moonshine.tokenizer import END, SPACE_MARK, Tokenizer
from tests.speech import have_espeak

V = 32768


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(default_model_dir() / "tokenizer.bin")


def test_sound_key_folds_spellings_of_one_sound():
    assert hr.sound_key("Kwanta Loop") == hr.sound_key("Quantaloop") == "kvantalop"
    assert hr.sound_key("Meltrona") != hr.sound_key("Veltrona")


def test_candidates_are_the_last_words_that_sound_like_a_hotword(tok):
    speller = hr.Respeller(["Quantaloop", "Terraform", "Kafka"], tok)
    text = tok.encode(SPACE_MARK + "the last Kwanta Loop")
    (cand,) = [c for c in speller.candidates(text) if c.word == "Quantaloop"][:1]
    assert tok.pieces[text[cand.start]].decode().startswith(SPACE_MARK + "K") and cand.end == len(text)
    assert tok.decode(text[cand.start:cand.end]).strip() == "Kwanta Loop"
    assert cand.ids == tuple(tok.encode(SPACE_MARK + "Quantaloop"))
    # a hotword already written (or its possessive) is never respelled, nor a span holding it
    assert speller.candidates(tok.encode(SPACE_MARK + "our Terraform's")) == []
    assert speller.candidates(tok.encode(SPACE_MARK + "the Quantaloop")) == []
    # a short word is close to too many words: not compared ("Kafka" vs "cafe")
    assert speller.candidates(tok.encode(SPACE_MARK + "a cafe")) == []


class Outs:
    """Stand-in for one decoder step's outputs: ``outs[0].numpy()`` are ``[1, 1, V]`` logits."""

    def __init__(self, lp: dict[int, float], rest: float = -30.0):
        logits = np.full(V, rest, np.float32)
        for t, v in lp.items():
            logits[t] = v
        self.logits = logits

    def __getitem__(self, i):
        assert i == 0
        return self

    def numpy(self):
        return self.logits[None, None, :]


def _respelling(tok, hotword_lp: float, sure: bool = False):
    """A clip that decoded " the Wrightline" and goes on with " is"; the model gives the
    hotword Brightlyne's tokens ``hotword_lp`` each (the decoded ones log(1/2) each, as likely
    as another token; ``sure``: 0, no other token)."""
    tree = HotwordTree(["Brightlyne"], tok, boost=6.0)
    tokens = tok.encode(SPACE_MARK + "the Wrightline")
    word = tok.encode(SPACE_MARK + "Brightlyne")
    start = len(tok.encode(SPACE_MARK + "the"))
    nxt = tok.encode(SPACE_MARK + "is")[0]
    other = {} if sure else {tok.encode(SPACE_MARK + "zebra")[0]: 0.0}
    states = [Outs({t: 0.0}) for t in tokens[:start]] + [Outs({t: 0.0, **other}) for t in tokens[start:]]
    states += [Outs({nxt: 0.0})]
    states[start] = Outs({tokens[start]: 0.0, word[0]: hotword_lp, **other})
    forced = []

    def force(state, cross, ys, floor, lps):  # as MoonshineModel's: a decoder step per token once above the floor
        lps = list(lps)
        for i in range(len(lps), len(ys)):
            lp = float(state.logits[ys[0]]) if i == 0 else hotword_lp
            if sum(lps) + lp < floor:
                return lps, state, False
            if i == 0:
                forced.append(tuple(ys))
            lps.append(lp)
        return lps, Outs({nxt: 0.0}), True

    return hr.Respelling(tree, force), tokens, states, nxt, word, start, forced


def test_a_close_word_the_model_accepts_is_respelled(tok):
    respell, tokens, states, nxt, word, start, forced = _respelling(tok, hotword_lp=-2.0)
    cand, lps, outs = respell.check(tokens, states, nxt)
    assert (cand.start, cand.end, cand.ids) == (start, len(tokens), tuple(word))
    assert lps == [-2.0] * len(word)
    assert forced == [tuple(word)]


def test_a_close_word_the_model_rules_out_is_kept_without_a_full_check(tok):
    respell, tokens, states, nxt, word, start, forced = _respelling(tok, hotword_lp=-12.0)
    assert respell.check(tokens, states, nxt) is None
    assert respell.check(tokens, states, END) is None  # each span is checked once
    assert forced == [tuple(word)]


def test_a_word_read_surely_is_not_checked(tok):
    respell, tokens, states, nxt, word, start, forced = _respelling(tok, hotword_lp=-2.0, sure=True)
    assert respell.check(tokens, states, nxt) is None and forced == []


def test_a_check_against_a_lower_floor_resumes_where_the_last_one_stopped(tok):
    respell, tokens, states, nxt, word, start, forced = _respelling(tok, hotword_lp=-8.0)
    calls = []
    force = respell.force

    def spy(state, cross, ys, floor, lps):
        calls.append((state, list(lps)))
        return force(state, cross, ys, floor, lps)

    respell.force = spy
    assert respell.check(tokens, states, nxt) is None  # -8 a token: stops below the floor
    assert [lps for _, lps in calls] == [[]] * len(calls)  # from the span's start
    done = respell.forced[(start, tuple(word))]
    assert not done[2] and len(done[0]) >= 1  # forced part of the word, then stopped
    respell.per_token = 100.0  # a lower floor: the same place and hotword again
    respell.seen.clear()
    cand, lps, outs = respell.check(tokens, states, nxt)
    assert any(state is done[1] and lps == done[0] for state, lps in calls[-2:])  # resumed where it stopped
    assert len(lps) == len(word) and lps[1:] == [-8.0] * (len(word) - 1)
    assert forced == [tuple(word)]  # the first token forced once


def test_no_second_pass_at_boost_zero(tok):
    respell, tokens, states, nxt, word, start, forced = _respelling(tok, hotword_lp=-0.1)
    respell.on = HotwordTree(["Brightlyne"], tok, boost=0.0).boost > 0
    assert respell.check(tokens, states, nxt) is None and forced == []


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from captioner.asr.moonshine.model import MoonshineModel

    return MoonshineModel(default_model_dir(), cache_root=tmp_path_factory.mktemp("model-cache"))


@pytest.mark.slow
@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
@pytest.mark.parametrize("sentence, voice, word, misread", [
    ("Lindqvist thinks Brightlyne is too expensive.", "en-us", "Brightlyne", "Wrightline"),
    ("We tested Istio with the Veltrona gateway last week.", "en-us", "Veltrona", "Meltrona"),
])
def test_the_second_pass_respells_a_name_shallow_fusion_misses(model, tmp_path, monkeypatch, sentence, voice,
                                                               word, misread):
    from tests.test_hotwords import _clip

    audio = _clip(tmp_path, sentence, voice)
    tree = model.hotwords(["Lindqvist", "Brightlyne", "Istio", "Veltrona", "Aoife", "Trellisync", "Ansible"])
    biased = model.transcribe(audio, bias=tree)
    assert word in biased, biased
    monkeypatch.setattr(hr.Respelling, "check", lambda *a: None)  # shallow fusion alone
    assert misread in model.transcribe(audio, bias=tree)
