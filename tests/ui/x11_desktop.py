"""A private X desktop for the overlay tests: Xvfb, optionally openbox and at-spi, and small X clients.

The overlay's promises (clicks pass through, above fullscreen windows, focus never taken,
screen readers not flooded) are properties of a real X server with a real window manager,
so these tests start their own ``Xvfb`` display (never the suite's), ``openbox`` on it, and
run the app's overlay and the windows under it as separate processes
(``tests/ui/x11_clients.py``) with ``QT_QPA_PLATFORM=xcb``. Clicks come from ``xdotool`` as a
user's would; what is on top comes from ``xwininfo``. Tools missing: the tests skip.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLIENTS = HERE / "x11_clients.py"
#: Screen of the private display (the suite's own xvfb-run size).
SCREEN = "1600x1000x24"


def missing(*tools: str) -> list[str]:
    """The tools of ``tools`` not on PATH."""
    return [t for t in tools if shutil.which(t) is None]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll ``predicate()`` until it returns a true value (returned) or ``timeout`` s pass (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Desktop:
    """One private X display; :meth:`run` and :meth:`client` start processes on it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        self.env = dict(os.environ)
        for var in ("WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS"):
            self.env.pop(var, None)
        runtime = tmp / "runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        self.env.update({"QT_QPA_PLATFORM": "xcb", "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp),
                         "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                         "NO_AT_BRIDGE": "1", "QT_ACCESSIBILITY": "0"})

    def start_x(self) -> None:
        r, w = os.pipe()
        xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", SCREEN, "-nolisten", "tcp"],
                                pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        self.procs.append(xvfb)
        with os.fdopen(r) as f:
            number = f.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start")
        self.env["DISPLAY"] = f":{number}"

    def start_dbus(self) -> None:
        """A private session bus (its service files start at-spi's bus and registry on demand)."""
        r, w = os.pipe()
        self.spawn(["dbus-daemon", "--session", "--nofork", f"--print-address={w}"], pass_fds=(w,),
                   stderr=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as f:
            address = f.readline().strip()
        if not address:
            raise RuntimeError("dbus-daemon did not start")
        self.env["DBUS_SESSION_BUS_ADDRESS"] = address

    def start_openbox(self, tries: int = 3) -> None:
        """Start openbox and wait until it manages the screen (``_NET_SUPPORTING_WM_CHECK``).

        openbox now and then exits at once with status 1 and no message on a just-started Xvfb
        (seen about 1 run in 20 here): it is started again, up to ``tries`` times.
        """
        for attempt in range(tries):
            log = self.tmp / f"openbox-{attempt}.log"
            wm = self.spawn(["openbox", "--sm-disable"], stdout=open(log, "w"), stderr=subprocess.STDOUT)

            def running(wm=wm) -> bool:
                return wm.poll() is not None or "window id" in self.out(["xprop", "-root", "_NET_SUPPORTING_WM_CHECK"])

            wait_for(running, 20, "openbox")
            if wm.poll() is None:
                return
        raise AssertionError(f"openbox exited ({wm.returncode}): {log.read_text()[-2000:]}")

    def spawn(self, argv, **kw) -> subprocess.Popen:
        """Start a process on the display (ended by :meth:`close`)."""
        kw.setdefault("stdout", subprocess.DEVNULL)
        proc = subprocess.Popen(argv, env=self.env, **kw)
        self.procs.append(proc)
        return proc

    def out(self, argv, check: bool = False) -> str:
        """Run a command on the display; its stdout (stderr dropped)."""
        r = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            raise AssertionError(f"{argv}: {r.stderr}")
        return r.stdout

    def client(self, *args: str) -> "Client":
        """Start ``x11_clients.py ARGS`` and wait for its ``ready`` line."""
        proc = self.spawn([sys.executable, str(CLIENTS), *args], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                          stderr=open(self.tmp / f"client-{len(self.procs)}.log", "w"), text=True, bufsize=1)
        return Client(proc)

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)

    # -- questions about the display ----------------------------------------------------------
    def geometry(self, window: int) -> tuple[int, int, int, int]:
        """Absolute ``(x, y, width, height)`` of a window (xwininfo)."""
        text = self.out(["xwininfo", "-id", str(window)], check=True)
        get = {k: int(re.search(rf"{k}:\s+(-?\d+)", text).group(1))
               for k in ("Absolute upper-left X", "Absolute upper-left Y", "Width", "Height")}
        return (get["Absolute upper-left X"], get["Absolute upper-left Y"], get["Width"], get["Height"])

    def parent(self, window: int) -> int:
        """The parent of a window (the root window, or a window manager's frame)."""
        text = self.out(["xwininfo", "-children", "-id", str(window)], check=True)
        return int(re.search(r"Parent window id: (0x[0-9a-f]+)", text).group(1), 16)

    def root(self) -> int:
        text = self.out(["xwininfo", "-root"], check=True)
        return int(re.search(r"Window id: (0x[0-9a-f]+)", text).group(1), 16)

    def toplevel(self, window: int) -> int:
        """The root's child that holds ``window`` (the window itself, or its frame)."""
        root = self.root()
        while (up := self.parent(window)) != root:
            window = up
        return window

    def stacking(self) -> list[tuple[int, tuple[int, int, int, int]]]:
        """The root's mapped children, top-most first, with their geometry (``xwininfo -root -children``)."""
        text = self.out(["xwininfo", "-root", "-children"], check=True)
        found = []
        for m in re.finditer(r"^\s+(0x[0-9a-f]+) .*?(\d+)x(\d+)\+(-?\d+)\+(-?\d+)\s", text, re.M):
            wid = int(m.group(1), 16)
            if "IsViewable" in self.out(["xwininfo", "-id", str(wid)]):
                found.append((wid, (int(m.group(4)), int(m.group(5)), int(m.group(2)), int(m.group(3)))))
        return found

    def top_at(self, x: int, y: int) -> int:
        """The top-most viewable root child covering the point ``(x, y)``."""
        for wid, (wx, wy, ww, wh) in self.stacking():
            if wx <= x < wx + ww and wy <= y < wy + wh:
                return wid
        return 0

    def xdotool(self, *args: str) -> str:
        return self.out(["xdotool", *args], check=True)


def read_line(proc: subprocess.Popen, timeout: float = 30.0) -> str:
    """The next line a process prints (text mode), or AssertionError after ``timeout`` s or at its exit."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"no answer from {proc.args} within {timeout} s")
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"{proc.args} exited ({proc.wait(5)}) without answering")
    return line.strip()


class Client:
    """A started ``x11_clients.py``: its window id, and the lines it prints."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        line = read_line(proc).split()
        if not line or line[0] != "ready":
            raise AssertionError(f"client did not start: {line}")
        self.window = int(line[1])

    def ask(self, question: str) -> str:
        """Send one command line; the client's one-line answer."""
        self.proc.stdin.write(question + "\n")
        self.proc.stdin.flush()
        return read_line(self.proc)


class AtspiListener:
    """Counts the AT-SPI events a screen reader would get (``org.a11y.atspi.Event.*`` signals).

    Registers for them with the at-spi registry, as Orca does (Qt sends events only for what a
    listener registered), and collects them in a thread (jeepney, pure-Python D-Bus).

    Args:
        session_address: the session bus of the desktop (its ``org.a11y.Bus`` gives the a11y bus).
    """

    INTERFACES = ("Object", "Window", "Focus")

    def __init__(self, session_address: str) -> None:
        import threading

        from jeepney import DBusAddress, MatchRule, message_bus, new_method_call
        from jeepney.io.blocking import Proxy, open_dbus_connection

        session = open_dbus_connection(session_address)
        try:
            bus = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus")
            self.address = session.send_and_get_reply(new_method_call(bus, "GetAddress"), timeout=10).body[0]
        finally:
            session.close()
        self.conn = open_dbus_connection(self.address)
        for name in self.INTERFACES:
            Proxy(message_bus, self.conn).AddMatch(MatchRule(type="signal", interface=f"org.a11y.atspi.Event.{name}"))
        registry = DBusAddress("/org/a11y/atspi/registry", bus_name="org.a11y.atspi.Registry",
                               interface="org.a11y.atspi.Registry")
        for kind in ("object:", "window:", "focus:"):
            self.conn.send_and_get_reply(new_method_call(registry, "RegisterEvent", "s", (kind,)), timeout=10)
        self.events: list[tuple[str, str, str]] = []  # (interface member, detail, sender path)
        #: (sender path, message, politeness) of each ``Object:Announcement`` (Qt 6.8+)
        self.announcements: list[tuple[str, str, int]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        from jeepney.low_level import HeaderFields

        while not self._stop.is_set():
            try:
                msg = self.conn.receive(timeout=0.1)
            except TimeoutError:
                continue
            except OSError:
                return
            iface = msg.header.fields.get(HeaderFields.interface, "")
            if not iface.startswith("org.a11y.atspi.Event."):
                continue
            member = msg.header.fields.get(HeaderFields.member, "")
            detail = msg.body[0] if msg.body and isinstance(msg.body[0], str) else ""
            path = msg.header.fields.get(HeaderFields.path, "")
            with self._lock:
                self.events.append((f"{iface.rsplit('.', 1)[1]}:{member}", detail, path))
                if member == "Announcement" and len(msg.body) >= 4:  # (detail, politeness, 0, variant text)
                    data = msg.body[3]
                    self.announcements.append((path, data[1] if isinstance(data, tuple) else str(data),
                                               int(msg.body[1])))

    def count(self) -> int:
        with self._lock:
            return len(self.events)

    def snapshot(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return list(self.events)

    def settle(self, quiet: float = 0.5, timeout: float = 20.0) -> int:
        """Wait until no event came for ``quiet`` s (the app's burst was delivered); the count."""
        last, since = -1, time.monotonic()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            n = self.count()
            if n != last:
                last, since = n, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return n
            time.sleep(0.05)
        return self.count()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.conn.close()


@contextlib.contextmanager
def desktop(tmp: Path, window_manager: bool = True):
    """A private display (with openbox unless ``window_manager`` is False); everything ends on exit."""
    d = Desktop(tmp)
    try:
        d.start_x()
        if window_manager:
            d.start_openbox()
        yield d
    finally:
        d.close()
