"""Reading an app's accessible tree over the AT-SPI D-Bus interface, as a screen reader does.

Pure Python (jeepney, the test extra): the venv cannot import the system's ``python3-gi``, and
D-Bus calls are what Orca's pyatspi makes underneath. Only what the tests need: each object's
name, description, role name and states, walked from the registry's desktop root.
"""

from __future__ import annotations

from dataclasses import dataclass

ACCESSIBLE = "org.a11y.atspi.Accessible"
ROOT = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
#: AtspiStateType bit numbers (at-spi2-core's atspi-constants.h).
FOCUSABLE, SHOWING, VISIBLE = 11, 25, 30


@dataclass(frozen=True)
class Node:
    """One accessible object: where it lives on the bus and what a screen reader reads of it."""

    bus_name: str
    path: str
    name: str
    description: str
    role: str
    states: frozenset[int]

    @property
    def focusable_and_shown(self) -> bool:
        return {FOCUSABLE, SHOWING, VISIBLE} <= self.states


class AtspiTree:
    """Walks the accessible tree on the a11y bus at ``address`` (``org.a11y.Bus.GetAddress``)."""

    def __init__(self, address: str) -> None:
        from jeepney.io.blocking import open_dbus_connection

        self.conn = open_dbus_connection(address)

    def _call(self, bus_name: str, path: str, interface: str, method: str, signature: str = "", body=()):
        from jeepney import DBusAddress, new_method_call

        addr = DBusAddress(path, bus_name=bus_name, interface=interface)
        reply = self.conn.send_and_get_reply(new_method_call(addr, method, signature, body), timeout=10)
        return reply.body

    def _property(self, bus_name: str, path: str, name: str):
        value = self._call(bus_name, path, "org.freedesktop.DBus.Properties", "Get", "ss", (ACCESSIBLE, name))[0]
        return value[1]  # a variant: (signature, value)

    def node(self, bus_name: str, path: str) -> Node:
        words = self._call(bus_name, path, ACCESSIBLE, "GetState")[0]
        states = frozenset(i * 32 + b for i, word in enumerate(words) for b in range(32) if word >> b & 1)
        return Node(bus_name, path, self._property(bus_name, path, "Name"),
                    self._property(bus_name, path, "Description"),
                    self._call(bus_name, path, ACCESSIBLE, "GetRoleName")[0], states)

    def children(self, bus_name: str, path: str) -> list[tuple[str, str]]:
        return [tuple(c) for c in self._call(bus_name, path, ACCESSIBLE, "GetChildren")[0]]

    def walk(self, app_name: str | None = None, limit: int = 5000) -> list[Node]:
        """Every object under the desktop root (only the applications named ``app_name``, if given)."""
        found: list[Node] = []
        todo = self.children(*ROOT)
        if app_name is not None:
            todo = [c for c in todo if self.node(*c).name == app_name]
        seen: set[tuple[str, str]] = set()
        while todo and len(found) < limit:
            ref = todo.pop(0)
            if ref in seen or ref[1] == "/org/a11y/atspi/null":
                continue
            seen.add(ref)
            found.append(self.node(*ref))
            todo.extend(self.children(*ref))
        return found

    def close(self) -> None:
        self.conn.close()
