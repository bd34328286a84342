"""Who is speaking (issue 38): the speaker encoder, the online clustering and the tracker.

The encoder test runs the real GE2E weights shipped in the resemblyzer wheel and compares
captioner's torch-free reader and ONNX graph with PyTorch's own LSTM on the same weights.
"""

from __future__ import annotations

import numpy as np
import pytest

from captioner.events import Notice, TextDelta, TurnBoundary
from captioner.speakers import clustering as C
from captioner.speakers.options import AUTO, OFF, parse_speakers
from captioner.speakers.stretches import speech_runs, split_text
from captioner.speakers.registry import SpeakerRegistry
from captioner.speakers.tracker import SpeakerTracker, make_tracker

RATE = 16000


def _unit(v):
    v = np.asarray(v, np.float32)
    return v / np.linalg.norm(v)


def test_options():
    assert parse_speakers("auto") == AUTO and parse_speakers("off") == OFF
    assert parse_speakers("3").max_speakers == 3
    with pytest.raises(ValueError):
        parse_speakers("many")
    assert make_tracker(AUTO, "microphone") is None
    assert make_tracker(OFF, "system") is None


def test_checkpoint_reader_and_graph_match_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from captioner.speakers import prepare as P
    from captioner.speakers.encoder import VoiceEncoder

    state = P.read_checkpoint(P.checkpoint_path())
    ref = torch.load(P.checkpoint_path(), map_location="cpu", weights_only=False)["model_state"]
    for k, v in state.items():
        assert np.array_equal(v, ref[k].numpy()), k
    lstm = torch.nn.LSTM(40, 256, 3, batch_first=True)
    lin = torch.nn.Linear(256, 256)
    lstm.load_state_dict({k[5:]: v for k, v in ref.items() if k.startswith("lstm.")})
    lin.load_state_dict({k[7:]: v for k, v in ref.items() if k.startswith("linear.")})
    enc = VoiceEncoder(P.prepared_model(tmp_path))
    rng = np.random.default_rng(0)
    power = [rng.gamma(1.0, 0.01, (n, 201)).astype(np.float32) for n in (160, 90)]
    mel = P.mel_filterbank()
    got = enc.embed_frames(power)
    for i, p in enumerate(power):
        with torch.no_grad():
            _, (h, _) = lstm(torch.from_numpy((p @ mel.T)[None]))
            e = torch.relu(lin(h[-1]))[0].numpy()
        assert np.allclose(got[i], e / np.linalg.norm(e), atol=1e-4)


def test_a_tampered_checkpoint_is_refused(tmp_path):
    import pickle

    from captioner.speakers.prepare import SpeakerModelError, read_checkpoint

    bad = tmp_path / "bad.pt"
    with open(bad, "wb") as f:
        pickle.dump(0x1950A86A20F9469CFC6C, f)
        pickle.dump(1001, f)
        pickle.dump({}, f)
        f.write(pickle.dumps(print))  # a global that is no tensor
    with pytest.raises(SpeakerModelError):
        read_checkpoint(bad)


def test_power_frames_match_librosa():
    librosa = pytest.importorskip("librosa")
    from captioner.speakers.encoder import power_frames

    wav = np.random.default_rng(1).standard_normal(RATE).astype(np.float32) * 0.1
    ref = np.abs(librosa.stft(wav, n_fft=400, hop_length=160, pad_mode="constant")) ** 2
    assert np.allclose(power_frames(wav), ref.T, rtol=1e-3, atol=1e-4)


def test_clustering_opens_joins_and_keeps_the_previous_when_unsure():
    cl = C.SpeakerClusters(max_speakers=3)
    a, b = _unit([1, 0, 0]), _unit([0, 1, 0])
    assert cl.assign(a, 2.0).speaker == "Speaker 1"
    assert cl.assign(_unit([1, 0.1, 0]), 2.0).speaker == "Speaker 1"
    assert cl.assign(b, 2.0).new and len(cl) == 2
    short = cl.assign(_unit([0, 0, 1]), 0.4, previous="Speaker 2")  # too short to open a speaker
    assert short.speaker == "Speaker 2" and not short.new
    cl.assign(_unit([0, 0, 1]), 2.0)
    assert len(cl) == 3
    assert cl.assign(_unit([1, 1, 1, 0][:3] + [0] * 0), 2.0).speaker in {"Speaker 1", "Speaker 2", "Speaker 3"}
    assert len(cl) == 3  # at most max_speakers


def test_speech_runs_and_text_split():
    wav = np.zeros(3 * RATE, np.float32)
    wav[: RATE] = 0.1 * np.sin(np.arange(RATE) * 0.3)
    wav[int(1.5 * RATE): int(2.8 * RATE)] = 0.1 * np.sin(np.arange(int(1.3 * RATE)) * 0.2)
    runs = speech_runs(wav)
    assert len(runs) == 2 and abs(runs[1][0] / RATE - 1.5) < 0.02
    text = "Are you ready? Yes, I am ready now."
    assert text[: split_text(text, 0.45)] == "Are you ready?"
    assert split_text("Hello", 0.5) == 0
    assert split_text("你好。我们走吧", 0.4) == 3


class _FakeEncoder:
    """Embeds a stretch by its tone frequency: low tones one voice, high tones another."""

    def embed(self, stretches):
        out = []
        for s in stretches:
            zc = np.mean(np.abs(np.diff(np.sign(s)))) if len(s) > 1 else 0
            out.append(_unit([1, 0.05, 0]) if zc < 0.05 else _unit([0.05, 1, 0]))
        return np.array(out, np.float32)


def _registry(encoder=None, error=None):
    def load():
        if error:
            raise RuntimeError(error)
        return encoder or _FakeEncoder()
    return SpeakerRegistry(AUTO, load, vad=lambda: None)  # tones stand for voices here: no speech check


def _tone(seconds, freq):
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.2 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def test_a_line_with_two_voices_is_split_at_the_pause():
    audio = np.concatenate([_tone(2.0, 150), np.zeros(int(0.4 * RATE), np.float32), _tone(2.0, 2500)])
    tr = SpeakerTracker(AUTO, RATE, _registry())
    tr.feed(audio, 0)
    out = tr.label([TextDelta("First voice speaks. Second voice answers.", 0.0, 4.4, True, "Meeting"),
                    TurnBoundary(4.4, "silence", 1.0, "Meeting")])
    texts = [(e.text, e.speaker) for e in out if isinstance(e, TextDelta)]
    assert texts == [("First voice speaks.", "Speaker 1"), (" Second voice answers.", "Speaker 2")]
    assert 2.0 <= out[0].end <= 2.4 and out[1].start == out[0].end
    assert isinstance(out[-1], TurnBoundary)


def test_labels_are_stable_and_a_short_reply_keeps_the_speaker():
    tr = SpeakerTracker(AUTO, RATE, _registry())
    a, b = _tone(2.0, 150), _tone(2.0, 2500)
    audio = np.concatenate([a, b, a, _tone(0.3, 150), np.zeros(int(0.5 * RATE), np.float32)])
    tr.feed(audio, 0)
    got = [tr.label([TextDelta(t, s, e, True, "M")])[0].speaker
           for t, s, e in (("one", 0, 2), ("two", 2, 4), ("three", 4, 6))]
    assert got == ["Speaker 1", "Speaker 2", "Speaker 1"]
    assert tr.label([TextDelta("Yes.", 6.0, 6.3, True, "M")])[0].speaker == "Speaker 1"
    assert tr.label([TextDelta("partial", 6.0, 6.3, False, "M")])[0].speaker == ""


def test_a_short_final_is_judged_on_its_own_utterance_not_on_the_voice_before():
    """The live path commits a line's first words ("Sure,") soon after they are said. Judged on the
    speech before them, they took the previous voice; judged on their own utterance (speech joined
    to them across pauses under 0.25 s, as far as the audio has come) they take their own."""
    tr = SpeakerTracker(AUTO, RATE, _registry())
    a, b = _tone(2.0, 150), _tone(2.0, 2500)
    gap = np.zeros(int(0.4 * RATE), np.float32)
    tr.feed(np.concatenate([a, gap]), 0)
    assert tr.label([TextDelta("First voice.", 0.0, 2.0, True, "M")])[0].speaker == "Speaker 1"
    start = len(a) + len(gap)
    tr.feed(b[: int(1.2 * RATE)], start)  # "Sure," and what the voice said next, heard so far
    t0 = start / RATE
    out = tr.label([TextDelta(" Sure,", t0, t0 + 0.3, True, "M"), TextDelta(" the rest", t0 + 0.3, t0 + 1.0, False, "M")])
    assert [(e.text, e.final, e.speaker) for e in out] == [(" Sure,", True, "Speaker 2"), (" the rest", False, "")]


def test_a_model_that_fails_gives_one_notice_and_unlabelled_text():
    tr = SpeakerTracker(AUTO, RATE, _registry(error="no such file"))
    tr.feed(_tone(4.0, 150), 0)
    out = tr.label([TextDelta("hello there", 0, 2, True, "M")]) + tr.label([TextDelta("again", 2, 4, True, "M")])
    notices = [e for e in out if isinstance(e, Notice)]
    assert len(notices) == 1 and notices[0].code == "speakers_unavailable" and "no such file" in notices[0].message
    assert [e.speaker for e in out if isinstance(e, TextDelta)] == ["", ""]


def test_history_is_bounded():
    from captioner.speakers.tracker import HISTORY_S

    tr = SpeakerTracker(AUTO, RATE, _registry())
    for i in range(30):
        tr.feed(np.full(RATE * 10, 0.01, np.float32), i * RATE * 10)
    assert tr._ring.data.nbytes == int(HISTORY_S * RATE) * 4
    assert len(tr._ring.read(0, 10 * RATE)) == 0  # long gone
    assert len(tr._ring.read(299 * RATE, 300 * RATE)) == RATE


class _LevelVad:
    """A stand-in VAD: a window is speech when it is loud (the real one is tested in test_speaker_faults)."""

    calls = 0

    def initial_state(self):
        return None

    def __call__(self, window, state):
        _LevelVad.calls += 1
        return (1.0 if float(np.sqrt(np.mean(window ** 2))) > 0.05 else 0.0), state


def test_voiced_windows_follow_the_stream_through_jumps_and_repeats():
    from captioner.speakers.voicing import VoicedWindows

    v = VoicedWindows(_LevelVad, capacity=100)
    loud, quiet = _tone(1.024, 300), np.zeros(int(1.024 * RATE), np.float32)  # 32 windows each
    v.feed(loud[:1000], 0)  # any block size
    v.feed(loud[1000:], 1000)
    v.feed(quiet, len(loud))
    assert v.share(0, len(loud)) == 1.0 and v.share(len(loud), 2 * len(loud)) == 0.0
    calls = _LevelVad.calls
    v.feed(quiet[:5000], len(loud))  # fed again: nothing new
    assert _LevelVad.calls == calls
    v.feed(loud, 3 * len(loud))  # a jump: the skipped second is silence
    assert v.share(2 * len(loud), 3 * len(loud)) == 0.0 and v.share(3 * len(loud), 4 * len(loud)) == 1.0
    assert v.share(0, 512) is None  # forgotten (100 windows kept)
    assert v.share(5 * len(loud), 6 * len(loud)) is None  # not heard yet
    assert VoicedWindows(lambda: None, 10).share(0, 512) is None  # no VAD: no answer


def test_the_speaker_model_loads_inside_a_model_call_so_an_early_exit_cannot_abort():
    """A file shorter than the model's load (~1.5 s) ended ``captioner transcribe`` while the
    load was inside ONNX Runtime: the interpreter finalised around it and the process died with
    status 134 (2026-12-06). Counted as a model call, ``exit_process`` ends the process around it."""
    import threading

    from captioner import native_calls

    entered, release = threading.Event(), threading.Event()

    def load():
        entered.set()
        assert release.wait(10)
        return "encoder"

    before = native_calls.in_flight()
    registry = SpeakerRegistry(AUTO, load=load, vad=lambda: None)
    assert entered.wait(10)
    assert native_calls.in_flight() == before + 1
    release.set()
    assert registry.encoder(10) == "encoder"
    assert native_calls.wait_idle(10) and native_calls.in_flight() == before


@pytest.mark.slow
@pytest.mark.parametrize("seconds", [0.0, 0.1])
def test_transcribe_of_a_file_shorter_than_the_speaker_models_load_exits_0(tmp_path, seconds):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import soundfile as sf

    root = Path(__file__).resolve().parents[1]
    sf.write(tmp_path / "short.wav", np.zeros(int(seconds * RATE), np.float32), RATE)
    env = {**os.environ, "PYTHONPATH": str(root), "CAPTIONER_DATA_DIR": str(tmp_path / "data")}
    for _ in range(2):
        run = subprocess.run([sys.executable, "-m", "captioner.cli", "transcribe", str(tmp_path / "short.wav"),
                              "-o", str(tmp_path / "out.txt")], capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stderr[-1500:]
        assert "terminate called" not in run.stderr
        assert (tmp_path / "out.txt").read_text(encoding="utf-8") == ""
