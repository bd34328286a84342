"""Where ``-o`` points is written *to*, never replaced (issue 9 item 3).

A symlink into a synced folder keeps being a link and its real file gets the transcript
(atomically, beside the real target); a named pipe, ``/dev/full`` and ``/dev/stdout`` are
written in place like a shell redirection; the full-disk message stays clear.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from captioner.commands.backend_options import check_output_path
from captioner.events import TextDelta
from captioner.transcript.model import Transcript
from captioner.transcript.atomic_write import TranscriptWriteError
from captioner.transcript.writers import format_transcript, write_transcript

ROOT = Path(__file__).resolve().parents[1]


def build() -> Transcript:
    t = Transcript()
    t.add(TextDelta("Friday works for me.", 0.5, 2.0, True, "Meeting"))
    return t


def test_symlink_is_followed_and_kept(tmp_path):
    synced = tmp_path / "Sync"
    synced.mkdir()
    real = synced / "notes.srt"
    real.write_text("old content", encoding="utf-8")
    os.chmod(real, 0o600)
    link = tmp_path / "notes.srt"
    link.symlink_to(real)
    written = write_transcript(build(), link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert written == real
    assert real.read_text(encoding="utf-8") == format_transcript(build(), "srt")
    assert stat.S_IMODE(real.stat().st_mode) == 0o600  # the user's permissions survive
    assert sorted(p.name for p in synced.iterdir()) == ["notes.srt"]  # temp file was beside the target, and is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Sync", "notes.srt"]


def test_dangling_symlink_creates_its_target(tmp_path):
    (tmp_path / "Sync").mkdir()
    link = tmp_path / "talk.vtt"
    link.symlink_to(tmp_path / "Sync" / "talk.vtt")
    write_transcript(build(), link)
    assert link.is_symlink()
    assert (tmp_path / "Sync" / "talk.vtt").read_text(encoding="utf-8").startswith("WEBVTT")


def test_named_pipe_receives_the_transcript(tmp_path):
    fifo = tmp_path / "captions.txt"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_transcript(build(), fifo)
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert got == [format_transcript(build(), "txt").encode("utf-8")]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a pipe


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_dev_full_keeps_the_device_and_says_disk_full():
    before = os.lstat("/dev/full")
    with pytest.raises(TranscriptWriteError, match="disk is full") as info:
        write_transcript(build(), "/dev/full", "srt")
    assert "journal" in str(info.value)
    after = os.lstat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_check_output_path_accepts_pipes_devices_and_links(tmp_path):
    os.mkfifo(tmp_path / "p")
    assert check_output_path(str(tmp_path / "p")) is None
    assert check_output_path("/dev/null") is None
    (tmp_path / "link").symlink_to(tmp_path / "missing-dir" / "x.srt")
    assert "does not exist" in check_output_path(str(tmp_path / "link"))


def test_cli_writes_through_dev_stdout_and_symlink(tmp_path):
    """The CLI end to end with the toy backend-free path: `captioner recover` writes to /dev/stdout."""
    from captioner.transcript.journal import Journal

    data = tmp_path / "data"
    env = {**os.environ, "CAPTIONER_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    j = Journal.create(directory=data / "journal", sources=["Meeting"], backend="test")
    j.append(TextDelta("Friday works for me.", 0.5, 2.0, True, "Meeting"))
    out_file = tmp_path / "stdout.srt"
    with open(out_file, "wb") as fh:  # /dev/stdout redirected to a file: written in place
        proc = subprocess.run([sys.executable, "-m", "captioner", "recover", str(j.path), "-o", "/dev/stdout",
                               "--format", "srt"], stdout=fh, stderr=subprocess.PIPE, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    assert "Friday works for me." in out_file.read_text(encoding="utf-8")
    assert out_file.read_text(encoding="utf-8").startswith("1\n")
