"""Issue 9 item 4: one override moves every file of the app. With CAPTIONER_CONFIG_DIR set, the
settings (an INI file), the single-instance lock and -- through CAPTIONER_DATA_DIR -- the journals
all live under the given folders, and nothing is written to the home directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
from PySide6.QtWidgets import QApplication
app = QApplication([])
from captioner.ui.settings import Keys, Settings
from captioner.ui.single_instance import SingleInstance
from captioner.ui.recorder import TranscriptRecorder
from captioner.events import TextDelta
s = Settings()
s.set(Keys.OVERLAY_LINES, 4)
s.sync()
print("SETTINGS", s.store.fileName())
guard = SingleInstance()
assert guard.acquire()
print("LOCK", guard.lock_path)
rec = TranscriptRecorder()
rec.begin("fake", ["You"])
rec.add(TextDelta("hello", 0.0, 1.0, True, "You"))
print("JOURNAL", rec.journal_path)
rec.end()
guard.release()
print("AGAIN", Settings().get(Keys.OVERLAY_LINES))
"""


def test_one_override_moves_every_file(tmp_path):
    home, config, data = tmp_path / "home", tmp_path / "cfg", tmp_path / "data"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": "offscreen",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "CAPTIONER_CONFIG_DIR": str(config),
        "CAPTIONER_DATA_DIR": str(data),
    }
    (tmp_path / "run").mkdir(mode=0o700)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert Path(out["SETTINGS"]).parent == config and Path(out["SETTINGS"]).is_file()
    assert Path(out["LOCK"]).parent == config
    assert Path(out["JOURNAL"]).is_relative_to(data)
    assert out["AGAIN"] == "4"
    written = [p for p in home.rglob("*") if p.is_file()]
    assert written == [], written


MIGRATE = r"""
from PySide6.QtCore import QSettings
from captioner.ui.settings import APPLICATION, ORGANIZATION, Keys, Settings
old = QSettings(ORGANIZATION, APPLICATION)
old.setValue(Keys.OVERLAY_FONT_SIZE.path, 40)
old.sync()
s = Settings()
print("FILE", s.store.fileName())
print("SIZE", s.get(Keys.OVERLAY_FONT_SIZE))
"""


def test_settings_of_the_native_store_are_carried_over_once(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": str(ROOT), "HOME": str(home),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share")}
    proc = subprocess.run([sys.executable, "-c", MIGRATE], capture_output=True, text=True, timeout=120, env=env,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert out["SIZE"] == "40"
    assert out["FILE"].endswith("captioner.ini") and Path(out["FILE"]).is_relative_to(home)
