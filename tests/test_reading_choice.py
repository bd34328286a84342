"""bench/reading_choice.py replays today's choice among a line's readings as LineReader makes it (issue 48.2).

The replay scores policies offline from cached readings; its ``surest`` must give the text the
product's :class:`~captioner.asr.moonshine.line_framing.LineReader` gives for the same readings
(the file path: readings in turn), or every comparison against it is off.
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.final_reading import reading_audio
from bench.reading_choice import choose, policy_text, read_count
from bench.reading_vote import Reading
from captioner.asr.moonshine.framings import SURE_LOGPROB
from captioner.asr.moonshine.line_framing import LineReader

SR = 16000


class ByLength:
    """Answers each reading of one clip (told apart by its length) from a list of (text, score)."""

    def __init__(self, clip: np.ndarray, answers: list[tuple[str, float]]) -> None:
        self.answers = {len(a): ans for a, ans in zip(reading_audio(clip, False), answers)}
        assert len(self.answers) == 5

    def transcribe_scored(self, audio, stop=None):
        return self.answers[len(audio)]


CASES = [
    # the reading as cut is sure: kept, nothing else read
    [("We will meet again.", -0.05), ("We will meet a gain.", -0.01), ("x", 0.0), ("y", 0.0), ("z", 0.0)],
    # unsure, the framed reading is sure: the surer of the two
    [("plants join sunlight", -0.3), ("plants turn sunlight", -0.08), ("a", 0.0), ("b", 0.0), ("c", 0.0)],
    # both unsure: the surest of all five (a retimed one)
    [("the printer is broke", -0.3), ("the printer is broken", -0.25), ("the printer was broken", -0.2),
     ("the printer is broken again", -0.12), ("the printer is broken", -0.15)],
    # a 2 s line read as nothing in its surest framing keeps the words
    [("", -0.01), ("Okay.", -0.4), ("Okay.", -0.3), ("", -0.02), ("Okay then.", -0.35)],
]


@pytest.mark.parametrize("answers", CASES)
def test_the_surest_replay_gives_line_readers_text(answers):
    clip = (0.1 * np.sin(np.arange(2 * SR) / 7.0)).astype(np.float32)
    product = LineReader(ByLength(clip, answers)).read(clip)
    rs = [Reading(text, score) for text, score in answers]
    assert policy_text([(len(clip), rs)], "surest", {}) == product


def test_read_count_follows_the_sure_threshold():
    n = 2 * SR
    sure, unsure = SURE_LOGPROB + 0.01, SURE_LOGPROB - 0.01
    assert read_count([Reading("a", sure)] + [Reading("b", 0.0)] * 4, n) == 1
    assert read_count([Reading("", sure), Reading("b", sure)] + [Reading("c", 0.0)] * 3, n) == 2
    assert read_count([Reading("a", unsure), Reading("b", unsure)] + [Reading("c", 0.0)] * 3, n) == 5
    assert read_count([Reading("a", unsure), Reading("b", unsure)] + [Reading("c", 0.0)] * 3, n, two_only=True) == 2


def test_the_margin_policy_keeps_the_surer_framing_unless_a_retimed_reading_is_clearly_surer():
    n = 2 * SR
    rs = [Reading("are we all here", -0.162), Reading("are we out here", -0.209), Reading("are we out here", -0.22),
          Reading("are we out here", -0.144), Reading("are we out here", -0.166)]
    assert choose(rs, n, "surest", {}) == "are we out here"
    assert choose(rs, n, "margin", {"m": 0.03}) == "are we all here"  # -0.144 is not 0.03 above -0.162
    assert choose(rs, n, "margin", {"m": 0.01}) == "are we out here"
