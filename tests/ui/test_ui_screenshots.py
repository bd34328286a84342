"""The first-run layout on real X screens of two common sizes: the main window and the overlay
are both on the screen and do not overlap (issue 13). Screenshots land in out/<size>/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QRect

pytestmark = [pytest.mark.slow, pytest.mark.gui]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("import") is None,
                    reason="needs xvfb-run and ImageMagick import")
@pytest.mark.parametrize("size", ["1366x768", "1600x1000"])
def test_first_run_layout_on_a_real_screen(size, tmp_path):
    out = ROOT / "out" / size
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "xcb",
           "CAPTIONER_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run(["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", sys.executable,
                           str(ROOT / "tests" / "ui_screenshots.py"), str(out)],
                          capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    geo = json.loads((out / "geometry.json").read_text(encoding="utf-8"))
    screen, frame, overlay = (QRect(*geo[k]) for k in ("screen", "window_frame", "overlay"))
    assert screen.contains(frame) and screen.contains(overlay)
    assert not frame.intersects(overlay)
    assert "Friday" in geo["overlay_text"]
    for name in ("screen.png", "main_window.png", "overlay.png"):
        assert (out / name).stat().st_size > 1000
