"""``captioner transcribe`` / ``captioner listen`` with ``--backend remote`` against the scripted server."""

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("websockets")

from captioner.commands import listen  # noqa: E402
from tests.remote_server import Script, ScriptedServer, word_audio  # noqa: E402
from tests.speech import have_espeak  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Script(text={8: " The", 9: " meeting", 10: " starts", 11: ".", 30: " Thank", 31: " you", 32: "."},
                vad={k: [0.9] * 4 for k in (18, 19, 20)})


def _no_speakers(args):
    """These tests pin the remote protocol's text; speaker labels (issue 38) are tested elsewhere."""
    args = list(args)
    if args and args[0] in ("transcribe", "listen") and "--speakers" not in args:
        args += ["--speakers", "off"]
    return args


def _cli(args, tmp_path, **env):
    args = _no_speakers(args)
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), CAPTIONER_DATA_DIR=str(tmp_path / "data"), **env)
    return subprocess.run([sys.executable, "-m", "captioner.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=120, cwd=tmp_path)


@pytest.fixture
def speech_wav(tmp_path):
    path = tmp_path / "speech.wav"
    if have_espeak():
        subprocess.run(["espeak-ng", "-w", str(path), "The meeting starts. Thank you."], check=True)
    else:
        sf.write(path, 0.1 * np.sin(np.arange(22050 * 3) / 7.0).astype(np.float32), 22050)
    return path


def test_transcribe_speech_to_srt_through_the_server(tmp_path, speech_wav):
    with ScriptedServer(SCRIPT) as srv:
        r = _cli(["transcribe", str(speech_wav), "--backend", "remote", "--model", srv.url, "--language", "en",
                  "--delay", "480", "-o", "out.srt"], tmp_path)
        assert r.returncode == 0, r.stderr
        received = srv.connections[0].received.size
        update = srv.connections[0].updates[0]
    assert update["language"] == "en" and update["target_delay_ms"] == 480
    info = sf.info(str(speech_wav))
    assert abs(received - info.frames * 16000 / info.samplerate) < 2  # the whole file, resampled to 16 kHz
    cues = (tmp_path / "out.srt").read_text(encoding="utf-8")
    # times come from the step count: the first cue starts at step 8 (0.64 s); words the server
    # sends after the audio ended (its delay + flush padding) are timed at the end of the file
    import srt

    first, second = list(srt.parse(cues))
    assert first.content == "The meeting starts." and first.start.total_seconds() == pytest.approx(0.64)
    assert second.content == "Thank you."
    assert second.start.total_seconds() == pytest.approx(min(2.40, received / 16000), abs=0.002)
    assert "Connected to caption server" in r.stderr


def test_transcribe_json_keeps_turns_and_times(tmp_path):
    sf.write(tmp_path / "w.wav", word_audio([0] * 40), 16000)
    with ScriptedServer(SCRIPT) as srv:
        r = _cli(["transcribe", "w.wav", "--backend", "remote", "--model", srv.url, "--format", "json"], tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    segs = doc["segments"]
    assert [s["text"].strip() for s in segs] == ["The meeting starts.", "Thank you."]
    assert segs[0]["start"] == pytest.approx(0.64)
    assert segs[1]["start"] == pytest.approx(2.40)


def test_transcribe_server_down_is_a_runtime_error_naming_the_url(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"ws://127.0.0.1:{s.getsockname()[1]}/v1/realtime"
    s.close()
    sf.write(tmp_path / "w.wav", word_audio([0] * 5), 16000)
    r = _cli(["transcribe", "w.wav", "--backend", "remote", "--model", url], tmp_path)
    assert r.returncode == 1 and url in r.stderr and "connection refused" in r.stderr


@pytest.mark.parametrize("argv, needle", [
    (["--model", "http://h:18191/v1/realtime"], "did you mean ws://"),
    (["--model", "ws://h/v1/realtime", "--clock", "120"], "80 ms clock only"),
    (["--model", "ws://h/v1/realtime", "--delay", "1280"], "delay 1280 ms is not served"),
    (["--model", "ws://h/v1/realtime", "--ca-file", "/nonexistent.pem"], "CA file not found"),
    ([], "needs a server URL"),
])
def test_remote_usage_errors(tmp_path, argv, needle):
    sf.write(tmp_path / "w.wav", word_audio([0] * 2), 16000)
    r = _cli(["transcribe", "w.wav", "--backend", "remote", *argv], tmp_path)
    assert r.returncode == 2 and needle in r.stderr, r.stderr


def _listen(argv, on_listening=None):
    argv = _no_speakers(argv)
    parser = argparse.ArgumentParser()
    listen.add_parser(parser.add_subparsers(dest="command"))

    class _Err(io.StringIO):
        def write(self, s):
            if on_listening is not None and s.startswith("listening:"):
                on_listening()
            return super().write(s)

    out, err = io.StringIO(), _Err()
    code = listen.run(parser.parse_args(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_listen_two_sources_one_server_is_refused_clearly(tmp_path):
    sf.write(tmp_path / "a.wav", word_audio([0] * 5), 16000)
    code, out, err = _listen(["listen", "--file", str(tmp_path / "a.wav"), "--file", str(tmp_path / "a.wav"),
                              "--fast", "--backend", "remote", "--model", "ws://127.0.0.1:9/v1/realtime",
                              "--journal-dir", str(tmp_path / "j")])
    assert code == 2 and "2 sources need 2 caption servers" in err


def test_listen_server_down_fails_clearly_without_traceback_or_empty_file(tmp_path, caplog):
    sf.write(tmp_path / "a.wav", word_audio([0] * 5), 16000)
    out = tmp_path / "rl.srt"
    code, _, err = _listen(["listen", "--file", str(tmp_path / "a.wav"), "--fast", "--backend", "remote",
                            "--model", "ws://127.0.0.1:1/v1/realtime", "--journal-dir", str(tmp_path / "j"),
                            "-o", str(out)])
    assert code == 1 and "127.0.0.1:1" in err
    assert "Traceback" not in err and not [r for r in caplog.records if r.exc_info]
    assert not out.exists() and "was not written" in err


def test_listen_two_sources_two_servers(tmp_path):
    sf.write(tmp_path / "a.wav", word_audio([0] * 40), 16000)
    sf.write(tmp_path / "b.wav", word_audio([0] * 40), 16000)
    with ScriptedServer(Script(text={5: " alpha"})) as s1, ScriptedServer(Script(text={5: " beta"})) as s2:
        code, out, err = _listen(["listen", "--file", str(tmp_path / "a.wav"), "--file", str(tmp_path / "b.wav"),
                                  "--fast", "--backend", "remote", "--model", f"{s1.url},{s2.url}",
                                  "--journal-dir", str(tmp_path / "j")])
    assert code == 0, err
    assert {"[a.wav] alpha", "[b.wav] beta"} <= set(out.splitlines()) or \
           {"[a.wav] beta", "[b.wav] alpha"} <= set(out.splitlines())


@pytest.mark.pulse
def test_listen_system_audio_through_the_server(tmp_path):
    from tests.pulse_server import PulseServer, missing_tools

    if missing_tools():
        pytest.skip(f"needs {', '.join(missing_tools())}")
    from captioner.audio.devices import rescan

    pulse = PulseServer().start()
    rescan()
    try:
        wav = tmp_path / "words.wav"
        sf.write(wav, word_audio([3] * 25), 16000)  # 2 s of sound played into the default sink
        players = []
        with ScriptedServer(Script(text={10: " hello", 20: " world"})) as srv:
            code, out, err = _listen(["listen", "--system", "--duration", "3", "--backend", "remote",
                                      "--model", srv.url, "-o", str(tmp_path / "t.vtt"),
                                      "--journal-dir", str(tmp_path / "j")],
                                     on_listening=lambda: players.append(pulse.play("@DEFAULT_SINK@", wav)))
            received = srv.connections[0].received
        assert code == 0, err
        assert players and players[0].wait(30) == 0
        assert "[Meeting] hello" in out and "[Meeting] world" in out
        assert np.sum(np.abs(received - 0.003) < 0.0005) > 16000  # what was played reached the server
        assert "hello world" in (tmp_path / "t.vtt").read_text(encoding="utf-8").replace("\n", " ")
    finally:
        pulse.stop()
        rescan()


# -- interrupted runs (issue 21): Stop is final, the -o file is always written ---------------------------
INTERRUPTIBLE = r"""
import signal
import sys
# a shell that starts jobs in the background hands them SIGINT ignored; a terminal's Ctrl-C is the case here
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
from captioner.cli import main
sys.exit(main({argv!r}))
"""


def _interruptible(argv, tmp_path):
    import subprocess

    code = INTERRUPTIBLE.format(root=str(ROOT), argv=list(argv))
    env = dict(os.environ, PYTHONPATH=str(ROOT), CAPTIONER_DATA_DIR=str(tmp_path / "data"))
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path)


@pytest.mark.parametrize("command, signame, stall", [
    ("transcribe", "SIGINT", False), ("transcribe", "SIGTERM", True), ("transcribe", "SIGINT", True),
    ("listen", "SIGINT", True), ("listen", "SIGTERM", True),
])
def test_an_interrupted_run_writes_the_output_and_opens_no_new_session(tmp_path, command, signame, stall):
    import signal
    import time

    from tests.remote_server import Relay

    words = [0, 1, 2, 3, 0, 4, 5, 0, 6, 7] * 40  # 32 s, paced in real time: the signal comes first
    sf.write(tmp_path / "w.wav", word_audio(words), 16000)
    out = tmp_path / "out.srt"
    with ScriptedServer(Script(words_from_audio=True)) as srv, Relay(srv.port) as relay:
        if command == "transcribe":
            argv = ["transcribe", "w.wav", "--realtime", "--backend", "remote", "--model", relay.url, "-o", str(out)]
        else:
            argv = ["listen", "--file", "w.wav", "--backend", "remote", "--model", relay.url, "-o", str(out),
                    "--journal-dir", str(tmp_path / "j")]
        proc = _interruptible(_no_speakers(argv), tmp_path)
        try:
            assert srv.wait_for(lambda: srv.connections and srv.connections[0].steps >= 25, timeout=60)
            if stall:
                relay.stall()  # a half-open connection: Ctrl-C comes while nothing arrives
            sessions = relay.accepted
            t0 = time.monotonic()
            proc.send_signal(getattr(signal, signame))
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
        assert relay.accepted == sessions  # no new server session after the stop
    assert out.exists(), err  # written on every interrupted run
    import srt

    cues = list(srt.parse(out.read_text(encoding="utf-8")))
    text = " ".join(c.content for c in cues).split()
    assert text[:3] == ["w1", "w2", "w3"], err
    assert text == [f"w{k}" for k in words if k][: len(text)], (" ".join(text), err)  # in order, none twice
    # Stop must be done within 2 s; the child's interpreter start-up is not part of it, its exit is
    assert took < 4.0, f"{command} took {took:.1f} s to stop after {signame}"


def test_cue_start_times_follow_the_script_across_a_reconnect(tmp_path):
    """A word's cue starts at its own step (audio time), also after a 1001 close: the audio
    sent again around the seam (from step 4, where the last word said began: earlier than the
    delay + look-ahead before step 12) keeps its stream position, so the new session's steps
    map back to where the words were spoken."""
    import srt

    script = Script(text={2: " The", 3: " meeting", 4: " starts."}, close_after_steps=(12, 1001),
                    text_by_connection={1: {16: " Thank", 17: " you."}})  # generation steps 16-17 = stream 20-21
    sf.write(tmp_path / "w.wav", word_audio([0] * 40), 16000)
    with ScriptedServer(script) as srv:
        r = _cli(["transcribe", "w.wav", "--backend", "remote", "--model", srv.url, "-o", "out.srt"], tmp_path)
        resent_from = 40 * 1280 - srv.connections[1].received.size
    assert r.returncode == 0, r.stderr
    assert resent_from == 4 * 1280
    cues = list(srt.parse((tmp_path / "out.srt").read_text(encoding="utf-8")))
    assert [(c.content, round(c.start.total_seconds(), 3)) for c in cues] == [
        ("The meeting starts.", 0.16), ("Thank you.", 1.60)]


@pytest.mark.parametrize("command", ["transcribe", "listen"])
def test_ctrl_c_while_the_server_has_not_greeted_yet_stops_at_once_and_writes_the_output(tmp_path, command):
    """A server that accepts the connection and never sends ``session.created``: Ctrl-C during
    that wait (the first step is blocked in the connect) used to wait out the 5 s greeting
    limit, then report "the remote model failed" and write no ``-o`` file."""
    import signal
    import time

    sf.write(tmp_path / "w.wav", word_audio([0, 1, 2, 3] * 50), 16000)
    out = tmp_path / "out.srt"
    with ScriptedServer(Script(greet=False)) as srv:
        if command == "transcribe":
            argv = ["transcribe", "w.wav", "--realtime", "--backend", "remote", "--model", srv.url, "-o", str(out)]
        else:
            argv = ["listen", "--file", "w.wav", "--backend", "remote", "--model", srv.url, "-o", str(out),
                    "--journal-dir", str(tmp_path / "j")]
        proc = _interruptible(_no_speakers(argv), tmp_path)
        try:
            assert srv.wait_for(lambda: bool(srv.connections), timeout=60)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
        sessions = len(srv.connections)
    assert sessions == 1, err
    assert out.exists(), err
    assert "model failed" not in err and "session.created" not in err, err
    assert took < 3.0, f"{command} took {took:.1f} s to stop while the server had not greeted"
