"""A desktop notification through the freedesktop notification service (D-Bus), never blocking.

Where the desktop has no system tray (so ``QSystemTrayIcon.showMessage`` cannot be used), a
name alert (issue 49) is sent to ``org.freedesktop.Notifications`` (the Desktop
Notifications Specification's ``Notify`` call) with jeepney, on a short-lived thread of its
own: the GUI thread never waits on the bus. No session bus, no notification service, a
missing jeepney or a service that does not answer within :data:`REPLY_TIMEOUT_S` costs one
log line and nothing else.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger(__name__)

SERVICE = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
#: Longest wait (s, on the notification thread) for the service's answer.
REPLY_TIMEOUT_S = 2.0
#: Desktop-entry name (the ``desktop-entry`` hint), so the desktop shows captioner's icon and name.
DESKTOP_ENTRY = "io.github.captioner.Captioner"
#: Notification threads allowed at once; more notifications meanwhile are dropped (logged):
#: a stuck bus must not gather threads.
MAX_IN_FLIGHT = 2

_in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)


def notify_message(summary: str, body: str, timeout_ms: int):
    """The ``Notify`` method call (a jeepney message): app name "captioner", no icon of its
    own (the desktop entry's), normal urgency, shown for ``timeout_ms`` (ms)."""
    from jeepney import DBusAddress, new_method_call

    address = DBusAddress(PATH, bus_name=SERVICE, interface=SERVICE)
    hints = {"urgency": ("y", 1), "desktop-entry": ("s", DESKTOP_ENTRY), "category": ("s", "im.received")}
    return new_method_call(address, "Notify", "susssasa{sv}i",
                           ("captioner", 0, "", summary, body, [], hints, int(timeout_ms)))


def send_notification(summary: str, body: str, timeout_ms: int = 5000, bus: str = "SESSION") -> threading.Thread | None:
    """Send a desktop notification without waiting for it.

    Args:
        summary: the title ("Name alert").
        body: the text.
        timeout_ms: how long the desktop shows it (ms; the service may choose otherwise).
        bus: ``"SESSION"`` or a D-Bus address (tests run a private bus).

    Returns:
        The thread sending it (tests join it), or None when nothing was sent (too many still
        in flight); failures are logged, never raised.
    """
    if not _in_flight.acquire(blocking=False):
        log.info("desktop notification dropped: %d earlier ones are still waiting for the bus", MAX_IN_FLIGHT)
        return None
    thread = threading.Thread(target=_send, args=(summary, body, timeout_ms, bus), name="desktop-notify",
                              daemon=True)
    thread.start()
    return thread


def _send(summary: str, body: str, timeout_ms: int, bus: str) -> None:
    try:
        from jeepney import MessageType
        from jeepney.io.blocking import open_dbus_connection

        conn = open_dbus_connection(bus=bus)
        try:
            reply = conn.send_and_get_reply(notify_message(summary, body, timeout_ms), timeout=REPLY_TIMEOUT_S)
        finally:
            conn.close()
        if reply.header.message_type == MessageType.error:
            log.info("desktop notification not shown: %s", reply.body[0] if reply.body else "the service refused it")
    except Exception as exc:  # noqa: BLE001 - no bus, no service, no jeepney: a log line, never a crash
        log.info("desktop notification not shown (%s: %s)", type(exc).__name__, exc)
    finally:
        _in_flight.release()
