"""``captioner listen`` and ``captioner devices`` without audio hardware (fake backend, files, fake devices)."""

import io
import json

import numpy as np
import pytest
import soundfile as sf
import srt
import webvtt

import argparse

from captioner.audio import devices as D
from captioner.commands import devices as devices_cmd
from captioner.commands import listen
from tests.audio_fakes import FakeBackend, FakeDevice, FakeSD, tone


@pytest.fixture
def fake_backend(monkeypatch):
    backend = FakeBackend(batch_size=2)
    monkeypatch.setattr(listen, "_load_backend", lambda args: backend)
    return backend


def _files(tmp_path):
    a = tmp_path / "you.wav"
    b = tmp_path / "meeting.wav"
    # 0.5 s tone, 0.3 s silence, 0.3 s tone (two turns would need a model; one segment per source here)
    sf.write(a, np.concatenate([tone(0.5, 44100), np.zeros(13230, np.float32)]), 44100)
    sf.write(b, tone(0.3, 48000), 48000)
    return str(a), str(b)


def _parse(argv):
    # only this branch's subcommands (cli.COMMANDS also names modules other branches add)
    parser = argparse.ArgumentParser(prog="captioner")
    sub = parser.add_subparsers(dest="command")
    listen.add_parser(sub)
    devices_cmd.add_parser(sub)
    if argv[:1] == ["listen"] and "--speakers" not in argv:  # tones are no voices: labels are tested in
        argv = [*argv, "--speakers", "off"]                    # test_speaker_transcript.py
    if argv[:1] == ["listen"] and "--sounds" not in argv:  # a tone is a ringtone to the sound model: sound
        argv = [*argv, "--sounds", "off"]                    # captions are tested in test_sound_captions.py
    return parser.parse_args(argv)


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    args = _parse(argv)
    code = listen.run(args, out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fmt", ["srt", "vtt", "json", "txt"])
def test_listen_files_writes_transcript_and_journal(tmp_path, fake_backend, fmt):
    a, b = _files(tmp_path)
    target = tmp_path / f"out.{fmt}"
    journal_dir = tmp_path / "journal"
    code, out, err = _run(["listen", "--file", a, "--file", b, "--fast", "-o", str(target),
                           "--journal-dir", str(journal_dir)])
    assert code == 0, err
    assert "[you.wav] w1" in out and "[meeting.wav] w1" in out  # printed live with labels
    text = target.read_text(encoding="utf-8")
    if fmt == "srt":
        cues = list(srt.parse(text))
        # both start at 0.0 s: ordered by start time; the second is nudged 1 ms to keep starts increasing
        assert sorted(c.content for c in cues) == ["meeting.wav: w1 w2 w3", "you.wav: w1 w2 w3 w4 w5"]
        assert [c.start.total_seconds() for c in cues] == [0.0, 0.001]
    elif fmt == "vtt":
        cues = list(webvtt.from_string(text))
        assert sorted(c.text for c in cues) == ["meeting.wav: w1 w2 w3", "you.wav: w1 w2 w3 w4 w5"]
    elif fmt == "json":
        segs = json.loads(text)["segments"]
        assert {s["source"]: s["text"].strip() for s in segs} == {"you.wav": "w1 w2 w3 w4 w5", "meeting.wav": "w1 w2 w3"}
        assert {s["source"]: s["end"] for s in segs} == pytest.approx({"you.wav": 0.5, "meeting.wav": 0.3}, abs=0.11)
    else:
        assert sorted(line.split("] ", 1)[1] for line in text.splitlines()) == [
            "meeting.wav: w1 w2 w3", "you.wav: w1 w2 w3 w4 w5"]
    (journal,) = journal_dir.glob("*.jsonl")
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    finals = [r for r in records if r.get("type") == "text"]
    assert len(finals) == 8 and {r["source"] for r in finals} == {"you.wav", "meeting.wav"}
    assert records[-1]["type"] == "close"


def test_listen_duration_stops_a_live_file(tmp_path, fake_backend):
    long = tmp_path / "long.wav"
    sf.write(long, tone(30.0, 16000), 16000)
    code, out, err = _run(["listen", "--file", str(long), "--duration", "0.3", "--format", "txt"])
    assert code == 0, err
    words = out.strip().splitlines()[-1].split()[1:]  # the transcript printed at the end
    assert 1 <= len(words) < 30  # stopped long before the 30 s file ended, last words flushed


def test_listen_closes_its_backend_after_writing_the_transcript(tmp_path, monkeypatch):
    """Issue 30.2: the backend's own threads (the default model's partial re-decode, inside ONNX
    Runtime) are ended before the interpreter exits, or the process aborts with status 134."""
    a, _ = _files(tmp_path)
    target = tmp_path / "out.txt"
    seen = []

    class Closing(FakeBackend):
        def close(self):
            seen.append(target.read_text(encoding="utf-8") if target.exists() else None)

    monkeypatch.setattr(listen, "_load_backend", lambda args: Closing(batch_size=2))
    code, _, err = _run(["listen", "--file", a, "--fast", "-o", str(target)])
    assert code == 0, err
    assert len(seen) == 1 and seen[0] is not None and "w5" in seen[0]  # once, after the file was written


def test_listen_system_never_falls_back_to_microphone(monkeypatch, fake_backend):
    sd = FakeSD([FakeDevice("Built-in mic", 1, 48000.0)])
    monkeypatch.setattr(D, "_sounddevice", lambda sd_=None: sd_ or sd)
    monkeypatch.setattr(D, "pulse_inventory", lambda use_pulsectl=True: D.PulseInventory())
    code, out, err = _run(["listen", "--system", "--duration", "1"])
    assert code == 1
    assert "no system-audio source found" in err and "Built-in mic" not in out
    assert sd.streams == []


def test_listen_bad_duration_and_missing_file(tmp_path, fake_backend):
    assert _run(["listen", "--file", "x.wav", "--duration", "0"])[0] == 2
    code, _, err = _run(["listen", "--file", str(tmp_path / "missing.wav")])
    assert code == 1 and "not found" in err


def test_devices_lists_both_kinds(monkeypatch, capsys):
    sd = FakeSD([FakeDevice("pulse", 32, 44100.0), FakeDevice("HDA Intel (hw:0,0)", 2, 48000.0)])
    inv = D.PulseInventory(
        (D.PulseSourceInfo("meeting.monitor", "Monitor of Null Output", "meeting", 2, 44100),
         D.PulseSourceInfo("virtmic", "Virtual Source", None, 1, 44100)),
        "meeting", "virtmic",
    )
    monkeypatch.setattr(D, "_sounddevice", lambda sd_=None: sd_ or sd)
    monkeypatch.setattr(D, "pulse_inventory", lambda use_pulsectl=True: inv)
    monkeypatch.setattr("sys.platform", "linux")
    assert devices_cmd.run(_parse(["devices"])) == 0
    text = capsys.readouterr().out
    mics, system = text.split("System audio:")
    assert "virtmic" in mics and "meeting.monitor" not in mics and "[1] HDA Intel" in mics
    assert "* meeting.monitor (Monitor of Null Output, PulseAudio" in system
    assert devices_cmd.run(_parse(["devices", "--json"])) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in payload["system"]] == ["meeting.monitor"]
    assert payload["system_help"] is None


CTRL_C_SCRIPT = r"""
import signal
import sys
# a shell that starts jobs in the background (CI runners, nohup) hands them SIGINT ignored,
# and Python then keeps it ignored; a terminal's Ctrl-C is what this test is about
signal.signal(signal.SIGINT, signal.default_int_handler)
# likewise SIGHUP: under nohup it arrives ignored, and listen then keeps it ignored on purpose
# (test_stop_requests_keep_an_inherited_ignore); a closing terminal's SIGHUP is what this test is about
signal.signal(signal.SIGHUP, signal.SIG_DFL)
sys.path.insert(0, {root!r})
from tests.audio_fakes import FakeBackend
from captioner.commands import listen
import argparse
class Hanging(FakeBackend):  # a model that stops answering after its second word (a stuck GPU, a deadlock)
    def step(self, rows):
        if any(r.state is not None and r.state["k"] >= 2 for r in rows):
            import threading
            threading.Event().wait()
        return super().step(rows)
listen._load_backend = lambda args: {backend}(batch_size=1)
if {during_start!r}:  # the signal arrives while LiveCaptioner.start() opens the sources
    import os
    from captioner.audio.filesource import FileSource
    _start = FileSource.start
    def start(self):
        _start(self)
        os.kill(os.getpid(), getattr(signal, {during_start!r}))
    FileSource.start = start
if {during_write!r}:  # a second signal arrives while the transcript is being written
    import os
    _write = listen.write_transcript
    def write(*a, **k):
        os.kill(os.getpid(), getattr(signal, {during_write!r}))
        return _write(*a, **k)
    listen.write_transcript = write
parser = argparse.ArgumentParser()
listen.add_parser(parser.add_subparsers(dest="command"))
args = parser.parse_args(["listen", "--file", {wav!r}, "-o", {out!r}, "--speakers", "off", "--sounds", "off"])
rc = listen.run(args)
import time
print("returned", time.monotonic(), file=sys.stderr, flush=True)  # the stop is over, the file written
sys.exit(rc)
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_stops_cleanly_and_flushes(tmp_path, signame):
    """Ctrl-C, and SIGTERM/SIGHUP (kill, timeout, a closed terminal) alike: last words flushed."""
    import os
    import signal
    import subprocess
    import sys

    wav = tmp_path / "long.wav"
    sf.write(wav, tone(60.0, 16000), 16000)  # played live: Ctrl-C comes long before its end
    out = tmp_path / "t.txt"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = CTRL_C_SCRIPT.format(root=root, wav=str(wav), out=str(out), during_start="", backend="FakeBackend", during_write="")
    errors = tmp_path / "stderr.txt"
    with open(errors, "w", encoding="utf-8") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=err_file, text=True)
        first = proc.stdout.readline()  # the first caption line proves capture and decoding run
        assert first.startswith("[long.wav] w1"), first + errors.read_text(encoding="utf-8")
        proc.send_signal(getattr(signal, signame))
        # read the rest through the same buffered file: readline() may already hold the next lines
        # (communicate() would read the pipe's descriptor directly and miss them)
        rest = proc.stdout.read()
        proc.wait(timeout=60)
    err = errors.read_text(encoding="utf-8")
    assert proc.returncode == 0, err
    assert "flushing the last words" in err
    (line,) = out.read_text(encoding="utf-8").splitlines()
    words = line.split()[1:]
    assert words[0] == "w1" and 1 < len(words) < 600  # stopped early, nothing after w1 lost
    assert words == [f"w{i}" for i in range(1, len(words) + 1)]
    assert len(words) == len((first + rest).split()) - len((first + rest).splitlines())  # printed == written


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("when", ["start", "write"])
def test_signal_during_start_or_write_stops_cleanly_and_writes(tmp_path, signame, when):
    """A Ctrl-C/SIGTERM/SIGHUP while the sources are being opened (or, after a first one, while the
    transcript is written) neither escapes ``run`` with a traceback nor kills the process: it stops,
    and the transcript file is written."""
    import os
    import subprocess
    import sys

    wav = tmp_path / "long.wav"
    sf.write(wav, tone(60.0, 16000), 16000)
    out = tmp_path / "t.txt"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = CTRL_C_SCRIPT.format(root=root, wav=str(wav), out=str(out), backend="FakeBackend",
                                  during_start=signame, during_write=signame if when == "write" else "")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "flushing the last words" in proc.stderr
    assert "transcript written to" in proc.stderr and out.exists()
    words = " ".join(line.split(" ", 1)[1] for line in out.read_text(encoding="utf-8").splitlines()).split()
    assert len(words) < 100 and words == [f"w{i}" for i in range(1, len(words) + 1)]  # stopped at once


def test_stop_requests_keep_an_inherited_ignore():
    """``nohup captioner listen`` (SIGHUP inherited as ignored) keeps running when the terminal closes."""
    import signal

    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        stops = listen._StopRequests().install()
        try:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == stops._handle
        finally:
            stops.restore()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN and signal.getsignal(signal.SIGTERM) != stops._handle
    finally:
        signal.signal(signal.SIGHUP, before)


def stop_s(stderr: str, t0: float) -> float:
    """Seconds from ``t0`` (the parent's ``time.monotonic()`` when it sent the signal; the clock is
    system-wide) to the child's "returned T" line: the stop itself, without the interpreter's exit,
    which a machine with a load average over 10 can stretch by a second or more."""
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("returned ")]
    return float(line.split()[1]) - t0


def test_ctrl_c_returns_within_2_s_when_the_model_hangs(tmp_path):
    """Ctrl-C while the model is stuck in a call: the process exits at the stop deadline with what
    was decoded written (without the bound it waited for the model forever)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    wav = tmp_path / "long.wav"
    sf.write(wav, tone(60.0, 16000), 16000)
    out = tmp_path / "t.txt"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = CTRL_C_SCRIPT.format(root=root, wav=str(wav), out=str(out), during_start="", backend="Hanging", during_write="")
    errors = tmp_path / "stderr.txt"
    with open(errors, "w", encoding="utf-8") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=err_file, text=True)
        printed = proc.stdout.readline() + proc.stdout.readline()  # w1, w2: then the model hangs
        assert printed.split()[1::2] == ["w1", "w2"], printed
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)  # a few lines at most: the pipe cannot fill
        finally:
            took = time.monotonic() - t0
            proc.kill()
        printed += proc.stdout.read()
    err = errors.read_text(encoding="utf-8")
    assert proc.returncode == 0, err
    assert stop_s(err, t0) < listen.DRAIN_S + listen.FLUSH_S + 0.5, err  # the stop bound (2 s), file written
    assert took < listen.DRAIN_S + listen.FLUSH_S + 3.0, (took, err)  # and the interpreter's exit after it
    assert "the model did not finish in time" in err and "transcript written to" in err
    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert line.split()[1:] == ["w1", "w2"] == printed.split()[1::2]  # what was printed is what is written


def test_ctrl_c_while_the_model_loads_is_a_message_not_a_traceback(monkeypatch, tmp_path):
    def loading(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(listen, "_load_backend", loading)
    code, out, err = _run(["listen", "--file", str(tmp_path / "x.wav"), "-o", str(tmp_path / "t.srt")])
    assert code == 130 and "interrupted before captioning started" in err and out == ""
    assert not (tmp_path / "t.srt").exists()
