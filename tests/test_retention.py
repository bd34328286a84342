"""Retention and the live policy of the default model's backend, on a scripted model and VAD.

In the style of WhisperLiveKit's ``test_retention.py``: hours of simulated audio through
the default model's backend logic (its model and VAD replaced by scripted fakes, so the
test runs in seconds), then every buffer is checked. The audio is a time ramp (sample
value = ``RAMP`` x session time), so the fake VAD knows where speech is and the fake model
knows which words a clip holds.
"""

from __future__ import annotations

import numpy as np

from captioner.asr.base import StepRow
from captioner.asr.moonshine import backend as ms
from captioner.asr.moonshine.line_state import KEEP_S
from captioner.engine.scheduler import DecodeBudget
from captioner.events import TextDelta

SR = 16000
LINE_S, PAUSE_S = 4.0, 2.0
WORDS = "alpha beta gamma delta epsilon zeta eta theta".split()
RAMP = 1e-4  # test audio: sample value = RAMP * session time (s), so a clip says where it starts


def speaking(t: float) -> bool:
    """Speech from 0.2 s into every 6 s period, for LINE_S seconds."""
    return 0.2 <= t % (LINE_S + PAUSE_S) < 0.2 + LINE_S


class ScriptedVad:
    """Speech probability 1 inside the scripted speech, 0 outside (read from the ramp)."""

    @staticmethod
    def initial_state():
        return None

    def __call__(self, window, state):
        return (1.0 if speaking(float(window[0]) / RAMP) else 0.0), state


class ScriptedModel:
    """The words spoken in a clip (whole or partly), read from the time ramp in the audio."""

    def __init__(self) -> None:
        self.decoded: list[tuple[float, float]] = []  # (clip start s, clip end s) of every decode

    def transcribe(self, audio) -> str:
        t0 = float(audio[0]) / RAMP  # stream time of the clip's first sample
        speech = len(audio) - (len(audio) - np.flatnonzero(audio)[-1] - 1 if audio.any() else 0)  # a pad is exact zeros
        t1 = t0 + speech / SR
        self.decoded.append((t0, t1))
        k = int((t0 + 0.3) // (LINE_S + PAUSE_S))  # the line starts up to ~0.3 s before its speech
        start = k * (LINE_S + PAUSE_S) + 0.2
        per = LINE_S / len(WORDS)
        first = max(0, int((t0 - start) // per))
        n = int(len(WORDS) * min(1.0, max(0.0, t1 - start + 1e-3) / LINE_S))  # 1 ms: float32 ramp
        return " ".join(WORDS[first:n])


def scripted(clock, threaded: bool = False, model=None, partials: bool = True):
    """The real backend logic on the scripted model and VAD (synchronous partials by default)."""
    b = ms.MoonshineBackend(model=model or ScriptedModel(), vad=ScriptedVad(), budget=DecodeBudget(clock=clock),
                            partials=partials)
    if not threaded:
        b._worker.close()
        b._worker = ms.PartialWorker(b._decode_clip, threaded=False)  # exact event order
        b.budget.parallel = False
    return b


def chunk_at(i: int) -> np.ndarray:
    """The i-th 100 ms chunk of the test audio (a time ramp, see RAMP)."""
    return (RAMP * (i * 0.1 + np.arange(ms.CHUNK_SAMPLES) / SR)).astype(np.float32)


def test_hours_of_audio_keep_every_buffer_bounded_and_finals_exact():
    t = [0.0]
    backend = scripted(lambda: t[0])
    state = None
    finals: list[str] = []
    partials = 0
    hours = 2.0
    steps = int(hours * 3600 / 0.1)
    ring_max = 0
    for i in range(steps):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta):
                if ev.final:
                    finals.append(ev.text)
                elif ev.text:
                    partials += 1
        ring_max = max(ring_max, len(state.ring))
    lines = int(hours * 3600 // (LINE_S + PAUSE_S)) - 1
    # bounded: the audio kept, the segmenter's memory, the agreement, the budget's window
    assert ring_max <= int(KEEP_S * SR)
    assert len(state.lines._probs) <= 16 and len(state.lines._line_probs) <= 8 * SR // 512 + 1
    assert len(state.agreement.committed) <= len(WORDS)
    assert len(backend.budget._required) <= 10 * backend.budget.window_s / 0.1
    # exact and never rewritten: every line's words arrive once, in order, early ones via agreement
    words = " ".join(f.strip() for f in finals).split()
    assert len(words) >= lines * len(WORDS)
    assert words[: lines * len(WORDS)] == WORDS * lines
    assert partials > lines  # partials were granted (the fake is cheap: plenty of headroom)
    assert len(finals) > lines  # words became final before their line ended
    assert state.lines.lines >= lines


def _finals_of(backend, seconds, t):
    state, finals = None, []
    for i in range(int(seconds / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        finals += [ev.text for ev in res.events if isinstance(ev, TextDelta) and ev.final]
    return finals


def test_every_line_is_decoded_once_to_its_end_and_no_re_decode_is_its_final():
    """A final never comes from a re-decode that did not hear the end of its line (the app once
    saved "charger to Marlow" for "charger tomorrow"): each completed line is decoded once, as a
    clip that reaches the line's end (past the end of its speech)."""
    t = [0.0]
    ms_model = ScriptedModel()
    backend = scripted(lambda: t[0], model=ms_model)
    finals = _finals_of(backend, 2 * (LINE_S + PAUSE_S), t)
    assert " ".join(f.strip() for f in finals).split() == WORDS * 2  # exact, in order, once
    ends = [t1 for t0, t1 in ms_model.decoded]
    for k in range(2):
        speech_end = k * (LINE_S + PAUSE_S) + 0.2 + LINE_S
        # the final decode: its clip ends where the VAD closed the line (0.26 s into the pause)
        whole = [e for e in ends if speech_end + 0.2 <= e <= speech_end + 0.5]
        assert len(whole) == 1, (k, ends)
    # without partials: each line decoded exactly once, when it ends
    t = [0.0]
    quiet = scripted(lambda: t[0], partials=False)
    finals = _finals_of(quiet, 2 * (LINE_S + PAUSE_S), t)
    assert " ".join(f.strip() for f in finals).split() == WORDS * 2
    assert len(quiet.model.decoded) == 2


def test_partial_after_committed_words_starts_with_a_space():
    """Seen in the overlay: committed "Good morning," + partial "have a minute" was drawn as
    "Good morning,have a minute". A partial follows final text after a space, as finals do."""
    t = [0.0]
    backend = scripted(lambda: t[0])
    state = None
    shown = ""  # committed text so far
    joined = []
    for i in range(int(60 / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta) and ev.final:
                shown += ev.text
            elif isinstance(ev, TextDelta) and ev.text and shown:
                joined.append(shown + ev.text)
    assert joined  # partials after committed text were emitted
    for text in joined:
        assert "  " not in text and all(w in WORDS for w in text.split()), text


class GatedModel(ScriptedModel):
    """The scripted model with its re-decodes (on the partial thread) each held until released."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.entered = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        self.clips: list[int] = []  # samples of each re-decode, in order
        self.partial_thread = None

    def transcribe(self, audio) -> str:
        import threading

        if threading.current_thread().name == "captioner-partial":
            self.clips.append(audio.size)
            self.entered.release()
            assert self.release.acquire(timeout=30)
        return super().transcribe(audio)


def gated(clock):
    backend = scripted(clock, threaded=True, model=GatedModel())
    backend.entered, backend.release, backend.clips = backend.model.entered, backend.model.release, backend.model.clips
    return backend


def _run_gated(backend, seconds, t, on_job):
    """Step ``seconds`` of audio; ``on_job(i)`` is called each step a re-decode is running and
    returns True to let it finish (the test then waits for it before the next step)."""
    state = None
    finals, partials, running = [], [], False
    for i in range(int(seconds / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta):
                (finals if ev.final else partials).append((i * 0.1 + 0.1, ev.text))
        if not running and backend._worker.busy:  # a job was submitted: wait until it runs
            running = backend.entered.acquire(timeout=30)  # (the niced thread may start late)
        if running and on_job(i):
            backend.release.release()
            assert backend._worker.wait_idle(30)
            running = False
    return state, finals, partials


def test_a_slow_partial_never_delays_a_final_and_its_stale_text_is_dropped():
    """The engine thread goes on while a re-decode runs: the line's final arrives on time
    (0.5 s after the line ends) with the re-decode still held; released after that, its text
    belongs to a closed line and must not come out as a partial or a second final."""
    t = [0.0]
    backend = gated(lambda: t[0])
    line_end = 0.2 + LINE_S + 0.32  # the smoothed VAD closes the first line at 4.512 s (0.26 s of pause, whole windows)
    recorded = []
    record = backend.budget.record_optional
    backend.budget.record_optional = lambda cost, audio_s: (recorded.append(audio_s), record(cost, audio_s))
    state, finals, partials = _run_gated(backend, 6.0, t, lambda i: (i + 1) * 0.1 > line_end + 1.0)
    try:
        assert finals, "no final while the partial was held"
        first_final_at = finals[0][0]
        assert first_final_at <= line_end + 0.11
        assert " ".join(f for _, f in finals).split() == WORDS  # exact: the stale re-decode added nothing
        assert all(not text for at, text in partials if at > line_end + 1.0)
        assert backend.budget.parallel
        # the thrown-away re-decode still cost CPU: the budget is told (not only of collected ones)
        assert backend.clips and backend.clips[0] / 16000 in recorded
    finally:
        backend.release.release()
        backend.close()


def test_threaded_partials_commit_words_before_the_line_ends():
    t = [0.0]
    backend = gated(lambda: t[0])
    line_end = 0.2 + LINE_S + 0.32
    state, finals, partials = _run_gated(backend, 3 * (LINE_S + PAUSE_S), t, lambda i: True)
    try:
        early = [text for at, text in finals if at < line_end]
        assert early, "LocalAgreement committed nothing before the line ended"
        words = " ".join(f.strip() for _, f in finals).split()
        assert words[: 2 * len(WORDS)] == WORDS * 2  # in order, never rewritten
        assert any(text for _, text in partials)
    finally:
        backend.close()
