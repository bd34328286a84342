"""Signal emits must not drain ``True``'s refcount (PySide6 6.12 emit() bug -> abort on quit, rc 134)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from captioner.engine.qt_emit import emit

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.gui


def test_emit_keeps_true_refcount_balanced(qtbot):
    from PySide6.QtCore import QObject, Signal

    class Box(QObject):
        value = Signal(object)
        ping = Signal()

    box = Box()
    got = []
    box.value.connect(got.append)
    emit(box.ping)  # the first call may probe the installed PySide6 once
    before = sys.getrefcount(True)
    for i in range(2000):
        emit(box.value, i)
        emit(box.ping)
    after = sys.getrefcount(True)
    assert got[-1] == 1999 and len(got) == 2000
    assert abs(after - before) < 50  # unrepaired PySide6 6.12 would lose 4000 references here


def test_many_emits_then_interpreter_exit_is_clean(tmp_path):
    """The quit crash in miniature: 20000 emits (about 8 minutes of captioning), then exit."""
    script = (
        "from PySide6.QtCore import QCoreApplication, QObject, Signal\n"
        "from captioner.engine.qt_emit import emit\n"
        "app = QCoreApplication([])\n"
        "class Box(QObject):\n"
        "    value = Signal(object)\n"
        "box = Box()\n"
        "box.value.connect(lambda v: None)\n"
        "for i in range(20000):\n"
        "    emit(box.value, i)\n"
        "print('done')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "bool_dealloc" not in proc.stderr
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr[-2000:]


def test_no_raw_signal_emit_in_the_package():
    """Every Python-side emit goes through captioner.engine.qt_emit.emit."""
    offenders = []
    for path in (ROOT / "captioner").rglob("*.py"):
        if path.name == "qt_emit.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\.emit\(", code):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
