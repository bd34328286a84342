"""A Stop hurries the lines being read: each keeps the readings it already has (the 2 s rule).

Ctrl-C in ``captioner transcribe`` waited for the pending lines' five readings each (3.3 s on
6.5 minutes of 48 kHz speech, 2026-12-06). :meth:`LineReader.hurry` (called by the default
backend's ``interrupt``) ends every reading after the one as cut, so the stop waits for about
one reading per pending line, and every line still gets words.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
import soundfile as sf

from captioner.asr.moonshine import backend as ms
from captioner.asr.base import DecodeCancelled
from captioner.asr.moonshine.framings import FRAME_LEAD_S
from captioner.asr.moonshine.line_framing import LineReader
from tests.test_further_framings import Cancellable, Scripted, line
from tests.test_shared_vad import CountingBatchVad

SR = 16000
UNSURE = dict(cut=("a", -0.5), framed=("b", -0.4), slower=("c", -0.3), faster=("d", -0.2), fastest=("e", -0.25))


def test_after_hurry_a_line_keeps_its_reading_as_cut_and_resume_reads_in_full_again():
    clip = line(2.0)
    model = Cancellable(len(clip), **UNSURE)
    reader = LineReader(model)
    reader.hurry()
    reader.hurry()  # idempotent
    assert reader.read(clip) == "a"
    assert model.calls == ["cut"]
    reader.resume()
    assert reader.read(clip) == "d"
    assert model.calls[1:] == ["cut", "framed", "slower", "faster", "fastest"]


class Blocking(Cancellable):
    """The ``blocked`` reading runs until its stop is set (then raises DecodeCancelled)."""

    def __init__(self, n_clip: int, blocked: str, **answers) -> None:
        super().__init__(n_clip, **answers)
        self.blocked = blocked
        self.entered = threading.Event()

    def transcribe_scored(self, audio, stop=None):
        from tests.test_further_framings import kind_of

        if kind_of(self.n_clip, len(audio)) == self.blocked:
            self.calls.append(self.blocked)
            self.entered.set()
            assert stop is not None and stop.wait(10), f"the {self.blocked} reading was never cancelled"
            raise DecodeCancelled("hurried")
        return super().transcribe_scored(audio, stop)


def read_hurried(reader: LineReader, model: Blocking, clip: np.ndarray) -> str:
    """Read ``clip`` on a thread, hurry the reader once the blocked reading started; the text."""
    result: dict = {}
    worker = threading.Thread(target=lambda: result.setdefault("text", reader.read(clip)))
    worker.start()
    assert model.entered.wait(10)
    reader.hurry()
    worker.join(10)
    assert not worker.is_alive()
    return result["text"]


@pytest.mark.parametrize("blocked, expect", [("framed", "a"), ("slower", "b")])
def test_hurry_cancels_the_reading_running_in_turn_and_keeps_the_surest_so_far(blocked, expect):
    """The file path (readings in turn): a hurry during the second or a retimed reading ends it
    at its next decoder step and reads nothing more."""
    clip = line(2.0)
    model = Blocking(len(clip), blocked, **UNSURE)
    assert read_hurried(LineReader(model), model, clip) == expect
    assert model.calls[-1] == blocked  # nothing was started after the cancelled reading


def test_live_hurry_cancels_the_helpers_reading_and_the_line_keeps_its_reading_as_cut():
    clip = line(2.0)
    model = Blocking(len(clip), "framed", **UNSURE)
    reader = LineReader(model, at_once=True)
    try:
        assert read_hurried(reader, model, clip) == "a"
    finally:
        reader.close()


def test_a_hurry_with_a_grace_reads_in_full_until_it_fires_and_resume_cancels_it():
    clip = line(2.0)
    model = Cancellable(len(clip), **UNSURE)
    reader = LineReader(model)
    reader.hurry(after=60.0)
    assert reader.read(clip) == "d"  # still within the grace: read in full
    reader.resume()  # the pending hurry is dropped
    # a short grace: the blocked reading is cancelled once it fires
    model = Blocking(len(clip), "slower", **UNSURE)
    reader = LineReader(model)
    reader.hurry(after=0.05)
    assert reader.read(clip) == "b"


def test_the_default_backend_hurries_at_once_for_a_file_and_after_a_grace_live(monkeypatch):
    asked = []
    monkeypatch.setattr(LineReader, "hurry", lambda self, after=0.0: asked.append(after))
    monkeypatch.setattr(LineReader, "resume", lambda self: asked.append("resume"))
    for partials in (False, True):
        backend = ms.MoonshineBackend(model=Scripted(1), vad=lambda w, s: (0.0, s), partials=partials)
        try:
            backend.interrupt()
            backend.resume()
        finally:
            backend.close()
    assert asked == [0.0, "resume", ms.STOP_GRACE_S, "resume"]


# -- the whole command ---------------------------------------------------------------------------
#: 24 lines of 1.6 s speech, 1.3 s apart (VAD windows of 32 ms)
PROBS = [0.0] * 10 + ([0.9] * 50 + [0.0] * 40) * 24 + [0.0] * 40
#: Simulated cost of every reading after the one as cut (a model's encoder and decoder steps)
AGAIN_S = 1.0


class SlowModel:
    """Every line is unsure as cut; each further reading takes :data:`AGAIN_S` unless cancelled."""

    cancellable = True

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cut_readings = 0
        self.two_read = threading.Event()

    def transcribe_scored(self, audio, stop=None):
        lead = int(FRAME_LEAD_S * SR)
        if np.any(audio[:lead]):  # as cut (the others start with the framing's silence)
            with self.lock:
                self.cut_readings += 1
                if self.cut_readings >= 2:
                    self.two_read.set()
            return "Words as cut.", -0.5
        if (stop or threading.Event()).wait(AGAIN_S):  # the model's cost, cut short by a cancel
            raise DecodeCancelled("hurried")
        return "Words read again.", -0.3

    def transcribe(self, audio):  # pragma: no cover - transcribe_scored is used
        raise AssertionError("transcribe_scored should be used")


def test_ctrl_c_in_transcribe_returns_within_two_seconds_and_every_line_read_has_words(tmp_path, monkeypatch):
    """Before the hurry, Ctrl-C waited for the four pending lines' four further readings each
    (1 s each here, two workers): about 8 s."""
    import captioner.commands.transcribe as tr
    from captioner.cli import main
    from captioner.engine import turn_models
    from captioner.engine.turn_models import TurnModels

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(ms, "usable_cpus", lambda: 2)  # the line pool also on a 1-CPU machine
    monkeypatch.setitem(turn_models._models, True, TurnModels(CountingBatchVad(PROBS), lambda audio: 0.7))
    monkeypatch.setitem(turn_models._models, False, TurnModels(CountingBatchVad(PROBS), None))
    monkeypatch.setattr(turn_models, "preload", lambda: None)
    model = SlowModel()
    made = []

    def open_backend(args):
        made.append(ms.MoonshineBackend(model=model, vad=CountingBatchVad(PROBS), partials=False, line_workers=2))
        return made[-1]

    monkeypatch.setattr(tr, "open_backend", open_backend)
    n = len(PROBS) * 512
    sf.write(tmp_path / "talk.wav", (0.1 * np.sin(np.arange(n) / 7.0)).astype(np.float32), SR)
    out = tmp_path / "talk.txt"
    took: dict = {}

    def press_ctrl_c() -> None:
        if model.two_read.wait(60):
            took["t0"] = time.monotonic()
            os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    code = main(["transcribe", str(tmp_path / "talk.wav"), "-o", str(out), "--speakers", "off"])
    took["s"] = time.monotonic() - took["t0"]
    assert made and code == 1
    assert took["s"] < 2.0, f"Ctrl-C took {took['s']:.1f} s"
    import re

    lines = [ln for ln in out.read_text(encoding="utf-8").splitlines() if ln.strip()]
    said = [s.strip() for s in re.sub(r"\[[0-9:]+\]", "", " ".join(lines)).split(".") if s.strip()]
    assert said and set(said) <= {"Words as cut", "Words read again"}, lines
    assert "Words as cut" in said  # the lines read after the stop kept their first reading
    assert len(said) < 24  # the file was not read to its end


def test_ctrl_c_before_any_words_says_nothing_was_captioned_yet(tmp_path, monkeypatch, capsys):
    """It said "the text so far is written" about an empty file (2026-12-06, a tester's run)."""
    import captioner.commands.transcribe as tr
    from captioner.cli import main
    from captioner.engine import turn_models
    from captioner.engine.turn_models import TurnModels

    class Silent(SlowModel):
        def transcribe_scored(self, audio, stop=None):
            if not self.two_read.is_set():
                self.two_read.set()
                os.kill(os.getpid(), signal.SIGINT)
            return "", 0.0

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(ms, "usable_cpus", lambda: 2)
    monkeypatch.setitem(turn_models._models, True, TurnModels(CountingBatchVad(PROBS), lambda audio: 0.7))
    monkeypatch.setattr(turn_models, "preload", lambda: None)
    monkeypatch.setattr(tr, "open_backend", lambda args: ms.MoonshineBackend(
        model=Silent(), vad=CountingBatchVad(PROBS), partials=False, line_workers=2))
    sf.write(tmp_path / "talk.wav", np.zeros(len(PROBS) * 512, np.float32), SR)
    assert main(["transcribe", str(tmp_path / "talk.wav"), "-o", str(tmp_path / "t.txt"), "--speakers", "off"]) == 1
    err = capsys.readouterr().err
    assert "nothing was captioned yet" in err and "text so far" not in err, err
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == ""
