"""Issue 39, point 3: the app follows the system's scaling and font size without clipping.

The main window and Settings run in a child process on a private Xvfb display the size of a
2560 x 1600 HiDPI screen (tests/ui/scaled_layout_app.py), at ``QT_SCALE_FACTOR=2`` and, apart,
with a font twice the platform's ("200 %"). Every shown text control must be at least as large
as the size Qt computes for its text, nothing may reach past its window's edge (a scrolled form
excepted), and each window must fit on the screen. Screenshots of each case are kept under the
test's tmp dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from x11_desktop import missing

pytestmark = [pytest.mark.gui, pytest.mark.skipif(bool(missing("Xvfb")), reason="needs Xvfb")]

APP = Path(__file__).resolve().parent / "scaled_layout_app.py"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def display():
    r, w = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "2560x1600x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()
    try:
        yield f":{number}"
    finally:
        xvfb.terminate()
        xvfb.wait(10)


@pytest.mark.parametrize("scale, font", [("2", 1.0), ("1", 2.0)], ids=["scale-2", "font-200"])
def test_large_scale_and_font_lay_out_without_clipping(display, tmp_path, scale, font):
    env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "QT_SCALE_FACTOR")}
    env.update(DISPLAY=display, QT_QPA_PLATFORM="xcb", QT_SCALE_FACTOR=scale, HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"), CAPTIONER_DATA_DIR=str(tmp_path / "data"),
               CAPTIONER_SHOTS=str(tmp_path / "shot"), NO_AT_BRIDGE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, str(APP), str(font)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    if scale == "2":
        assert report["screen"][0] <= 1280  # the scale took: 2560 device px are 1280 logical px
    else:
        assert report["font_pt"] >= 14  # twice the platform's (about 9-10 pt)
    assert report["clipped"] == {"main": [], "settings": []}, report
    sw, sh = report["screen"]
    for name, (w, h) in report["windows"].items():
        assert w <= sw and h <= sh, (name, report)
    # the main window opens as wide as its rows need (a 200 % font makes them wider than the default)
    assert report["windows"]["main"][0] >= min(report["hints"]["main"][0], 0.9 * sw), report
    assert (tmp_path / "shot-main.png").is_file() and (tmp_path / "shot-settings.png").is_file()
