"""Re-decodes that start from the previous reading (a draft checked in one decoder run).

The open line is re-decoded every few hundred ms, and each reading mostly repeats the one
before. :meth:`MoonshineModel.decode` takes that reading's tokens as a ``draft``, scores
them all in one decoder run and steps on after the longest prefix greedy decoding itself
chooses; where the reading left the draft, each step checks the draft's tokens that follow
the last one read with it: the same tokens for far fewer decoder runs.
"""

from __future__ import annotations

import numpy as np
import pytest

from captioner.asr.moonshine import backend as ms
from captioner.asr.moonshine.backend import MoonshineBackend
from captioner.asr.moonshine.line_state import LineState
from captioner.asr.moonshine.lines import LineEvent
from captioner.asr.moonshine.model import LOOKAHEAD
from captioner.asr.moonshine.partials import PARTIAL_PAD_S
from tests.speech import have_espeak

SR = 16000


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """The real model, a spoken sentence's encoder states, its greedy tokens and their log-probs."""
    if not have_espeak():
        pytest.skip("espeak-ng is not installed (scripts/test.sh installs it)")
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import shared_model
    from captioner.audio.fileio import load_audio
    from tests.speech import espeak

    model = shared_model(default_model_dir())
    clip = load_audio(espeak("Finance would like a short written explanation of why our cloud costs were "
                             "higher than planned.", tmp_path_factory.mktemp("draft") / "s.wav", 170), SR)
    hidden = model.encode(clip)
    logprobs: list[float] = []
    tokens = model.decode(hidden, 60, logprobs=logprobs)
    assert len(tokens) >= 15, model.tokenizer.decode(tokens)
    return model, clip, hidden, tokens, logprobs


class Runs:
    """Counts the decoder's runs (wraps the session's ``run_with_iobinding``)."""

    def __init__(self, monkeypatch, model) -> None:
        self.n = 0
        run = model.decoder.run_with_iobinding

        def counted(*a, **k):
            self.n += 1
            return run(*a, **k)

        monkeypatch.setattr(model.decoder, "run_with_iobinding", counted)


def test_a_draft_gives_the_greedy_tokens_in_fewer_decoder_runs(reading, monkeypatch):
    model, clip, hidden, ref, ref_lp = reading
    runs = Runs(monkeypatch, model)
    assert model.decode(hidden, 60) == ref
    assert runs.n == len(ref) + 1  # without a draft: a step per token and one for the end token
    assert 10 < len(ref) <= 10 + LOOKAHEAD  # (the run counts below are for such a reading)
    cases = {
        "the same reading": (ref, 1),  # one run scores every token and the end token
        "longer than the reading": (ref + ref[:4], 1),
        "wrong from token 8 on": (ref[:8] + [500] * (len(ref) - 8), 1 + len(ref) - 8),
        "wrong from the start": ([500] * 6, 1 + len(ref)),
        "a shorter, earlier reading": (ref[: len(ref) // 2], 1 + len(ref) - len(ref) // 2),
        # the reading leaves the draft at token 8 and finds it again (draft_tokens.continuation):
        # one run checks tokens 0-7 and scores 8; one step reads 9 (8 is not in the draft);
        # one run on the cache checks 10.. and scores the end token
        "wrong at token 8 only": (ref[:8] + [500] + ref[9:], 3),
        "token 8 missing": (ref[:8] + ref[9:], 3),  # 8 read by the first run, 9 by a step
        # 0-7 checked, 500 rejected and 8 read by the first run; 9.. found after 8 at once
        "a token inserted before token 8": (ref[:8] + [500] + ref[8:], 2),
    }
    for name, (draft, want_runs) in cases.items():
        runs.n = 0
        logprobs: list[float] = []
        assert model.decode(hidden, 60, logprobs=logprobs, draft=draft) == ref, name
        assert runs.n == want_runs, name
        # one run on many positions rounds differently from one step per position; the 8-bit
        # decoder's int8 products (moonshine.int8) move a token's log-probability up to ~5e-3
        assert logprobs == pytest.approx(ref_lp, abs=1e-2), name
    # the token budget holds with a draft too
    assert model.decode(hidden, 5, draft=ref) == ref[:5]
    text, tokens = model.transcribe_tokens(clip, draft=ref)
    assert tokens == ref and text == model.tokenizer.decode(ref)
    assert model.transcribe_scored(clip, draft=ref) == pytest.approx(model.transcribe_scored(clip), abs=2e-3)


def test_each_word_of_a_reading_gets_its_least_likely_tokens_log_probability(reading):
    """The confidence LocalAgreement commits by (agreement.COMMIT_LOGPROB): per word, the
    lowest log-probability of its tokens, a closing "." or "," not counted; with or without a
    draft alike."""
    from captioner.asr.moonshine.tokenizer import SPACE_MARK

    model, clip, _, ref, ref_lp = reading
    expected: list[float] = []
    for tok, lp in zip(ref, ref_lp):
        piece = model.tokenizer.pieces[tok].decode()
        if piece.startswith(SPACE_MARK) or not expected:
            expected.append(lp)
        elif any(ch.isalnum() for ch in piece):  # punctuation says nothing about the word
            expected[-1] = min(expected[-1], lp)
    for draft in (None, ref, ref[:6]):
        confidence: list[float] = []
        text, tokens = model.transcribe_tokens(clip, draft=draft, confidence=confidence)
        assert tokens == ref and len(confidence) == len(text.split())
        assert confidence == pytest.approx(expected, abs=1e-2)  # rounding: see the test above
    assert all(c <= 0 for c in expected) and min(expected) < -1e-3  # log-probabilities, not all sure


class Unsure:
    """Stand-in model whose re-decodes of a line agree on a misreading it is unsure of."""

    drafts = True

    def transcribe(self, audio, draft=None):
        return self.transcribe_tokens(audio, draft=draft)[0]

    def transcribe_tokens(self, audio, draft=None, confidence=None):
        words = "That sound freeze on the plan".split()[: 3 + len(audio) // SR]
        if confidence is not None:
            confidence[:] = [-0.05, -0.9, -0.6] + [-0.01] * (len(words) - 3)
        return " ".join(words), list(range(len(words)))

    def transcribe_scored(self, audio, draft=None, stop=None):
        return "That sounds fair on the plan today.", 0.0


def test_a_misreading_the_model_is_unsure_of_is_not_made_final_early():
    """Through the backend: the re-decodes' word confidences reach LocalAgreement, so the
    line's final reading, not two agreeing re-decodes, decides the unsure words."""
    from captioner.engine.scheduler import DecodeBudget
    from captioner.events import TextDelta

    now = [0.0]  # the budget's clock: a re-decode is due every time
    be = MoonshineBackend(model=Unsure(), vad=object(), partials=True, budget=DecodeBudget(clock=lambda: now[0]))
    be._worker.close()
    be._worker = ms.PartialWorker(be._decode_clip, threaded=False)  # exact order
    state = LineState(lines=None, speech=None)
    events = []
    try:
        events += be._lines(state, [LineEvent(0, 0)])
        for _ in range(6):  # a re-decode after every 0.5 s of the line
            audio = np.full(SR // 2, 0.1, np.float32)
            be._keep(state, audio)
            state.total += len(audio)
            now[0] += 10.0
            events += be._partial(state)
        events += be._lines(state, [LineEvent(0, 0, state.total)])
    finally:
        be.close()
    finals = [e.text.strip() for e in events if isinstance(e, TextDelta) and e.final]
    assert finals[0] == "That"  # committed early: the model is sure of it
    assert " ".join(finals) == "That sounds fair on the plan today."


def test_hotwords_decode_step_by_step_and_ignore_the_draft(reading, monkeypatch):
    model, clip, hidden, ref, _ = reading
    tree = model.hotwords(["Kubernetes"])
    plain = model.decode(hidden, 60, bias=tree)
    runs = Runs(monkeypatch, model)
    assert model.decode(hidden, 60, bias=tree, draft=ref) == plain
    assert runs.n >= len(plain)  # no one-run check of the draft under a bias


class Drafting:
    """Stand-in model that takes drafts: each reading of ``n`` tenths of a second reads
    ``w0 .. w<n-1>`` (tokens ``0 .. n-1``) and records the draft it was given."""

    drafts = True

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[int]]] = []

    def transcribe(self, audio, draft=None):
        return self.transcribe_tokens(audio, draft=draft)[0]

    def transcribe_tokens(self, audio, draft=None, confidence=None):
        self.seen.append(("partial", list(draft or [])))
        n = len(audio) // (SR // 10)
        return " ".join(f"w{i}" for i in range(n)), list(range(n))

    def transcribe_scored(self, audio, draft=None, stop=None):
        self.seen.append(("final", list(draft or [])))
        return "The final text.", 0.0


def test_each_re_decode_of_a_line_is_drafted_by_the_one_before_and_so_is_its_final():
    from captioner.engine.scheduler import DecodeBudget

    model = Drafting()
    now = [0.0]  # the budget's clock: a re-decode is due every time
    be = MoonshineBackend(model=model, vad=object(), partials=True, budget=DecodeBudget(clock=lambda: now[0]))
    be._worker.close()
    be._worker = ms.PartialWorker(be._decode_clip, threaded=False)  # exact order
    state = LineState(lines=None, speech=None)
    try:
        for line in range(2):
            start = state.total
            be._lines(state, [LineEvent(line, start)])
            for _ in range(2):  # 0.5 s more of the line, then a re-decode
                audio = np.full(SR // 2, 0.1, np.float32)
                be._keep(state, audio)
                state.total += len(audio)
                now[0] += 10.0
                be._partial(state)
            be._lines(state, [LineEvent(line, start, state.total)])
    finally:
        be.close()
    pad = int(PARTIAL_PAD_S * 10)  # the re-decoded clip ends with PARTIAL_PAD_S of silence
    first, second = list(range(5 + pad)), list(range(10 + pad))
    assert model.seen == [("partial", []), ("partial", first), ("final", second)] * 2  # a new line: no draft


def test_without_a_drafting_model_or_with_hotwords_the_clip_is_read_as_before():
    class Plain:
        def __init__(self):
            self.calls = []

        def transcribe(self, audio, **kw):
            self.calls.append(kw)
            return "words"

    plain = Plain()
    be = MoonshineBackend(model=plain, vad=object(), partials=False)
    try:
        draft = [1, 2, 3]
        assert be._decode_clip(np.zeros(SR, np.float32), draft) == "words"
        assert plain.calls == [{}] and draft == [1, 2, 3]  # not given, not replaced
    finally:
        be.close()
