"""smart-turn on captioner's own ONNX Runtime session (issue 40.3: its arena off)."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from captioner.audio.fileio import load_audio
from captioner.engine.turn_models import SmartTurn, smart_turn_model_path
from tests.speech import have_espeak


@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed (scripts/test.sh installs it)")
def test_smart_turn_on_our_session_gives_pipecats_probabilities(tmp_path):
    from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

    ours = SmartTurn()
    theirs = LocalSmartTurnAnalyzerV3(smart_turn_model_path=smart_turn_model_path(), cpu_count=1, sample_rate=16000)
    assert ours.analyzer._session is not theirs._session
    clips = []
    for i, text in enumerate(["Thank you, that is all from me.", "So the next thing we need to"]):
        wav = tmp_path / f"{i}.wav"
        subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(wav), text], check=True)
        clips.append(np.concatenate([load_audio(str(wav), 16000), np.zeros(3200, np.float32)]))
    clips.append(np.random.default_rng(0).standard_normal(16000 * 9).astype(np.float32) * 0.05)  # > 8 s: the last 8
    got = [ours(c) for c in clips]
    want = [float(theirs._predict_endpoint(c)["probability"]) for c in clips]
    assert got == pytest.approx(want, abs=1e-5)
    assert got[0] > 0.5 and max(got) - min(got) > 0.05, got  # a finished sentence ends a turn; not one answer for all


def test_the_preload_counts_as_a_model_call(monkeypatch):
    """So a command's early exit (Ctrl-C while its backend loads) ends the process around the
    load (``exit_process``) instead of joining it, where a second Ctrl-C printed a traceback."""
    import threading

    from captioner import native_calls
    from captioner.engine import turn_models

    entered, release = threading.Event(), threading.Event()
    monkeypatch.setattr(turn_models, "load_models", lambda semantic=True: (entered.set(), release.wait(10)))
    before = native_calls.in_flight()
    thread = turn_models.preload()
    assert entered.wait(10) and native_calls.in_flight() == before + 1
    release.set()
    thread.join(10)
    assert not thread.is_alive() and native_calls.in_flight() == before
