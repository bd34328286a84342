"""A line every reading of which is empty is read again with the end token held back
(:mod:`captioner.asr.moonshine.empty_lines`): the unit tests drive a :class:`LineReader` with a
scripted model; the slow test checks ``min_tokens`` on the shipped model against a plain greedy
loop of its graphs."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.asr.moonshine import empty_lines
from captioner.asr.moonshine.framings import FURTHER_RATES
from captioner.asr.moonshine.line_framing import LineReader

SR = 16000


class EmptyFirst:
    """Reads every clip as nothing (the end token first) unless ``min_tokens`` holds it back; then
    gives ``forced[i]`` for the i-th forced reading (as cut, framed, then the retimed ones)."""

    cancellable = True
    forces_words = True

    def __init__(self, forced, empty_score=-0.3):
        self.forced = list(forced)
        self.empty_score = empty_score
        self.calls: list[int] = []  # min_tokens of each reading, in order

    def transcribe_scored(self, audio, stop=None, min_tokens=0, bias=None):
        self.calls.append(min_tokens)
        if not min_tokens:
            return "", self.empty_score
        return self.forced[sum(1 for c in self.calls if c) - 1]


def line(seconds: float = 2.0) -> np.ndarray:
    return (0.1 * np.sin(np.arange(int(seconds * SR)) / 7.0)).astype(np.float32)


FIVE = 2 + len(FURTHER_RATES)


def test_an_empty_line_is_read_again_and_keeps_its_surest_forced_reading():
    forced = [("Thanks for joining everyone. Thanks for joining.", -0.52), ("Boring everyone.", -0.55),
              ("Morning everyone.", -0.38), ("Morning everyone!", -0.58), ("Parting everyone.", -0.68)]
    model = EmptyFirst(forced)
    reader = LineReader(model)
    assert reader.read(line(2.0)) == "Morning everyone."
    assert model.calls == [0] * FIVE + [1] * FIVE  # every framing read plain, then forced
    assert reader.forced == 1


def test_a_forced_guess_under_the_floor_leaves_the_line_empty():
    model = EmptyFirst([("You", empty_lines.FLOOR - 0.01)] * FIVE)
    reader = LineReader(model)
    assert reader.read(line(2.0)) == ""
    assert reader.forced == 0
    model = EmptyFirst([("You", empty_lines.FLOOR)] * FIVE)  # the floor itself is enough
    assert LineReader(model).read(line(2.0)) == "You"


def test_short_lines_models_without_it_and_a_stop_are_not_read_again():
    model = EmptyFirst([("Hm.", -0.1)] * FIVE)
    assert LineReader(model).read(line(empty_lines.MIN_S - 0.05)) == ""
    assert 1 not in model.calls

    class Old(EmptyFirst):
        forces_words = False

    old = Old([("Hm.", -0.1)] * FIVE)
    assert LineReader(old).read(line(2.0)) == "" and 1 not in old.calls

    stopped = EmptyFirst([("Hm.", -0.1)] * FIVE)
    reader = LineReader(stopped)
    reader._hurry.set()  # a Stop: every line keeps the readings it has
    assert reader.read(line(2.0)) == "" and 1 not in stopped.calls



def test_live_reader_reads_an_empty_line_again_too():
    model = EmptyFirst([("Morning everyone.", -0.4)] * FIVE)
    reader = LineReader(model, at_once=True)
    try:
        assert reader.read(line(2.0)) == "Morning everyone."
        assert reader.forced == 1
    finally:
        reader.close()


def test_a_line_with_words_is_never_read_again():
    class Words(EmptyFirst):
        def transcribe_scored(self, audio, stop=None, min_tokens=0, bias=None):
            self.calls.append(min_tokens)
            return "The bus stop.", -0.05

    model = Words([])
    assert LineReader(model).read(line(2.0)) == "The bus stop."
    assert model.calls == [0]


@pytest.mark.slow
def test_min_tokens_on_the_shipped_model_matches_a_plain_greedy_loop():
    """``min_tokens=1`` on a clip the model reads as nothing: the first token is the best one
    that is not the end token, the rest greedy, as the shipped graphs run plainly give; the
    first token's log-probability is the model's own (the end token's share counted)."""
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import MoonshineModel
    from captioner.asr.moonshine.tokenizer import END
    from tests.test_moonshine_onnx import shipped_greedy

    model = MoonshineModel(default_model_dir())
    noise = np.random.default_rng(0).normal(0, 1e-3, 24000).astype(np.float32)
    budget = model.max_tokens(len(noise))
    assert model.generate(noise) == [] == shipped_greedy(noise, budget)
    logprobs: list[float] = []
    forced = model.generate(noise, logprobs=logprobs, min_tokens=1)
    assert forced and forced[0] != END
    assert forced == shipped_greedy(noise, budget, min_tokens=1)
    assert logprobs[0] < np.log(0.05)  # the model was sure nothing was said: the forced word is unlikely
    text, score = model.transcribe_scored(noise, min_tokens=1)
    assert text and score < empty_lines.FLOOR  # so a guess on noise is never kept
