"""Line segmentation of the default model (per-session VAD state) and how lines join."""

from __future__ import annotations

import numpy as np

from captioner.asr.moonshine.line_state import join_line
from captioner.asr.moonshine.lines import LineSegmenter

SR = 16000


class Scripted:
    """Speech probability from a list indexed by window number (512 samples); state = the index."""

    def __init__(self, probs):
        self.probs = probs

    @staticmethod
    def initial_state():
        return 0

    def __call__(self, window, state):
        return self.probs[state] if state < len(self.probs) else 0.0, state + 1


def run(probs, block=1600, **kw):
    seg = LineSegmenter(Scripted(probs), **kw)
    audio = np.zeros(len(probs) * 512, np.float32)
    events = []
    for i in range(0, len(audio), block):
        events += seg.feed(audio[i : i + block])
    return events + seg.finish()


def test_a_line_spans_its_speech_and_closes_in_the_following_pause():
    probs = [0.0] * 50 + [0.9] * 100 + [0.0] * 50  # speech 1.6-4.8 s
    events = run(probs)
    closed = [e for e in events if e.end is not None]
    assert len(closed) == 1
    start, end = closed[0].start / SR, closed[0].end / SR
    assert 1.6 - 0.3 <= start <= 1.6 - 0.2  # look-behind before the first speech window
    assert 4.8 + 0.2 <= end <= 4.8 + 0.3  # ~0.26 s into the pause (0.5 s smoothing)
    assert [e.end is None for e in events] == [True, False]


def test_block_size_does_not_move_the_lines():
    rng = np.random.default_rng(3)
    probs = list(np.repeat(rng.random(60) > 0.5, 8).astype(float))
    assert run(probs, 1600) == run(probs, 333) == run(probs, 512 * 7)


def test_the_line_cap_cuts_at_the_quietest_moment_and_speech_continues():
    probs = [0.9] * 200 + [0.55] + [0.9] * 200  # 12.8 s of speech with one dip at window 200 (6.4 s)
    events = run(probs, max_line_s=8.0)
    closed = [e for e in events if e.end is not None]
    assert len(closed) == 2
    assert closed[0].end == 201 * 512  # cut right after the dip
    assert closed[1].start == closed[0].end and closed[1].end == len(probs) * 512


def test_an_open_line_closes_at_the_end_of_the_stream():
    probs = [0.0] * 20 + [0.9] * 40  # speech to the very end
    closed = [e for e in run(probs) if e.end is not None]
    assert len(closed) == 1 and closed[0].end == 60 * 512


def test_joined_lines_have_no_double_comma_and_no_capital_after_a_comma():
    assert join_line("the epoch of belief,", "It was the epoch of incredulity.") == "it was the epoch of incredulity."
    assert join_line("belief,", ", it was") == "it was"
    assert join_line("so,", "I think so.") == "I think so."  # "I" keeps its capital
    assert join_line("we met,", "NASA called.") == "NASA called."  # an acronym too
    assert join_line("It ended.", "Then we left.") == "Then we left."  # after a full stop: unchanged
    assert join_line("", "Hello.") == "Hello."
    assert join_line("at ten o'clock.", ".") == ""  # a line of noise read as a full stop
    assert join_line("", "at ten o'clock..") == "at ten o'clock."
    assert join_line("Wait...", "... what?") == "what?"
    assert join_line("", "Well... yes.") == "Well... yes."


def test_the_backend_joins_a_line_cut_at_a_comma_to_the_next_one():
    """Two lines of one sentence ("..., It was ...") come out as "..., it was ..." in the
    final text, and nothing is lowered inside a line."""
    from captioner.asr.moonshine import backend as ms
    from captioner.asr.base import StepRow

    probs = [0.0] * 10 + [0.9] * 60 + [0.0] * 30 + [0.9] * 60 + [0.0] * 40
    texts = iter(["It was the best of times, Bob,", "It was the worst of times."])

    class Model:
        def transcribe(self, audio):
            return next(texts)

    b = ms.MoonshineBackend(model=Model(), vad=Scripted(probs), partials=False)
    state, finals = None, []
    audio = np.zeros(len(probs) * 512, np.float32)
    for i in range(0, len(audio), 1600):
        (res,) = b.step([StepRow(audio[i : i + 1600], state, i / SR, (i + 1600) / SR)])
        state = res.state
        finals += [e.text for e in res.events if getattr(e, "final", False)]
    b.step([StepRow(None, state, len(audio) / SR, len(audio) / SR, last=True)])
    b.close()
    assert "".join(finals) == "It was the best of times, Bob, it was the worst of times."
