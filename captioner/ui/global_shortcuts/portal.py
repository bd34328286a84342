"""Wayland global shortcuts: the XDG desktop portal's ``org.freedesktop.portal.GlobalShortcuts``.

Wayland gives applications no way to grab keys; the desktop (its portal backend: KDE Plasma
5.27+, GNOME 48+, Hyprland...) owns them. The app asks, over the D-Bus session bus
(jeepney, on a thread of its own so the GUI never waits on the bus):

1. ``CreateSession`` -> a ``Request`` object whose ``Response`` signal carries the session handle;
2. ``BindShortcuts(session, [(id, {description, preferred_trigger})], parent_window, options)``
   -> ``Response`` with the shortcuts as bound. The desktop may ask the user, and may choose
   other keys than the preferred ones: the user changes them in the desktop's settings;
3. ``Activated(session, id, timestamp, options)`` signals on each press.

Rebinding closes the session and starts a new one (a session binds once). Where the bus or
the interface is missing (GNOME before 48, Sway, weston...) the user is told, in so many words,
that this desktop offers no global shortcuts and the keys work inside captioner only.
"""

from __future__ import annotations

import secrets
import threading
from typing import Callable

from captioner.ui.global_shortcuts.actions import ACTION_DESCRIPTIONS as DESCRIPTIONS
from captioner.ui.global_shortcuts.keys import Combo, portal_trigger

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
INTERFACE = "org.freedesktop.portal.GlobalShortcuts"
#: Said when the desktop has no GlobalShortcuts portal.
NO_PORTAL = ("This desktop offers no global shortcuts to applications (its XDG desktop portal has no "
             "GlobalShortcuts interface{detail}), so captioner's shortcuts work only while one of its windows "
             "is active. KDE Plasma 5.27+, GNOME 48+ and Hyprland have it; elsewhere bind a key in the desktop's "
             "own settings to the tray menu or the window.")
#: Seconds between checks of the stop flag while waiting on the bus.
POLL_S = 0.25



class PortalBackend:
    """Global shortcuts through the desktop portal (see the module docstring).

    Args:
        bus: ``"SESSION"`` or a D-Bus address (tests run a private bus).
    """

    name = "the desktop portal's GlobalShortcuts"

    def __init__(self, bus: str = "SESSION") -> None:
        import jeepney  # noqa: F401 - fail here (no mechanism) rather than on the thread

        self.bus = bus
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        #: action id -> the keys the desktop bound (its ``trigger_description``), once bound
        self.bound: dict[str, str] = {}

    def fileno(self) -> None:
        return None

    def dispatch(self) -> None:
        pass

    def bind(self, combos: dict[str, Combo], activated: Callable[[str], None],
             problem: Callable[[str], None]) -> dict[str, str]:
        """Close the previous session and ask for ``combos`` on the portal thread.

        Returns:
            ``{}``: the answer comes later; trouble is passed to ``problem``.
        """
        self._stop.set()  # the old session's thread closes it and ends by itself: no wait here
        self._thread = None
        if not combos:
            return {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(dict(combos), activated, problem, self._stop),
                                        name="portal-shortcuts", daemon=True)
        self._thread.start()
        return {}

    def close(self) -> None:
        """End the session (the thread notices within :data:`POLL_S`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
            self._thread = None

    # -- the portal thread ---------------------------------------------------------------------
    def _run(self, combos, activated, problem, stop: threading.Event) -> None:
        from jeepney.io.blocking import open_dbus_connection

        try:
            conn = open_dbus_connection(bus=self.bus)
        except Exception as exc:  # noqa: BLE001 - no session bus at all
            problem(NO_PORTAL.format(detail=f": no D-Bus session bus, {exc}"))
            return
        try:
            self._session(conn, combos, activated, problem, stop)
        except TimeoutError:
            problem(NO_PORTAL.format(detail=": the portal did not answer"))
        except Exception as exc:  # noqa: BLE001 - a broken portal is a message, never a crash
            problem(f"The desktop portal failed to bind captioner's global shortcuts ({exc}); they work only "
                    "while a captioner window is active.")
        finally:
            conn.close()

    def _session(self, conn, combos, activated, problem, stop) -> None:
        from jeepney import DBusAddress, HeaderFields, MatchRule, MessageType, Properties, message_bus, new_method_call

        portal = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=INTERFACE)
        reply = conn.send_and_get_reply(Properties(portal).get("version"), timeout=10)
        if reply.header.message_type == MessageType.error:
            problem(NO_PORTAL.format(detail=f": {reply.header.fields.get(HeaderFields.error_name, 'error')}"))
            return
        sender = conn.unique_name.lstrip(":").replace(".", "_")

        def request(method: str, signature: str, body: tuple, token: str):
            """Call a portal method that answers through a Request's Response signal."""
            rule = MatchRule(type="signal", interface="org.freedesktop.portal.Request", member="Response",
                             path=f"{PORTAL_PATH}/request/{sender}/{token}")
            conn.send_and_get_reply(message_bus.AddMatch(rule), timeout=10)
            with conn.filter(rule) as queue:
                answer = conn.send_and_get_reply(new_method_call(portal, method, signature, body), timeout=10)
                if answer.header.message_type == MessageType.error:
                    raise RuntimeError(f"{method}: {answer.body[0] if answer.body else 'error'}")
                while not stop.is_set():  # the user may be choosing keys in a desktop dialog
                    try:
                        return conn.recv_until_filtered(queue, timeout=POLL_S).body
                    except TimeoutError:
                        continue
            return None

        token = "captioner_" + secrets.token_hex(4)
        answer = request("CreateSession", "a{sv}",
                         ({"handle_token": ("s", token), "session_handle_token": ("s", token + "_s")},), token)
        if answer is None:
            return
        code, results = answer
        if code != 0:
            raise RuntimeError(f"CreateSession answered {code}")
        session = results["session_handle"][1]
        shortcuts = [(action, {"description": ("s", DESCRIPTIONS.get(action, action)),
                               "preferred_trigger": ("s", portal_trigger(combo))})
                     for action, combo in combos.items()]
        token = "captioner_" + secrets.token_hex(4)
        activated_rule = MatchRule(type="signal", interface=INTERFACE, member="Activated", path=PORTAL_PATH)
        conn.send_and_get_reply(message_bus.AddMatch(activated_rule), timeout=10)
        try:
            with conn.filter(activated_rule, bufsize=64) as presses:
                answer = request("BindShortcuts", "oa(sa{sv})sa{sv}",
                                 (session, shortcuts, "", {"handle_token": ("s", token)}), token)
                if answer is None:
                    return
                code, results = answer
                if code != 0:
                    problem("The desktop did not allow captioner's global shortcuts (refused or cancelled); they "
                            "work only while a captioner window is active. Allow them in the desktop's settings.")
                    return
                bound = {sid: opts.get("trigger_description", ("s", ""))[1]
                         for sid, opts in results.get("shortcuts", ("a(sa{sv})", []))[1]}
                self.bound = bound
                left = [DESCRIPTIONS.get(a, a) for a in combos if a not in bound]
                if left:
                    problem(f"The desktop did not bind these shortcuts: {', '.join(left)}; they work only while a "
                            "captioner window is active.")
                while not stop.is_set():
                    try:
                        msg = conn.recv_until_filtered(presses, timeout=POLL_S)
                    except TimeoutError:
                        continue
                    if msg.body and msg.body[0] == session:
                        activated(msg.body[1])
        finally:
            close = new_method_call(DBusAddress(session, bus_name=PORTAL_NAME,
                                                interface="org.freedesktop.portal.Session"), "Close")
            try:
                conn.send(close)
            except OSError:
                pass
