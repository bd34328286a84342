"""Issue 24, Wayland: the GlobalShortcuts portal backend against a fake portal on a private D-Bus bus.

No compositor here offers the real portal, so a small jeepney service plays
``org.freedesktop.portal.Desktop`` (CreateSession / BindShortcuts answered through Request
``Response`` signals, ``Activated`` on demand, as the XDG portal spec describes). A bus
without any portal gives the honest "this desktop offers no global shortcuts" message.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

import pytest

pytestmark = pytest.mark.gui

jeepney = pytest.importorskip("jeepney")
needs_dbus = pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")

PORTAL = "org.freedesktop.portal.Desktop"
PATH = "/org/freedesktop/portal/desktop"
SESSION = "/org/freedesktop/portal/desktop/session/fake/captioner"


@pytest.fixture
def bus(tmp_path):
    """A private D-Bus session bus; yields its address."""
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1",
                             f"--address=unix:path={tmp_path}/bus"], stdout=subprocess.PIPE, text=True)
    address = proc.stdout.readline().strip()  # printed once the bus accepts connections
    assert address, "dbus-daemon did not start"
    yield address
    proc.terminate()
    proc.wait(5)


class FakePortal:
    """Answers the GlobalShortcuts calls on its own thread; ``press(id)`` emits Activated."""

    def __init__(self, address: str) -> None:
        from jeepney.io.blocking import open_dbus_connection

        self.conn = open_dbus_connection(bus=address)
        self.conn.send_and_get_reply(jeepney.message_bus.RequestName(PORTAL), timeout=5)
        self.bound = threading.Event()
        self.shortcuts: list = []
        self.closed = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _respond(self, msg, token: str, results: dict) -> None:
        from jeepney import DBusAddress, HeaderFields, new_method_return, new_signal

        sender = msg.header.fields[HeaderFields.sender].lstrip(":").replace(".", "_")
        path = f"{PATH}/request/{sender}/{token}"
        with self._lock:
            self.conn.send(new_method_return(msg, "o", (path,)))
            self.conn.send(new_signal(DBusAddress(path, interface="org.freedesktop.portal.Request"), "Response",
                                      "ua{sv}", (0, results)))

    def _serve(self) -> None:
        from jeepney import HeaderFields, MessageType, new_method_return

        while not self._stop.is_set():
            try:
                msg = self.conn.receive(timeout=0.1)
            except TimeoutError:
                continue
            if msg.header.message_type != MessageType.method_call:
                continue
            member = msg.header.fields.get(HeaderFields.member)
            if member == "Get":
                with self._lock:
                    self.conn.send(new_method_return(msg, "v", (("u", 1),)))
            elif member == "CreateSession":
                self._respond(msg, msg.body[0]["handle_token"][1], {"session_handle": ("o", SESSION)})
            elif member == "BindShortcuts":
                session, shortcuts, _parent, options = msg.body
                assert session == SESSION
                self.shortcuts = shortcuts
                bound = [(sid, {"description": opts["description"],
                                "trigger_description": ("s", opts["preferred_trigger"][1])})
                         for sid, opts in shortcuts]
                self._respond(msg, options["handle_token"][1], {"shortcuts": ("a(sa{sv})", bound)})
                self.bound.set()
            elif member == "Close":
                with self._lock:
                    self.conn.send(new_method_return(msg))
                self.closed.set()

    def press(self, shortcut_id: str) -> None:
        from jeepney import DBusAddress, new_signal

        signal = new_signal(DBusAddress(PATH, interface="org.freedesktop.portal.GlobalShortcuts"), "Activated",
                            "osta{sv}", (SESSION, shortcut_id, 0, {}))
        with self._lock:
            self.conn.send(signal)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.conn.close()


@needs_dbus
def test_portal_binds_the_shortcuts_and_reports_presses(bus, qtbot):
    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.global_shortcuts.portal import PortalBackend

    portal = FakePortal(bus)
    backend = PortalBackend(bus=bus)
    shortcuts = GlobalShortcuts(backend)
    try:
        assert shortcuts.bind({"start_stop": "Ctrl+Shift+S", "toggle_overlay": "Meta+F9"}) == {}
        assert portal.bound.wait(10)
        asked = {sid: (opts["description"][1], opts["preferred_trigger"][1]) for sid, opts in portal.shortcuts}
        assert asked == {"start_stop": ("Start or stop captions", "CTRL+SHIFT+s"),
                         "toggle_overlay": ("Show or hide the caption overlay", "LOGO+F9")}
        qtbot.waitUntil(lambda: backend.bound.get("toggle_overlay") == "LOGO+F9", timeout=10000)
        with qtbot.waitSignal(shortcuts.activated, timeout=10000) as got:
            portal.press("toggle_overlay")
        assert got.args == ["toggle_overlay"]
    finally:
        shortcuts.close()
    assert portal.closed.wait(10)  # the session was closed on quit
    portal.close()


@needs_dbus
def test_a_desktop_without_the_portal_is_said_honestly(bus, qtbot):
    from captioner.ui.global_shortcuts import GlobalShortcuts
    from captioner.ui.global_shortcuts.portal import PortalBackend

    shortcuts = GlobalShortcuts(PortalBackend(bus=bus))
    try:
        with qtbot.waitSignal(shortcuts.problem, timeout=10000) as got:
            shortcuts.bind({"start_stop": "Ctrl+Shift+S"})
        assert "offers no global shortcuts" in got.args[0] and "only while one of its windows" in got.args[0]
    finally:
        shortcuts.close()
