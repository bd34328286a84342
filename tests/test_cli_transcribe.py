"""``captioner transcribe`` end to end on the default model, and its bad-input behaviour."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import soundfile as sf
import srt
import webvtt

from captioner.cli import main
from tests.speech import espeak, have_espeak, normalize_words

needs_espeak = pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    d = tmp_path / "data"
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(d))
    return d


@pytest.fixture(scope="module")
def wav(tmp_path_factory):
    if not have_espeak():
        pytest.skip("espeak-ng is not installed")
    return espeak("Good morning. The project meeting begins at ten o clock.", tmp_path_factory.mktemp("cli") / "speech.wav")


def journal_finals(data_dir) -> str:
    files = list((data_dir / "journal").glob("*.jsonl"))
    assert len(files) == 1
    recs = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines() if line.strip()]
    return " ".join(r.get("text", "") for r in recs)


@needs_espeak
@pytest.mark.slow
def test_transcribe_to_srt_on_stdout(wav, capsys, data_dir):
    assert main(["transcribe", str(wav), "--format", "srt"]) == 0
    out = capsys.readouterr().out
    cues = list(srt.parse(out))
    assert cues and all(c.start < c.end for c in cues)
    assert [c.start for c in cues] == sorted(c.start for c in cues)
    words = normalize_words(" ".join(c.content for c in cues))
    assert "morning" in words and "meeting" in words
    assert re.search(r"^00:00:0\d,\d{3} --> 00:00:\d\d,\d{3}$", out, re.M)
    assert "meeting" in normalize_words(journal_finals(data_dir))


@needs_espeak
@pytest.mark.slow
def test_transcribe_vtt_to_file_from_suffix(wav, tmp_path):
    out = tmp_path / "captions.vtt"
    assert main(["transcribe", str(wav), "-o", str(out)]) == 0
    text = out.read_bytes().decode("utf-8")
    assert text.startswith("WEBVTT")
    captions = webvtt.from_string(text)
    assert "meeting" in normalize_words(" ".join(c.text for c in captions))


def test_missing_audio_file_is_a_usage_error(tmp_path, capsys):
    assert main(["transcribe", str(tmp_path / "nope.wav")]) == 2
    assert "audio file not found" in capsys.readouterr().err


def test_corrupt_audio_file_is_a_runtime_error(tmp_path, capsys):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk")
    assert main(["transcribe", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and "bad.wav" in err


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--backend", "audio8", "--model", ".", "--clock", "100"], "80, 120, 160"),
        (["--backend", "audio8", "--model", ".", "--clock", "80", "--delay", "500"], "multiple of 80"),
        (["--backend", "audio8", "--model", "/no/such/checkpoint"], "model not found"),
        (["--backend", "tflite"], "needs --model"),
        (["--language", "zh"], "English-only"),
    ],
)
def test_bad_backend_options_are_usage_errors(tmp_path, capsys, argv, needle):
    wav = tmp_path / "x.wav"
    sf.write(wav, np.zeros(1600, np.float32), 16000)
    assert main(["transcribe", str(wav), *argv]) == 2
    assert needle in capsys.readouterr().err


def test_empty_and_silent_files_give_empty_transcript(tmp_path, capsys):
    empty = tmp_path / "empty.wav"
    sf.write(empty, np.zeros(0, np.float32), 16000)
    silent = tmp_path / "silent.flac"
    sf.write(silent, np.zeros((44100 * 2, 2), np.float32), 44100)
    assert main(["transcribe", str(empty)]) == 0
    assert capsys.readouterr().out.strip() == ""
    assert main(["transcribe", str(silent), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["segments"] == []


def test_unwritable_output_is_refused_before_decoding(tmp_path, capsys):
    wav = tmp_path / "x.wav"
    sf.write(wav, np.zeros(1600, np.float32), 16000)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["transcribe", str(wav), "-o", str(blocker / "out.srt")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["transcribe", str(wav), "-o", str(tmp_path / "missing" / "out.srt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["transcribe", str(wav), "-o", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


@needs_espeak
@pytest.mark.slow
def test_disk_failure_at_save_keeps_text_in_journal(wav, tmp_path, capsys, data_dir, monkeypatch):
    import errno
    import os

    from captioner.transcript import atomic_write

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_write.os, "replace", full_disk)
    assert main(["transcribe", str(wav), "-o", str(tmp_path / "out.srt")]) == 1
    err = capsys.readouterr().err
    assert "disk is full" in err and "Journal: " in err
    assert not (tmp_path / "out.srt").exists() and not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
    assert "meeting" in normalize_words(journal_finals(data_dir))


def test_folder_and_zero_byte_inputs_have_clear_messages(tmp_path, capsys):
    assert main(["transcribe", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    assert main(["transcribe", str(empty)]) == 1
    assert "0 bytes" in capsys.readouterr().err


def test_clock_on_default_backend_warns_and_is_ignored(tmp_path, capsys):
    wav = tmp_path / "x.wav"
    sf.write(wav, np.zeros(1600, np.float32), 16000)
    assert main(["transcribe", str(wav), "--clock", "100"]) == 0
    err = capsys.readouterr().err
    assert "do not apply to the default backend" in err and "no speech was recognised" in err


def test_over_full_scale_float_file_is_scaled_not_clipped(tmp_path, capsys, monkeypatch):
    from captioner.commands import transcribe as cmd

    seen = {}
    real = cmd.StreamingSession._push  # where every block enters a session, read ahead or fed

    def spy(self, block):
        seen["peak"] = max(seen.get("peak", 0.0), float(np.max(np.abs(block)))) if len(block) else seen.get("peak", 0.0)
        return real(self, block)

    monkeypatch.setattr(cmd.StreamingSession, "_push", spy)
    wav = tmp_path / "loud.wav"
    t = np.arange(16000) / 16000
    sf.write(wav, (800.0 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000, subtype="FLOAT")
    assert main(["transcribe", str(wav)]) == 0
    assert "exceeds full scale" in capsys.readouterr().err
    assert 0.9 < seen["peak"] <= 1.0


def test_file_transcription_decodes_each_line_once_and_realtime_keeps_partials(monkeypatch):
    """``transcribe FILE`` runs as fast as it can and nobody watches partials: the default
    model decodes each line once (deterministic, the one-pass WER). ``--realtime`` behaves
    like a live source, partial re-decodes included."""
    import captioner.commands.backend_options as bo

    seen = []
    monkeypatch.setattr(bo, "load_backend", lambda kind, model, **kw: seen.append((kind, kw)) or object())
    for argv, partials in ((["transcribe", "x.wav"], False), (["transcribe", "x.wav", "--realtime"], None)):
        from captioner.cli import build_parser

        args = build_parser().parse_args(argv)
        assert bo.check_backend_arguments(args) is None
        bo.open_backend(args)
        assert seen[-1][0] == "default"
        assert seen[-1][1].get("partials") is partials


def test_ctrl_c_while_the_commands_import_exits_130_without_a_traceback(tmp_path, capsys, monkeypatch):
    """Ctrl-C in the first ~0.3 s lands while ``build_parser`` imports the commands' modules:
    it printed Python's traceback (2026-12-06, a newcomer's check)."""
    import captioner.cli as cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert main(["transcribe", str(tmp_path / "a.wav"), "-o", str(tmp_path / "a.srt")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "captioner: interrupted"
    assert not (tmp_path / "a.srt").exists()


def test_ctrl_c_while_the_model_loads_exits_130_without_a_traceback(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the default model's first-use preparation (several seconds inside
    ONNX Runtime) raises KeyboardInterrupt out of open_backend: a clear line, exit 130."""
    from captioner.commands import transcribe

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(transcribe, "open_backend", interrupted)
    audio = tmp_path / "a.wav"
    sf.write(audio, np.zeros(1600, np.float32), 16000)
    assert main(["transcribe", str(audio), "-o", str(tmp_path / "a.srt")]) == 130
    err = capsys.readouterr().err
    assert "interrupted before transcribing started" in err and "Traceback" not in err
    assert not (tmp_path / "a.srt").exists()
