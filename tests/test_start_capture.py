"""``captioner listen`` opens the capture before the model loads: nothing said after the command is lost.

Issue 27.3. The fast tests use a fake live source (a speaker who starts talking at the
command) and a fake model whose load takes 2 s; the slow one runs the real command against a
private PulseAudio server with an empty model cache (the model is prepared at first use, 5-15 s)
and espeak-ng speech played into the system-audio sink 0.3 s after the command.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from captioner.audio.source import AudioSource
from captioner.commands import listen
from tests.audio_fakes import FakeBackend, Speaker, SpeakerSource, tone

LOAD_S = 2.0


def _args(argv):
    parser = argparse.ArgumentParser()
    listen.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["listen", *argv, "--sounds", "off"])  # a tone is a ringtone to the sound model


def _speaker() -> Speaker:
    """0.3 s of silence, then 1 s of "speech" (ten loud 100 ms chunks: FakeBackend says w1..w10)."""
    return Speaker(np.concatenate([np.zeros(4800, np.float32), tone(1.0, 16000, amp=0.3)]))


def test_listen_captions_what_is_said_while_the_model_loads(monkeypatch, tmp_path):
    speaker = _speaker()
    made = []

    def sources(args, rate):
        made.append(SpeakerSource(speaker, label="Meeting", align=1600))
        return made

    def slow_load(args):  # the model takes LOAD_S to load; the speaker talks meanwhile
        threading.Event().wait(LOAD_S)
        return FakeBackend()

    monkeypatch.setattr(listen, "_build_sources", sources)
    monkeypatch.setattr(listen, "_load_backend", slow_load)
    out, err = io.StringIO(), io.StringIO()
    speaker.play()
    code = listen.run(_args(["--system", "--duration", str(LOAD_S + 2.0), "-o", str(tmp_path / "t.txt")]), out, err)
    assert code == 0, err.getvalue()
    log = err.getvalue()
    assert made[0].opened_at - speaker.t0 < 0.5  # the capture opened at once, not after the load
    assert log.index("capturing: Meeting") < log.index("listening: Meeting")
    assert re.search(r"catching up on the [0-9.]+ s said while the model loaded", log), log
    words = (tmp_path / "t.txt").read_text(encoding="utf-8").split()[1:]
    assert words == [f"w{k}" for k in range(1, 11)], (words, log)  # every chunk said during the load


def test_ctrl_c_while_the_model_loads_closes_the_capture_at_once(monkeypatch, tmp_path):
    speaker = _speaker()
    made = []
    release = threading.Event()

    def sources(args, rate):
        made.append(SpeakerSource(speaker, label="Meeting"))
        return made

    def hanging_load(args):
        release.wait(30)
        return FakeBackend()

    def interrupt_once_capturing():
        deadline = time.monotonic() + 10
        while not (made and made[0].is_running) and time.monotonic() < deadline:
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # handled on the main thread by listen's stop requests

    monkeypatch.setattr(listen, "_build_sources", sources)
    monkeypatch.setattr(listen, "_load_backend", hanging_load)
    out, err = io.StringIO(), io.StringIO()
    speaker.play()
    threading.Thread(target=interrupt_once_capturing, daemon=True).start()
    t0 = time.monotonic()
    try:
        code = listen.run(_args(["--system", "-o", str(tmp_path / "t.txt")]), out, err)
    finally:
        release.set()
    took = time.monotonic() - t0
    assert code == 130 and took < 2.0, (code, took, err.getvalue())
    assert "interrupted before captioning started" in err.getvalue()
    assert made[0].closed.is_set() and not made[0].is_running
    assert not (tmp_path / "t.txt").exists()


def test_a_load_failure_closes_the_capture_and_says_what_to_do(monkeypatch, tmp_path):
    from captioner.asr.base import BackendError

    made = []

    def sources(args, rate):
        made.append(SpeakerSource(_speaker(), label="Meeting"))
        return made

    def failing(args):
        raise BackendError("The default caption model is not installed (package moonshine-cpp missing). "
                           "Reinstall captioner: pip install --force-reinstall captioner")

    monkeypatch.setattr(listen, "_build_sources", sources)
    monkeypatch.setattr(listen, "_load_backend", failing)
    out, err = io.StringIO(), io.StringIO()
    assert listen.run(_args(["--system"]), out, err) == 1
    assert "pip install --force-reinstall" in err.getvalue() and made[0].closed.is_set()


class _EagerSource(AudioSource):
    """A device that calls back from inside its own open, before ``_open`` returns (PortAudio can)."""

    kind = "microphone"
    description = "eager"

    def _open(self):
        self._push(np.full((1600, 1), 0.5, np.float32))
        return 16000, 1

    def _close(self):
        pass


def test_audio_delivered_while_the_device_opens_is_kept():
    src = _EagerSource("You")
    src.start()
    block = src.read()
    assert block is not None and block.samples.size == 1600  # was dropped: the queue bound was 1 frame
    assert src.stats().dropped_blocks == 0


def test_recent_audio_is_read_without_taking_it():
    """The level meter's view of a source while the model loads: the newest audio, left in the queue."""
    src = _EagerSource("You")
    src.start()
    src._push(np.stack([np.full(800, 0.25, np.float32), np.full(800, 0.75, np.float32)], axis=1)[:, :1])
    x = src.recent(0.05)  # 800 samples at 16 kHz
    assert x.shape == (800,) and np.allclose(x, 0.25)
    assert src.read().samples.size == 2400  # nothing was taken


# -- the real thing: a private PulseAudio server, the real model, an empty model cache ------------------------
FIRST = "Welcome back to the weekly planning meeting."
SECOND = "Please send the report before Friday."


def _content(text: str) -> list[str]:
    """The words said, without the speaker labels a system source's lines carry ("Speaker 1: ")."""
    return re.sub(r"[^a-z ]+", " ", re.sub(r"speaker \d+: ", "", text.lower())).split()


@pytest.mark.slow
@pytest.mark.pulse
@pytest.mark.parametrize("cache", ["empty", "warm"])
def test_listen_system_keeps_the_first_sentence_from_the_command_on(tmp_path_factory, cache):
    """``listen --system`` with speech starting 0.3 s after the command: the first sentence is there
    from its first word, with an empty model cache (prepared at first use) and a warm one."""
    from tests.pulse_server import PulseServer, missing_tools
    from tests.speech import espeak

    if missing_tools() or shutil.which("espeak-ng") is None:
        pytest.skip(f"needs pulseaudio, pactl, paplay and espeak-ng (missing: {missing_tools() or ['espeak-ng']})")
    import soundfile as sf

    tmp = tmp_path_factory.mktemp(f"start-{cache}")
    caches = tmp_path_factory.getbasetemp() / "start-capture-cache"  # shared: "empty" fills it for "warm"
    if cache == "empty":
        shutil.rmtree(caches, ignore_errors=True)
    caches.mkdir(exist_ok=True)
    if cache == "warm" and not any((caches / "captioner").glob("moonshine-base-en/*/manifest.json")):
        subprocess.run([sys.executable, "-m", "captioner.asr.moonshine.prepare", "--quiet"], check=True,
                       env={**os.environ, "XDG_CACHE_HOME": str(caches)}, timeout=300)
    raw = espeak(f"{FIRST} {SECOND}", tmp / "raw.wav")
    x, rate = sf.read(raw, dtype="float32")
    wav = tmp / "speech.wav"
    sf.write(wav, np.concatenate([x, np.zeros(int(1.5 * rate), np.float32)]), rate)
    server = PulseServer().start()
    out_file = tmp / "out.txt"
    try:
        env = {**os.environ, "XDG_CACHE_HOME": str(caches), "CAPTIONER_DATA_DIR": str(tmp / "data"),
               "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
        errors = tmp / "stderr.txt"
        with open(errors, "w", encoding="utf-8") as err_file:
            proc = subprocess.Popen([sys.executable, "-m", "captioner.cli", "listen", "--system", "-o", str(out_file)],
                                    env=env, stdout=subprocess.PIPE, stderr=err_file, text=True)
            threading.Event().wait(0.3)  # the user starts the meeting's audio right after the command
            # a meeting app plays with a short buffer (paplay's default 2 s makes the null sink render ahead)
            player = subprocess.Popen(["paplay", "-d", "meeting", "--latency-msec=50", str(wav)],
                                      env={**os.environ, **server.env})
            printed = []
            reader = threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True)
            reader.start()
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline and proc.poll() is None:
                if any("friday" in line.lower() for line in printed):  # the second sentence: both are in
                    break
                threading.Event().wait(0.2)
            player.wait(30)
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
            reader.join(5)
        log = errors.read_text(encoding="utf-8")
    finally:
        server.stop()
    assert proc.returncode == 0, log
    if cache == "empty":
        assert "Preparing the built-in model" in log, log  # the cache really was empty
    said = _content(out_file.read_text(encoding="utf-8"))
    first = _content(FIRST)
    assert said[:1] == first[:1], (said, log)  # captioned from its first word
    missing = [w for w in first if w not in said]
    assert len(missing) <= 1, (missing, said, log)  # the whole first sentence (one word may be misread)


@pytest.mark.slow
@pytest.mark.pulse
def test_ctrl_c_while_the_model_is_prepared_exits_at_once_without_an_abort(tmp_path):
    """Ctrl-C during the first-use preparation: exit 130 within 2 s, not an abort at the interpreter's exit
    (ONNX Runtime still working on the loading thread: "terminate called without an active exception", -6)."""
    from tests.pulse_server import PulseServer, missing_tools

    if missing_tools():
        pytest.skip(f"needs pulseaudio, pactl and paplay (missing: {missing_tools()})")
    server = PulseServer().start()
    try:
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "empty-cache"), "CAPTIONER_DATA_DIR": str(tmp_path),
               "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
        proc = subprocess.Popen([sys.executable, "-m", "captioner.cli", "listen", "--system", "-o",
                                 str(tmp_path / "t.txt")], env=env, stderr=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stderr:  # wait until the preparation runs
            lines.append(line)
            if "Preparing the built-in model" in line:
                break
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(30)
        took = time.monotonic() - t0
        rest = proc.stderr.read()
    finally:
        server.stop()
    log = "".join(lines) + rest
    assert lines[0].startswith("capturing: "), log
    assert code == 130 and took < 2.0, (code, took, log)
    assert "interrupted before captioning started" in log and "terminate called" not in log
    assert not (tmp_path / "t.txt").exists()
