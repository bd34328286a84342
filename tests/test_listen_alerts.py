"""Issue 49: ``captioner listen --alert WORD`` prints an alert line for each time WORD is said by a
source other than the microphone, and adds the words to the hotwords."""

from __future__ import annotations

import argparse
import io
import types

import soundfile as sf

from captioner.asr.base import StepResult
from captioner.commands import alert_cli, listen
from captioner.events import TextDelta
from tests.audio_fakes import FakeBackend, tone

#: What the fake model "hears", one piece per loud 100 ms chunk (a token model's pieces).
SCRIPT = ["Hello", " Mar", "ia,", " this", " is", " Mariana", " for", " Maria's", " team", " maria"]


class ScriptedBackend(FakeBackend):
    """The fake backend, but its finals are the pieces of :data:`SCRIPT` in order."""

    def step(self, rows):
        out = []
        for result in super().step(rows):
            k = result.state["k"]
            events = [TextDelta(SCRIPT[k - 1] if k <= len(SCRIPT) else " and", e.start, e.end) for e in result.events]
            out.append(StepResult(result.state, events))
        return out


def _run(argv, monkeypatch):
    backend = ScriptedBackend(batch_size=2)
    monkeypatch.setattr(listen, "_load_backend", lambda args: backend)
    parser = argparse.ArgumentParser(prog="captioner")
    sub = listen.add_parser(parser.add_subparsers(dest="command"))
    # tones are no voices and no sounds of interest: no speaker or sound model
    extra = ["--speakers", "off"] + (["--sounds", "off"] if "--sounds" in sub._option_string_actions else [])
    args = parser.parse_args([*argv, *extra])
    out, err = io.StringIO(), io.StringIO()
    return listen.run(args, out, err), out.getvalue(), err.getvalue(), args


def test_listen_alert_prints_a_line_per_said_name(tmp_path, monkeypatch):
    wav = tmp_path / "meeting.wav"
    sf.write(wav, tone(1.0, 16000), 16000)  # ten loud chunks: the ten pieces of SCRIPT
    code, out, err, args = _run(["listen", "--file", str(wav), "--fast", "--alert", "Maria", "--alert", "Tom",
                                 "--journal-dir", str(tmp_path / "journal")], monkeypatch)
    assert code == 0, err
    alerts = [line for line in out.splitlines() if line.startswith("ALERT:")]
    # "Mar"+"ia," and "Maria's" and the last "maria" (held, then settled at the end); never "Mariana"
    assert alerts == ['ALERT: "Maria" said by meeting.wav at 00:00:00'] * 3
    lines = out.splitlines()
    assert lines.index(alerts[0]) > next(i for i, line in enumerate(lines) if "Mar" in line)  # after its text
    assert args.alert_words == ("Maria", "Tom") and args.hotwords == ("Maria", "Tom")


def test_alert_words_join_the_hotwords_and_bad_ones_are_usage_errors(monkeypatch):
    ns = argparse.Namespace(alert=["maria", "Tom"], backend="remote", hotwords=("Maria", "Siobhan"), model=None)
    assert alert_cli.check_arguments(ns) is None
    assert ns.hotwords == ("Maria", "Siobhan", "Tom") and ns.alert_words == ("maria", "Tom")
    ns = argparse.Namespace(alert=["Maria"], backend="audio8", hotwords=(), model=None)
    assert alert_cli.check_arguments(ns) is None and ns.hotwords == ()  # no biasing there; it still alerts
    assert "contains '#'" in alert_cli.check_arguments(argparse.Namespace(alert=["C#"], backend="remote"))
    code, _, err, _ = _run(["listen", "--file", "x.wav", "--alert", "C#"], monkeypatch)
    assert code == 2 and "--alert" in err


def test_the_microphone_never_alerts():
    sources = [types.SimpleNamespace(kind="microphone", label="Me"), types.SimpleNamespace(kind="system", label="Call")]
    out = io.StringIO()
    printer = alert_cli.printer(argparse.Namespace(alert_words=("Maria",)), sources, out)
    printer.feed(TextDelta("Maria, hi.", 1.0, 2.0, True, "Me"))
    printer.feed(TextDelta("Maria, hi.", 1.0, 2.0, True, "Call", speaker="Speaker 1"))
    printer.feed(TextDelta("Maria", 3.0, 4.0, False, "Call"))
    printer.finish()
    assert out.getvalue().splitlines() == ['ALERT: "Maria" said by Speaker 1 at 00:00:01']
    assert alert_cli.printer(argparse.Namespace(alert_words=()), sources, out) is None


def test_a_held_name_is_printed_by_the_wait_loop():
    now = [0.0]
    out = io.StringIO()
    cleared = []
    printer = alert_cli.AlertPrinter(["Maria"], [], out, clock=lambda: now[0], before=lambda: cleared.append(1))
    printer.feed(TextDelta(" over to Maria", 5.0, 6.0, True, "Meeting"))
    printer.tick()
    assert out.getvalue() == ""
    now[0] = 0.7
    printer.tick()
    assert out.getvalue() == 'ALERT: "Maria" said by Meeting at 00:00:05\n' and cleared == [1]
