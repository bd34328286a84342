"""Issue 22: the overlay on a real X server with a window manager (Xvfb + openbox), as a user meets it.

* click-through: clicks from ``xdotool`` over the overlay reach the window below it (openbox
  reparented the old overlay into a frame whose input region was the whole rectangle: 0 of 4
  clicks passed), and the overlay never takes the focus;
* stacking: a fullscreen window opened, activated and clicked after the overlay stays *below*
  it (the old "keep above" window went under the fullscreen layer);
* drag mode: a quick press-release leaves the overlay where it is, a real drag moves it by
  exactly the pointer's travel;
* the app's own dialog above the overlay while it has the focus, never the overlay over a
  screen locker; a real RandR mode switch (xrandr) keeps the overlay's relative place.

Each test runs on its own private display (tests/ui/x11_desktop.py) with the overlay and the
other windows as separate xcb processes.
"""

from __future__ import annotations

import re

import pytest

from x11_desktop import desktop, missing, wait_for

pytestmark = [pytest.mark.gui,
              pytest.mark.skipif(bool(missing("Xvfb", "openbox", "xdotool", "xwininfo", "xprop")),
                                 reason=f"needs {', '.join(missing('Xvfb', 'openbox', 'xdotool', 'xwininfo', 'xprop'))}"
                                        " (scripts/apt-packages.txt)")]

#: The overlay's rectangle in these tests: the size the issue measured, over the middle of the counter.
OVERLAY = (352, 600, 896, 110)
COUNTER = (100, 150, 1400, 700)


def _centre(rect):
    x, y, w, h = rect
    return x + w // 2, y + h // 2


@pytest.mark.parametrize("window_manager", [True, False], ids=["openbox", "no-wm"])
def test_click_through_passes_clicks_to_the_window_below(tmp_path, window_manager):
    with desktop(tmp_path, window_manager) as d:
        counter = d.client("counter", *map(str, COUNTER))
        overlay = d.client("overlay", *map(str, OVERLAY), "click-through")
        x, y = _centre(d.geometry(overlay.window))
        toplevel = d.toplevel(overlay.window)
        assert d.top_at(x, y) == toplevel  # the overlay is seen there ...
        d.xdotool("mousemove", "--sync", str(x), str(y))
        for _ in range(4):
            d.xdotool("click", "1")
        # ... and the clicks reach the counter under it
        seen = []
        try:
            wait_for(lambda: seen.append(counter.ask("presses")) or seen[-1] == "4", 3, "4 presses")
        except AssertionError:
            raise AssertionError(f"the window under the overlay got {seen[-1]} of 4 clicks") from None
        assert toplevel == overlay.window, "the window manager framed the overlay"
        assert d.top_at(x, y) == overlay.window  # the clicks raised the counter, not above the overlay
        assert overlay.ask("focus") == "0"
        focused = int(d.xdotool("getwindowfocus").split()[0])
        assert focused != overlay.window


def test_the_overlay_stays_above_a_fullscreen_window(tmp_path):
    with desktop(tmp_path) as d:
        overlay = d.client("overlay", *map(str, OVERLAY), "click-through")
        full = d.client("fullscreen")
        wait_for(lambda: d.geometry(full.window)[2:] == (1600, 1000), 5, "the window to go fullscreen")
        x, y = _centre(d.geometry(overlay.window))
        frame = d.toplevel(full.window)
        assert d.top_at(x, y) == overlay.window, (hex(d.top_at(x, y)), hex(overlay.window), hex(frame))
        d.xdotool("windowactivate", "--sync", str(full.window))  # as alt-tab or a click on the video does
        d.xdotool("mousemove", "--sync", str(x), str(y), "click", "1")
        wait_for(lambda: full.ask("presses") == "1", 5, "the click on the fullscreen window")
        assert d.top_at(x, y) == overlay.window
        assert d.top_at(5, 5) == frame  # elsewhere the fullscreen window is on top


def test_a_quick_click_in_drag_mode_leaves_the_overlay_and_a_drag_moves_it(tmp_path):
    with desktop(tmp_path) as d:
        counter = d.client("counter", *map(str, COUNTER))
        d.xdotool("windowactivate", "--sync", str(counter.window))
        focused = d.xdotool("getwindowfocus").split()[0]
        overlay = d.client("overlay", *map(str, OVERLAY), "drag")
        start = d.geometry(overlay.window)
        x, y = _centre(start)
        d.xdotool("mousemove", "--sync", str(x), str(y), "mousedown", "1", "mouseup", "1")
        d.xdotool("mousemove", "--sync", str(x + 200), str(y - 150))
        d.xdotool("mousemove", "--sync", str(x - 120), str(y - 300))
        # a window manager move begun after the release would follow the pointer now; give it a moment
        with pytest.raises(AssertionError):
            wait_for(lambda: d.geometry(overlay.window) != start, 1.0, "a move")
        assert overlay.ask("focus") == "0"
        d.xdotool("mousemove", "--sync", str(x), str(y), "mousedown", "1")
        for step in range(1, 6):
            d.xdotool("mousemove", "--sync", str(x + 30 * step), str(y - 20 * step))
        d.xdotool("mouseup", "1")
        moved = wait_for(lambda: (g := d.geometry(overlay.window)) != start and g, 5, "the drag")
        wait_for(lambda: d.geometry(overlay.window) == (start[0] + 150, start[1] - 100, start[2], start[3]), 5,
                 f"the overlay to end 150 px right, 100 px up of {start} (at {moved})")
        assert overlay.ask("focus") == "0"
        assert d.xdotool("getwindowfocus").split()[0] == focused  # the window the user works in keeps the focus


def test_the_apps_own_dialog_goes_above_the_overlay_while_it_has_the_focus(tmp_path):
    # the Settings dialog opened over the overlay was covered by it (override-redirect stays above
    # every managed window): its shortcut fields and the profanity options could not be seen
    with desktop(tmp_path) as d:
        counter = d.client("counter", *map(str, COUNTER))
        app = d.client("overlay-app", *map(str, OVERLAY))
        x, y = _centre(d.geometry(app.window))
        assert d.top_at(x, y) == app.window
        dialog = int(app.ask("open-dialog"))
        d.xdotool("windowactivate", "--sync", str(dialog))
        frame = d.toplevel(dialog)
        wait_for(lambda: d.top_at(x, y) == frame, 5, "the dialog above the overlay")
        # the user goes to another application: the captions are on top again
        d.xdotool("windowactivate", "--sync", str(counter.window))
        wait_for(lambda: d.top_at(x, y) == app.window, 5, "the overlay above the dialog again")
        d.xdotool("windowactivate", "--sync", str(dialog))
        wait_for(lambda: d.top_at(x, y) == frame, 5, "the dialog above the overlay again")
        assert app.ask("close-dialog") == "closed"
        wait_for(lambda: d.top_at(x, y) == app.window, 5, "the overlay on top once the dialog is closed")


def test_captions_never_go_over_a_screen_locker_that_takes_the_keyboard_from_the_apps_dialog(tmp_path):
    # the locker is unmanaged too and takes the keyboard without the window manager: the focus
    # leaving the app's dialog for it must not bring the overlay back on top (over the lock screen)
    with desktop(tmp_path) as d:
        app = d.client("overlay-app", *map(str, OVERLAY))
        x, y = _centre(d.geometry(app.window))
        dialog = int(app.ask("open-dialog"))
        d.xdotool("windowactivate", "--sync", str(dialog))
        frame = d.toplevel(dialog)
        wait_for(lambda: d.top_at(x, y) == frame, 5, "the dialog above the overlay")
        locker = d.client("locker")
        assert d.top_at(x, y) == locker.window
        with pytest.raises(AssertionError):
            wait_for(lambda: d.top_at(x, y) != locker.window, 3.0, "something over the locker")


#: A mode Xvfb can switch its output to (modeline timings: any valid ones do on Xvfb).
MODE_720 = ["1280x720", "74.50", "1280", "1344", "1472", "1664", "720", "723", "728", "748", "-hsync", "+vsync"]


@pytest.mark.skipif(bool(missing("xrandr")), reason="needs xrandr (x11-xserver-utils, scripts/apt-packages.txt)")
def test_a_live_resolution_change_keeps_the_overlay_at_the_same_relative_place(tmp_path):
    # a real RandR mode switch, as a user changing the resolution or a projector plugged in does
    with desktop(tmp_path) as d:
        overlay = d.client("overlay", "240", "829", "1120", "110", "click-through")  # the default place
        assert d.geometry(overlay.window) == (240, 829, 1120, 110)
        d.out(["xrandr", "--newmode", *MODE_720], check=True)
        d.out(["xrandr", "--addmode", "screen", "1280x720"], check=True)
        d.out(["xrandr", "--output", "screen", "--mode", "1280x720"], check=True)
        # centred stays centred (x 80), the 61 px gap to the bottom scales with the height (44 px)
        wait_for(lambda: d.geometry(overlay.window) == (80, 566, 1120, 110), 5,
                 f"the overlay at the bottom centre of 1280x720 (at {d.geometry(overlay.window)})")
        d.out(["xrandr", "--output", "screen", "--mode", "1600x1000"], check=True)
        wait_for(lambda: d.geometry(overlay.window) == (240, 829, 1120, 110), 5,
                 f"the overlay back at its place at 1600x1000 (at {d.geometry(overlay.window)})")



def _pixel(d, x, y) -> tuple[int, int, int]:
    """The colour on the screen at ``(x, y)`` (ImageMagick ``import``), 8-bit RGB."""
    text = d.out(["import", "-window", "root", "-crop", f"1x1+{x}+{y}", "-depth", "8", "txt:-"], check=True)
    r, g, b = (int(v) for v in re.search(r"\((\d+),(\d+),(\d+)", text.splitlines()[-1]).groups())
    return r, g, b


def _reddish(rgb: tuple[int, int, int]) -> bool:
    """The notice's rgba(150, 30, 20, 235) as X shows it (over black without a compositor: 138, 28, 18)."""
    r, g, b = rgb
    return r >= 120 and g < 60 and b < 60


@pytest.mark.skipif(bool(missing("import")), reason="needs ImageMagick (scripts/apt-packages.txt)")
def test_without_a_compositor_an_idle_overlay_is_no_black_box(tmp_path):
    # X shows an ARGB window's transparent pixels black when no compositing manager runs (plain
    # openbox, i3, ...): the idle click-through overlay hid the window below under a black box
    with desktop(tmp_path) as d:
        counter = d.client("counter", *map(str, COUNTER))
        idle = d.client("overlay", *map(str, OVERLAY), "click-through", "idle")
        x, y = _centre(d.geometry(idle.window))
        wait_for(lambda: _pixel(d, x, y) == (0x30, 0x70, 0xC0), 5,
                 f"the blue window below showing through the idle overlay (seen {_pixel(d, x, y)})")
        captions = d.client("overlay", *map(str, OVERLAY), "click-through")
        wait_for(lambda: max(_pixel(d, x, y)) < 0x60, 5, f"the caption panel drawn (seen {_pixel(d, x, y)})")
        assert counter.ask("presses") == "0" and captions.ask("focus") == "0"
        notice = d.client("overlay", *map(str, OVERLAY), "click-through", "idle", "notice")
        left, top = d.geometry(notice.window)[:2]
        wait_for(lambda: _reddish(_pixel(d, left + 12, top + 8)), 5,
                 f"a notice on the idle overlay shown whole (seen {_pixel(d, left + 12, top + 8)})")


def _xprop_text(d, window: int, prop: str) -> str:
    """A text property of ``window`` as xprop decodes it (UTF-8 locale: COMPOUND_TEXT and UTF8_STRING alike)."""
    import subprocess

    out = subprocess.run(["xprop", "-id", str(window), "-notype", prop], env={**d.env, "LC_ALL": "C.UTF-8"},
                         capture_output=True, text=True, encoding="utf-8", timeout=30).stdout
    m = re.fullmatch(rf'{prop} = "(.*)"\s*', out, re.S)
    assert m, out
    return m.group(1)


def test_the_window_manager_sees_the_title_the_readme_names(tmp_path):
    """Issue 30.5: a "keep above" rule written for the title the README names matches the overlay,
    whichever property the window manager reads (WM_NAME was "Captions", _NET_WM_NAME
    "Captions — captioner": Qt appended the app's display name to one only)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    named = re.search(r'"keep above" rule for the window titled "([^"]+)"', " ".join(readme.split()))
    assert named, "the README names the overlay's title for a window-manager rule"
    with desktop(tmp_path) as d:
        overlay = d.client("overlay", *map(str, OVERLAY), "click-through")
        titles = {prop: _xprop_text(d, overlay.window, prop) for prop in ("WM_NAME", "_NET_WM_NAME")}
    assert titles == {"WM_NAME": named.group(1), "_NET_WM_NAME": named.group(1)}
