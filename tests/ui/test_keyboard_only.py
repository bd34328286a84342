"""Issue 39, point 2: the main window and Settings with the keyboard alone, real keys on a real X.

The window (fake engine, tests/ui/atspi_app.py) runs on a private Xvfb display with openbox;
``xdotool`` presses Tab as a user would, the app tells which widget has the focus after each
press, and a screenshot is taken per step (``import``, saved under the test's tmp dir). Required:
Tab reaches every control Tab can reach (the app's own list), in the layout's order (top to
bottom), comes back round to the first one (no focus trap) and Shift+Tab goes back; at each
step the focused control looks different from the same control unfocused (focus visible);
Settings opens with its shortcut and is tabbed through the same way; Escape closes it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from x11_desktop import desktop, missing, read_line, wait_for

pytestmark = [pytest.mark.gui, pytest.mark.skipif(bool(missing("Xvfb", "openbox", "xdotool", "import")),
                                                  reason="needs Xvfb, openbox, xdotool, imagemagick")]

APP = Path(__file__).resolve().parent / "atspi_app.py"
#: Pixels of a control that must change when it gets the focus (a focus ring is a few hundred).
MIN_CHANGED_PX = 20
#: The virtual screen's height (px), x11_desktop's default.
SCREEN_H = 1000


def grab(d, path: Path) -> np.ndarray:
    """A screenshot of the whole screen (RGB array), also saved to ``path``."""
    d.out(["import", "-window", "root", str(path)], check=True)
    from PySide6.QtGui import QImage

    img = QImage(str(path)).convertToFormat(QImage.Format.Format_RGB888)
    arr = np.frombuffer(img.constBits(), np.uint8, img.sizeInBytes()).reshape(img.height(), img.bytesPerLine())
    return arr[:, : img.width() * 3].reshape(img.height(), img.width(), 3).copy()


def changed_px(a: np.ndarray, b: np.ndarray, rect) -> int:
    x, y, w, h = rect
    x0, y0 = max(0, x - 3), max(0, y - 3)  # a focus ring may be drawn just outside the widget
    pa, pb = a[y0:y + h + 3, x0:x + w + 3], b[y0:y + h + 3, x0:x + w + 3]
    return int((np.abs(pa.astype(int) - pb.astype(int)).sum(axis=2) > 40).sum())


def same(a: dict | None, b: dict | None) -> bool:
    """One control (its place on screen moves when a form scrolls)."""
    key = ("name", "class", "window")
    return a is not None and b is not None and all(a[k] == b[k] for k in key)


def tab_through(d, ask, shots: Path, label: str) -> list[dict]:
    """Press Tab until the focus comes back to where it started; each step's focus, screenshot checked."""
    reachable = json.loads(ask("focusables"))
    first = json.loads(ask("focus"))
    before = grab(d, shots / f"{label}-00.png")
    steps, images = [first], [before]
    for i in range(1, len(reachable) + 6):
        d.xdotool("key", "Tab")
        wait_for(lambda: not same(json.loads(ask("focus")), steps[-1]), 5, f"focus to move from {steps[-1]}")
        now = json.loads(ask("focus"))
        steps.append(now)
        images.append(grab(d, shots / f"{label}-{i:02d}.png"))
        if same(now, first):
            break
    else:
        raise AssertionError(f"{label}: Tab never came back to {first['name']}: a focus trap? {steps}")
    names = {f"{s['class']}:{s['name']}" for s in steps}
    assert set(reachable) <= names, (label, sorted(set(reachable) - names))
    # focus visible: each control looks different focused (step i) and unfocused (step i+1)
    invisible = [s["name"] for i, s in enumerate(steps[:-1])
                 if changed_px(images[i], images[i + 1], s["rect"]) < MIN_CHANGED_PX]
    assert invisible == [], (label, invisible)
    # the focused control is on screen (a scrolled form brings it into view)
    hidden = [s["name"] for s in steps if not s["shown"] or s["rect"][1] < 0 or s["rect"][1] + s["rect"][3] > SCREEN_H]
    assert hidden == [], (label, hidden)
    # the layout's order: the focus goes down the window, never back up (until it wraps round);
    # "top" is the control's place in the layout, as if no form were scrolled
    tops = [s["top"] + s["rect"][3] // 2 for s in steps[:-1]]
    backwards = [(steps[i]["name"], steps[i + 1]["name"]) for i in range(len(tops) - 1) if tops[i + 1] < tops[i] - 8]
    assert backwards == [], (label, backwards)
    d.xdotool("key", "shift+Tab")
    wait_for(lambda: same(json.loads(ask("focus")), steps[-2]), 5, "Shift+Tab to go back one")
    return steps


def test_tab_reaches_every_control_with_visible_focus(tmp_path):
    shots = tmp_path / "shots"
    shots.mkdir()
    with desktop(tmp_path) as d:
        app = d.spawn([sys.executable, str(APP), "5"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                      stderr=open(tmp_path / "app.log", "w"), text=True, bufsize=1)

        def ask(what: str) -> str:
            app.stdin.write(what + "\n")
            app.stdin.flush()
            return read_line(app, 30)

        try:
            assert read_line(app, 60) == "ready", (tmp_path / "app.log").read_text()[-3000:]
            d.xdotool("windowactivate", "--sync", ask("winid"))
            wait_for(lambda: json.loads(ask("focus")) is not None, 10, "the window to have the focus")
            main = tab_through(d, ask, shots, "main")
            assert any(s["name"] == "Start" for s in main) and any(s["name"] == "Transcript" for s in main)
            d.xdotool("key", "ctrl+comma")  # Settings…
            wait_for(lambda: (json.loads(ask("focus")) or {}).get("window") == "captioner settings", 10,
                     "Settings to open with the focus")
            settings = tab_through(d, ask, shots, "settings")
            assert any(s["name"] == "Announce finished lines to screen readers" for s in settings)
            d.xdotool("key", "Escape")
            wait_for(lambda: (json.loads(ask("focus")) or {}).get("window") != "captioner settings", 10,
                     "Escape to close Settings")
            print(f"main window: {len(main) - 1} stops, Settings: {len(settings) - 1} stops; screenshots in {shots}")
        finally:
            app.stdin.write("quit\n")
            app.stdin.flush()
            app.wait(15)
