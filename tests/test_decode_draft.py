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

from captioner.asr import moonshine as ms
from captioner.asr.moonshine import MoonshineBackend, _LineState
from captioner.asr.moonshine_lines import LineEvent
from captioner.asr.moonshine_model import LOOKAHEAD
from tests.speech import have_espeak

SR = 16000


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """The real model, a spoken sentence's encoder states, its greedy tokens and their log-probs."""
    if not have_espeak():
        pytest.skip("espeak-ng is not installed (scripts/test.sh installs it)")
    from captioner.asr.moonshine import default_model_dir
    from captioner.asr.moonshine_model import shared_model
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
        assert logprobs == pytest.approx(ref_lp, abs=1e-3), name
    # the token budget holds with a draft too
    assert model.decode(hidden, 5, draft=ref) == ref[:5]
    text, tokens = model.transcribe_tokens(clip, draft=ref)
    assert tokens == ref and text == model.tokenizer.decode(ref)
    assert model.transcribe_scored(clip, draft=ref) == pytest.approx(model.transcribe_scored(clip), abs=1e-4)


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

    def transcribe_tokens(self, audio, draft=None):
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
    state = _LineState(lines=None, speech=None)
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
    pad = int(ms.PARTIAL_PAD_S * 10)  # the re-decoded clip ends with PARTIAL_PAD_S of silence
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
