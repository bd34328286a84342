"""One VAD pass per session (issue 30.3): the line cutter and the turn detector share it.

* the batched pass gives each track exactly the probabilities of its own separate pass
  (the line cutter's without, the turn detector's with the quiet reset), on the real Silero;
* the line cutter cuts the same lines from probabilities computed elsewhere;
* the turn detector decides the same from probabilities computed elsewhere;
* through a session on the default model, Silero runs once per window, on the session's
  thread (not the engine's), and the turn detector's own VAD never runs.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from captioner.asr.moonshine.lines import LineSegmenter
from captioner.asr.vad import VAD_WINDOW
from captioner.asr.vad_stream import QUIET_P, QUIET_RESET_S, SpeechWindows
from captioner.engine import turn_models
from captioner.engine.turns import TurnDetector, TurnModels, TurnSettings
from captioner.events import TextDelta, TurnBoundary

SR = 16000


class Scripted:
    """Speech probability from a list indexed by window number; state = the index (not batched)."""

    def __init__(self, probs):
        self.probs = probs
        self.calls = 0

    @staticmethod
    def initial_state():
        return 0

    def __call__(self, window, state):
        self.calls += 1
        return self.probs[state] if state < len(self.probs) else 0.0, state + 1


def speechy(seconds: float, seed: int = 1) -> np.ndarray:
    """Bursts of voiced-like sound (a buzzy 140 Hz tone with harmonics, amplitude-modulated)
    separated by silences, one of them longer than the quiet reset."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    buzz = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12)) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t))
    gate = np.zeros_like(t)
    for a, b in [(0.5, 2.0), (2.4, 3.5), (7.0, 8.5)]:  # 3.5 s of silence before the last burst
        gate[(t >= a) & (t < b)] = 1.0
    return (0.3 * buzz * gate + 0.001 * rng.standard_normal(len(t))).astype(np.float32)


def separate_pass(vad, audio, reset):
    """The two passes as they ran before issue 30 (one Silero call per window each)."""
    state, low, out = vad.initial_state(), 0, []
    for i in range(0, len(audio) - len(audio) % VAD_WINDOW, VAD_WINDOW):
        p, state = vad(audio[i : i + VAD_WINDOW], state)
        out.append(p)
        if reset:
            low = low + 1 if p < QUIET_P else 0
            if low >= int(QUIET_RESET_S * SR / VAD_WINDOW):
                state, low = vad.initial_state(), 0
    return np.array(out)


def test_the_batched_pass_gives_each_track_its_own_pass_bit_for_bit():
    try:
        from captioner.asr.vad import silero_vad

        vad = silero_vad()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Silero unavailable: {exc}")
    audio = speechy(10.0)
    sw = SpeechWindows(vad, resets=(False, True))
    got = np.concatenate([sw.feed(audio[i : i + 1000]) for i in range(0, len(audio), 1000)])
    lines, turns = separate_pass(vad, audio, False), separate_pass(vad, audio, True)
    assert got.shape == (len(audio) // VAD_WINDOW, 2) and sw.position == got.shape[0] * VAD_WINDOW
    assert np.array_equal(got[:, 0], lines)
    assert np.array_equal(got[:, 1], turns)
    assert not np.array_equal(lines, turns)  # the reset happened: the tracks really differ
    assert lines.max() > 0.5  # and the bursts read as speech


def test_line_cutter_cuts_the_same_lines_from_probabilities_computed_elsewhere():
    probs = [0.0] * 20 + [0.9] * 80 + [0.1] * 40 + [0.8] * 300 + [0.0] * 30
    audio = np.zeros(len(probs) * VAD_WINDOW + 300, np.float32)
    own, fed = LineSegmenter(Scripted(probs)), LineSegmenter(None)
    shared = SpeechWindows(Scripted(probs), resets=(False,))
    a, b = [], []
    for i in range(0, len(audio), 1000):  # blocks that are not whole windows
        a += own.feed(audio[i : i + 1000])
        b += fed.feed(audio[i : i + 1000], shared.feed(audio[i : i + 1000])[:, 0])
    a, b = a + own.finish(), b + fed.finish()
    assert a == b and len([e for e in a if e.end is not None]) >= 3  # two lines, the long one cut at the cap
    assert own.position == fed.position
    with pytest.raises(ValueError):
        fed.feed(np.zeros(512, np.float32), [0.5, 0.5])


def _detector(probs):
    classifier = lambda audio: 0.9  # noqa: E731 - "turn complete"
    return TurnDetector(TurnSettings(), SR, TurnModels(Scripted(probs), classifier))


def test_turn_detector_decides_the_same_from_probabilities_computed_elsewhere():
    probs = [0.0] * 10 + [0.9] * 40 + [0.0] * 100 + [0.9] * 30 + [0.0] * 120
    audio = np.zeros(len(probs) * VAD_WINDOW, np.float32)
    own, fed = _detector(probs), _detector(probs)
    shared = SpeechWindows(Scripted(probs), resets=(True,))
    a, b = [], []
    for i in range(0, len(audio), 1600):
        if i == 32000:
            for d in (own, fed):
                d.note_text([TextDelta("Move it to Friday.", 0.4, 1.5, final=True)])
        a += own.feed(audio[i : i + 1600])
        b += fed.feed(audio[i : i + 1600], shared.feed(audio[i : i + 1600])[:, 0])
    assert a == b and [e.kind for e in a if isinstance(e, TurnBoundary)] == ["semantic"]
    assert own.models.vad.calls == len(probs) and fed.models.vad.calls == 0  # no second pass


class CountingBatchVad(Scripted):
    """A batched scripted VAD (like SileroVad.batch): one call per window for every track."""

    batch_calls = 0
    threads: set = set()

    @staticmethod
    def initial_state():
        return np.zeros((2, 1, 1), np.float32), np.zeros((1, 1), np.float32)

    def batch(self, window, state):
        rnn, ctx = state
        k = int(rnn[0, 0, 0])
        self.batch_calls += 1
        self.threads = self.threads | {threading.current_thread().name}
        p = self.probs[k] if k < len(self.probs) else 0.0
        return np.full(len(ctx), p, np.float32), (rnn + 1, ctx)


def test_a_session_on_the_default_model_runs_one_vad_pass(monkeypatch):
    from captioner.asr.moonshine import backend as ms
    from captioner.engine.session import StreamingSession

    probs = [0.0] * 10 + [0.9] * 60 + [0.0] * 130
    turn_vad = Scripted(probs)
    monkeypatch.setitem(turn_models._models, False, TurnModels(turn_vad, None))

    class Model:
        def transcribe(self, audio):
            return "Move it to Friday."

    vad = CountingBatchVad(probs)
    backend = ms.MoonshineBackend(model=Model(), vad=vad, partials=False)
    try:
        s = StreamingSession(backend, "You", TurnSettings(semantic=False))
        audio = np.zeros(len(probs) * VAD_WINDOW, np.float32)
        events = []
        for i in range(0, len(audio), 1600):
            events += s.feed(audio[i : i + 1600])
        events += s.end()
    finally:
        backend.close()
    assert vad.batch_calls == len(probs) and vad.calls == 0 and turn_vad.calls == 0
    assert vad.threads == {threading.current_thread().name}  # the session's thread: the engine's only decodes
    assert [e.kind for e in events if isinstance(e, TurnBoundary)] == ["silence"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta) and e.final) == "Move it to Friday."


def test_speech_read_ahead_hands_out_the_windows_of_each_stretch_once():
    from captioner.asr.vad_stream import SpeechAhead

    probs = list(np.linspace(0.0, 1.0, 40))
    ahead = SpeechAhead(SpeechWindows(Scripted(probs), resets=(False,)))
    audio = np.zeros(40 * VAD_WINDOW, np.float32)
    ahead.feed(audio[:1600], 0)
    ahead.feed(audio[1600:4000], 1600)  # read ahead ...
    ahead.feed(audio[1600:3200], 1600)  # ... then pushed: skipped
    assert ahead.fed == 4000
    first, second = ahead.take(1600), ahead.take(3200)
    assert list(first[:, 0]) == probs[:3] and list(second[:, 0]) == probs[3:6]  # windows ending by 1536, 3072
    assert len(ahead.take(3200)) == 0  # nothing twice
    with pytest.raises(ValueError):
        ahead.feed(audio[:10], 5000)  # a gap
