"""Issue 24: Start/Stop, Show/hide overlay and Click-through work while another application has focus.

A real X server (Xvfb) with a window manager (openbox) and an xterm that has the focus; the
app (``global_shortcut_app.py``: CaptionerApp on the xcb platform, fake engine) runs in a
child process. ``xdotool key`` types each shortcut as a real keyboard would (XTEST): the
app acts and the xterm keeps the focus. A combination another client grabbed first (a
python-xlib helper here) is reported by the app, not left silently dead.

The parse/keymap tables and the binder's messages are tested without a display below.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import x11_desktop  # tests/ui is on sys.path (pytest's rootdir insertion), as in test_overlay_x11.py

from captioner.ui.global_shortcuts.keys import ComboError, parse, portal_trigger, windows_vk, x11_keysym_name

pytestmark = pytest.mark.gui

HERE = Path(__file__).resolve().parent
TOOLS = ("Xvfb", "openbox", "xdotool", "xterm", "xprop")
missing_tools = [t for t in TOOLS if shutil.which(t) is None]
try:
    import Xlib.display  # noqa: F401
except ImportError:  # pragma: no cover - python-xlib is a Linux dependency of captioner
    missing_tools.append("python-xlib")
needs_x = pytest.mark.skipif(bool(missing_tools) or not sys.platform.startswith("linux"),
                             reason=f"needs an X server and tools: missing {', '.join(missing_tools) or 'Linux'}")


def _wait(predicate, timeout: float, what: str, poll=None):
    """Poll ``predicate`` until it returns a true value or ``timeout`` s pass (then fail naming ``what``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if poll is not None:
            poll()
        else:
            time.sleep(0.05)  # polling with a deadline, not synchronisation
    raise AssertionError(f"timed out waiting for {what}")


class Desktop(x11_desktop.Desktop):
    """Xvfb + openbox (started again if it exits at once, as it now and then does on a just-started
    Xvfb: :meth:`tests.ui.x11_desktop.Desktop.start_openbox`) + an xterm holding the focus."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        try:
            self.start_x()
            self.display = self.env["DISPLAY"]
            self.start_openbox()
        except BaseException:
            self.close()  # the fixture never yields: nothing else would end Xvfb and openbox
            raise

    def xdotool(self, *args, check=True) -> str | None:
        out = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            if check:
                raise AssertionError(f"xdotool {' '.join(args)}: {out.stderr}")
            return None
        return out.stdout.strip()

    def focused_name(self) -> str:
        return self.xdotool("getwindowfocus", "getwindowname", check=False) or ""

    def start_xterm(self, title: str) -> None:
        # `cat` just keeps the terminal open (it waits on the terminal's input)
        self.procs.append(subprocess.Popen(["xterm", "-title", title, "-e", "cat"], env=self.env,
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wid = _wait(lambda: self.xdotool("search", "--name", f"^{title}$", check=False), 15, "the xterm window")
        self.xdotool("windowactivate", "--sync", wid.split()[0], check=False)
        _wait(lambda: self.focused_name() == title, 10, f"{title} to have the focus")


class AppProcess:
    """``global_shortcut_app.py`` in a child process; its stdout lines land in a queue."""

    def __init__(self, desktop: Desktop, work: Path) -> None:
        env = {**desktop.env, "QT_QPA_PLATFORM": "xcb", "PYTHONPATH": os.pathsep.join(
            [str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen([sys.executable, str(HERE / "global_shortcut_app.py"), str(work)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append), daemon=True).start()

    @staticmethod
    def _pump(stream, put) -> None:
        for line in stream:
            put(line.rstrip("\n"))

    def expect(self, prefix: str, timeout: float = 20.0) -> str:
        """The next line starting with ``prefix`` (earlier other lines are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and self.lines.empty():
                raise AssertionError(f"no {prefix!r} line from the app; stderr:\n" + "\n".join(self.err[-40:]))
            try:
                line = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line.startswith(prefix):
                return line[len(prefix):].strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(15)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def desktop(tmp_path):
    d = Desktop(tmp_path)
    yield d
    d.close()


@needs_x
def test_each_shortcut_acts_while_another_window_has_focus(desktop, tmp_path):
    app = AppProcess(desktop, tmp_path)
    try:
        ready = json.loads(app.expect("ready"))
        assert ready["mechanism"] == "X11 key grabs" and ready["problems"] == {}, ready
        assert ready["overlay"] is True
        desktop.start_xterm("focus-keeper")

        desktop.xdotool("key", "ctrl+shift+o")
        assert app.expect("overlay") == "false"
        assert desktop.focused_name() == "focus-keeper"
        desktop.xdotool("key", "ctrl+shift+o")
        assert app.expect("overlay") == "true"

        desktop.xdotool("key", "ctrl+shift+t")
        assert app.expect("click_through") == "true"
        assert desktop.focused_name() == "focus-keeper"

        desktop.xdotool("key", "ctrl+shift+s")
        assert app.expect("state") in ("loading", "running")
        assert desktop.focused_name() == "focus-keeper"
        desktop.xdotool("key", "ctrl+shift+s")
        while app.expect("state") != "idle":  # stopping, then idle (expect fails after its timeout)
            pass
        # NumLock and CapsLock on: X compares modifiers exactly, so those variants are grabbed too
        desktop.xdotool("key", "Num_Lock", "Caps_Lock")
        desktop.xdotool("key", "ctrl+shift+t")
        assert app.expect("click_through") == "false"
        desktop.xdotool("key", "Num_Lock", "Caps_Lock")
        assert desktop.focused_name() == "focus-keeper"
    finally:
        app.close()
    assert app.proc.returncode == 0, "\n".join(app.err[-40:])


@needs_x
def test_a_shortcut_another_program_holds_is_reported(desktop, tmp_path):
    from Xlib import X, XK
    from Xlib import display as xdisplay

    other = xdisplay.Display(desktop.display)  # "another program": grabs Ctrl+Shift+T first
    keycode = other.keysym_to_keycode(XK.string_to_keysym("t"))
    other.screen().root.grab_key(keycode, X.ControlMask | X.ShiftMask, False, X.GrabModeAsync, X.GrabModeAsync)
    other.sync()
    app = AppProcess(desktop, tmp_path)
    try:
        ready = json.loads(app.expect("ready"))
        assert set(ready["problems"]) == {"toggle_click_through"}, ready
        assert "Ctrl+Shift+T is already taken by another program" in ready["problems"]["toggle_click_through"]
        shown = " ".join(ready["messages"])
        assert "Ctrl+Shift+T is already taken by another program" in shown and "Settings" in shown
        assert "even in captioner" in shown  # the holder gets the key whichever window has the focus
        # the other two still work desktop-wide
        desktop.start_xterm("focus-keeper")
        desktop.xdotool("key", "ctrl+shift+o")
        assert app.expect("overlay") == "false"
        # and the held one goes to the program that holds it
        desktop.xdotool("key", "ctrl+shift+t")
        def other_key():
            while other.pending_events():
                ev = other.next_event()
                if ev.type == X.KeyPress:
                    return ev
            return None

        assert _wait(other_key, 10, "the other client's key press").detail == keycode
    finally:
        app.close()
        other.close()


# -- without a display --------------------------------------------------------------------------
def test_parse_and_platform_codes():
    c = parse("Ctrl+Shift+S")
    assert (c.modifiers, c.key, c.text) == (("Ctrl", "Shift"), "S", "Ctrl+Shift+S")
    assert parse("Shift+Ctrl+s").modifiers == ("Ctrl", "Shift")
    assert x11_keysym_name(c) == "s" and windows_vk(c) == ord("S") and portal_trigger(c) == "CTRL+SHIFT+s"
    assert x11_keysym_name(parse("Meta+PgUp")) == "Prior" and portal_trigger(parse("Meta+F9")) == "LOGO+F9"
    assert windows_vk(parse("Alt+F9")) == 0x78 and parse("Ctrl++").key == "+"
    for bad in ("", "Ctrl+K, Ctrl+C", "Hyper+S", "Ctrl+"):
        with pytest.raises(ComboError):
            parse(bad)


def test_binder_reports_problems_and_routes_activations(settings, qtbot):
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QWidget

    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.messages import MessageBar
    from captioner.ui.shortcuts import ShortcutBinder

    class Fake:
        name = "fake grabs"

        def __init__(self):
            self.bound = {}

        def bind(self, combos, activated, problem):
            self.bound, self.activated = combos, activated
            return {a: f"{c.text} is already taken by another program" for a, c in combos.items() if c.key == "T"}

        def fileno(self):
            return None

        def dispatch(self):
            pass

        def close(self):
            self.bound = {}

    host = QWidget()
    qtbot.addWidget(host)
    actions = {a: QAction(a, host, checkable=a != "start_stop")
               for a in ("start_stop", "toggle_overlay", "toggle_click_through")}
    bar = MessageBar()
    qtbot.addWidget(bar)
    backend = Fake()
    binder = ShortcutBinder(settings, actions, [], bar, GlobalShortcuts(backend))
    binder.apply()
    assert {a: c.text for a, c in backend.bound.items()} == {
        "start_stop": "Ctrl+Shift+S", "toggle_overlay": "Ctrl+Shift+O", "toggle_click_through": "Ctrl+Shift+T"}
    assert actions["start_stop"].shortcut().toString() == "Ctrl+Shift+S"  # the in-app shortcut stays
    assert set(binder.global_problems) == {"toggle_click_through"}
    assert any("Ctrl+Shift+T is already taken" in text for text, _s, _c in bar.messages())
    assert binder.status() == "These shortcuts work from any application (fake grabs)."
    import threading

    seen = []
    actions["toggle_overlay"].toggled.connect(lambda on: seen.append(threading.current_thread()))
    with qtbot.waitSignal(actions["toggle_overlay"].toggled):
        # the backend's callback from its own thread (portal, Windows) -> the action, in the GUI thread
        threading.Thread(target=backend.activated, args=("toggle_overlay",)).start()
    assert actions["toggle_overlay"].isChecked() and seen == [threading.main_thread()]
    binder.close()
    assert backend.bound == {}


def test_no_mechanism_is_said(settings, qtbot):
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QWidget

    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.messages import MessageBar
    from captioner.ui.shortcuts import ShortcutBinder

    host = QWidget()
    qtbot.addWidget(host)
    actions = {a: QAction(a, host) for a in ("start_stop", "toggle_overlay", "toggle_click_through")}
    bar = MessageBar()
    qtbot.addWidget(bar)
    none = GlobalShortcuts(None, note="Shortcuts work only while a captioner window is active here: no portal")
    binder = ShortcutBinder(settings, actions, [], bar, none)
    binder.apply()
    assert binder.status().endswith("no portal")
    assert any("no portal" in text for text, _s, _c in bar.messages())


def test_the_mechanism_follows_the_platform():
    from captioner.ui.global_shortcuts import platform_backend

    assert platform_backend("offscreen", env={}) == (None, "")  # no desktop: nothing to grab, nothing to say
    backend, note = platform_backend("xcb", env={"DISPLAY": ":12345"})  # no such X server
    assert backend is None and note.startswith("Shortcuts work only while a captioner window is active")
    backend, note = platform_backend("wayland", env={})
    assert type(backend).__name__ == "PortalBackend" and note == ""
    # the Windows and macOS modules import everywhere (they load their DLLs only when used)
    import captioner.ui.global_shortcuts.macos  # noqa: F401
    import captioner.ui.global_shortcuts.windows  # noqa: F401


class RecordingBackend:
    """A global mechanism that only records what is bound."""

    name = "recording"

    def __init__(self):
        self.bound: dict = {}

    def bind(self, combos, activated, problem):
        self.bound = {a: c.text for a, c in combos.items()}
        return {}

    def fileno(self):
        return None

    def dispatch(self):
        pass

    def close(self):
        self.bound = {}


def test_settings_dialog_releases_the_keys_while_open_and_rebinds_after(settings, qtbot, tmp_path, monkeypatch):
    """A grabbed Ctrl+Shift+S could not be typed into the dialog's key field: released while it is open."""
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QApplication

    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings import Keys
    from captioner.ui.settings_dialog import SettingsDialog

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    gui = CaptionerApp(settings)
    qtbot.addWidget(gui.window)
    qtbot.addWidget(gui.overlay)
    backend = RecordingBackend()
    gui.window.shortcuts.global_shortcuts.backend = backend
    gui.window.apply_shortcuts()
    assert backend.bound["start_stop"] == "Ctrl+Shift+S"
    try:
        gui.open_settings()
        dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible())
        assert backend.bound == {}
        assert dialog.findChild(type(dialog.error_label), "shortcut-status").text() == (
            "These shortcuts work from any application (recording).")
        dialog.shortcut_start.setKeySequence(QKeySequence("Ctrl+Alt+C"))
        dialog.accept()
        assert backend.bound["start_stop"] == "Ctrl+Alt+C" and settings.get(Keys.SHORTCUT_START_STOP) == "Ctrl+Alt+C"
    finally:
        gui.shutdown()
    assert backend.bound == {}  # released on quit


def test_apply_in_the_open_settings_dialog_keeps_the_keys_released(settings, qtbot, tmp_path, monkeypatch):
    """Apply (not OK) used to grab the desktop-wide keys again while the dialog stayed open: a
    shortcut typed into a key field then ran its action (Ctrl+Shift+O hid the overlay) instead
    of being recorded. The new keys are bound in the app at once and desktop-wide on close."""
    from PySide6.QtGui import QKeySequence
    from PySide6.QtWidgets import QApplication

    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings_dialog import SettingsDialog

    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "data"))
    gui = CaptionerApp(settings)
    qtbot.addWidget(gui.window)
    qtbot.addWidget(gui.overlay)
    backend = RecordingBackend()
    gui.window.shortcuts.global_shortcuts.backend = backend
    gui.window.apply_shortcuts()
    try:
        gui.open_settings()
        dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible())
        dialog.shortcut_start.setKeySequence(QKeySequence("Ctrl+Alt+C"))
        assert dialog.apply()
        assert backend.bound == {}  # still open: still released
        assert gui.window.shortcuts.actions["start_stop"].shortcut().toString() == "Ctrl+Alt+C"  # in-app at once
        dialog.reject()  # Cancel after Apply keeps what was applied
        assert backend.bound["start_stop"] == "Ctrl+Alt+C"
        gui.open_settings()  # and a second opening releases them again
        assert backend.bound == {}
        next(w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible()).accept()
        assert backend.bound["start_stop"] == "Ctrl+Alt+C"
    finally:
        gui.shutdown()


def test_a_taken_key_is_not_said_to_work_inside_captioner(settings, qtbot):
    """A key another program holds goes to that program even while captioner has the focus (X11
    delivers a grabbed key to the grabbing client; RegisterHotKey and Carbon likewise), so the
    message must not say it "works only while a captioner window is active"; and no "…."."""
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QWidget

    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.messages import MessageBar
    from captioner.ui.shortcuts import ShortcutBinder

    class Taken(RecordingBackend):
        def bind(self, combos, activated, problem):
            return {a: f"{c.text} is already taken by another program" for a, c in combos.items() if c.key == "T"}

    host = QWidget()
    qtbot.addWidget(host)
    actions = {a: QAction(a, host) for a in ("start_stop", "toggle_overlay", "toggle_click_through")}
    bar = MessageBar()
    qtbot.addWidget(bar)
    binder = ShortcutBinder(settings, actions, [], bar, GlobalShortcuts(Taken()))
    binder.apply()
    (text,) = [t for t, _s, code in bar.messages() if code == "global_shortcuts"]
    assert "Ctrl+Shift+T is already taken by another program" in text
    assert "only while a captioner window is active" not in text and "from other applications" in text
    assert "Settings…" in text and "…." not in text and ".." not in text


@needs_x
def test_a_key_taken_after_a_keyboard_mapping_change_is_reported(desktop):
    """A layout switch moves a shortcut's key to another keycode: the backend grabs it again
    there, and when another client already holds that keycode the user is told (it used to go
    silently dead)."""
    from Xlib import X, XK
    from Xlib import display as xdisplay

    from captioner.ui.global_shortcuts.keys import parse
    from captioner.ui.global_shortcuts.x11 import X11Backend

    backend = X11Backend(desktop.display)
    other = xdisplay.Display(desktop.display)
    problems: list[str] = []
    try:
        assert backend.bind({"start_stop": parse("Ctrl+Shift+S")}, lambda _a: None, problems.append) == {}
        s_code = other.keysym_to_keycode(XK.string_to_keysym("s"))
        info = other.display.info
        first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
        mapping = other.get_keyboard_mapping(first, count)
        free = next(first + i for i, syms in enumerate(mapping) if not any(syms) and first + i > s_code)
        # "another program" holds Ctrl+Shift on the keycode where "s" is about to move
        other.screen().root.grab_key(free, X.ControlMask | X.ShiftMask, False, X.GrabModeAsync, X.GrabModeAsync)
        old_s = list(mapping[s_code - first])
        other.change_keyboard_mapping(s_code, [[0] * len(old_s)])
        other.change_keyboard_mapping(free, [old_s])  # the layout switch: "s" is now on `free`
        other.sync()
        taken = _wait(lambda: [p for p in problems if "already taken" in p], 10, "the problem report",
                      poll=backend.dispatch)
        assert "Ctrl+Shift+S is already taken by another program" in taken[0] and "keyboard layout" in taken[0]
    finally:
        backend.close()
        other.close()


@pytest.mark.parametrize("text", ["S", "Shift+S", "Space", "Shift+1", "Return", "Left"])
def test_a_key_that_types_is_never_grabbed_desktop_wide(settings, qtbot, text):
    """Start/Stop on plain "S" (the dialog records whatever is pressed) used to be grabbed on the
    root window: no application could get an "s" typed any more. Such a key is refused in the
    dialog and, from a hand-edited settings file, not grabbed but reported."""
    from PySide6.QtGui import QKeySequence

    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.settings_dialog import SettingsDialog

    backend = RecordingBackend()
    problems = GlobalShortcuts(backend).bind({"start_stop": text, "toggle_overlay": "F9"})
    assert backend.bound == {"toggle_overlay": "F9"}  # a function key alone is fine
    assert "Ctrl, Alt or the Super key" in problems["start_stop"] and text in problems["start_stop"]
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.shortcut_start.setKeySequence(QKeySequence(text))
    assert not dialog.apply()
    assert "Ctrl, Alt or the Super key" in dialog.error_label.text()
    dialog.shortcut_start.setKeySequence(QKeySequence("Ctrl+Alt+S"))
    assert dialog.apply()
