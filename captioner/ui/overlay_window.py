"""What the window system is asked for the caption overlay, per platform (X11 / Wayland / others).

Measured under Xvfb with openbox (tests/ui/test_overlay_x11.py):

* a frameless, always-on-top *managed* window is still reparented by the window manager into a
  frame window whose input region is the whole rectangle, so clicks do not pass through even
  though the overlay's own window has an empty input shape; and a fullscreen window
  (``xterm -fullscreen``) goes into the window manager's fullscreen layer above every
  "keep above" window (``_NET_WM_STATE_ABOVE``);
* an override-redirect window (``Qt.X11BypassWindowManagerHint``) is neither framed nor
  re-stacked by the window manager: it stays above managed windows, fullscreen ones included,
  after they are mapped, clicked, activated or raised, and with ``WindowTransparentForInput``
  its empty input shape is the only one, so clicks reach the window below. The window manager
  never gives it focus, and it cannot be moved by the window manager either, so the overlay
  moves and resizes itself (:mod:`captioner.ui.overlay_drag`).

So under X11 (``xcb``) the overlay bypasses the window manager. Being above every managed window
includes the app's own dialogs: the Settings dialog opened over the overlay was covered by it
(its shortcut fields and the profanity options unreadable). So while one of the app's dialogs has
the focus the overlay goes to the bottom of the stack, and back on top once the focus is anywhere
else (:func:`gives_way_to`). It goes back on top only once the window manager has another window
active (``_NET_ACTIVE_WINDOW``, :func:`active_window`): a screen locker takes the keyboard without
the window manager, so the focus leaving the dialog for a locker never puts the captions over
the lock screen. On Wayland a client cannot
place itself above others: :func:`always_on_top_note` says so (and what to do). Windows and
macOS keep the managed, always-on-top tool window and the system move/resize.
"""

from __future__ import annotations

import os
import sys

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QWindow


def platform_name() -> str:
    """``QGuiApplication.platformName()`` ("xcb", "wayland", "offscreen", "windows", "cocoa", ...)."""
    return QGuiApplication.platformName()


def bypasses_window_manager(platform: str | None = None) -> bool:
    """True where the overlay is an override-redirect window (X11): no frame, no WM stacking, no WM move."""
    return (platform if platform is not None else platform_name()) == "xcb"


def overlay_flags(click_through: bool, platform: str | None = None) -> Qt.WindowType:
    """The overlay's window flags.

    Args:
        click_through: mouse input passes to the windows below (an empty X input shape).
        platform: the Qt platform plugin name; the running app's when ``None``.
    """
    flags = (
        Qt.WindowType.Tool
        | Qt.WindowType.FramelessWindowHint
        | Qt.WindowType.WindowStaysOnTopHint
        | Qt.WindowType.WindowDoesNotAcceptFocus
    )
    if bypasses_window_manager(platform):
        flags |= Qt.WindowType.X11BypassWindowManagerHint
    if click_through:
        flags |= Qt.WindowType.WindowTransparentForInput
    return flags


def gives_way_to(window: QWindow | None) -> bool | None:
    """Where the overlay goes when ``window`` (``QGuiApplication.focusWindow()``) gets the focus.

    Returns:
        True (below the other windows) for one of the app's dialogs (a window with a transient
        parent: Settings, file dialogs, message boxes); False (back on top) for a main window,
        another application's window (``window`` is ``None``) or none; ``None`` (stay as it is)
        for popups and tool tips, which are above the overlay anyway (menus, combo lists).
    """
    if window is None:
        return False
    kind = window.type()
    if kind in (Qt.WindowType.Popup, Qt.WindowType.ToolTip):
        return None
    return window.transientParent() is not None or kind in (Qt.WindowType.Dialog, Qt.WindowType.Sheet)


_x_connection: list = []  # [python-xlib Display] once opened, [None] when it cannot be


def x_connection() -> object | None:
    """The overlay modules' own python-xlib connection (opened once, not Qt's), or ``None``."""
    if not _x_connection:
        try:
            from Xlib import display as xdisplay

            _x_connection.append(xdisplay.Display())
        except Exception:  # noqa: BLE001 (no python-xlib, no display)
            _x_connection.append(None)
    return _x_connection[0]


def active_window() -> int | None:
    """The X window the window manager has active (``_NET_ACTIVE_WINDOW`` on the root), 0 for none.

    Returns ``None`` where that cannot be known: not X11, no window manager setting the property,
    or the display cannot be opened (its own python-xlib connection, opened once; one round trip).
    """
    if not sys.platform.startswith("linux") or platform_name() != "xcb":
        return None
    conn = x_connection()
    if conn is None:
        return None
    try:
        from Xlib import X

        prop = conn.screen().root.get_full_property(conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
    except Exception:  # noqa: BLE001 (a closed connection, a server error: unknown)
        return None
    return int(prop.value[0]) if prop is not None and len(prop.value) else None


def system_move_allowed(platform: str | None = None) -> bool:
    """Whether to hand a drag to the window system (``startSystemMove``/``startSystemResize``).

    Not under X11: the overlay is not managed, and a ``_NET_WM_MOVERESIZE`` that reaches the
    window manager after a quick click's release made the window follow the pointer "by itself".
    Required on Wayland, where a client cannot move its own window.
    """
    return not bypasses_window_manager(platform)


#: The application's display name (``QGuiApplication.applicationDisplayName``).
DISPLAY_NAME = "captioner"
#: The overlay's window title, as window-manager rules ("keep above") match it. Qt's xcb
#: platform appends " — <display name>" to ``_NET_WM_NAME`` (not to ``WM_NAME``) unless the
#: title already ends with it, so a bare "Captions" read "Captions — captioner" in one property
#: and "Captions" in the other (issue 30.5); ending with the display name, both read this.
TITLE = f"Captions \u2014 {DISPLAY_NAME}"


def always_on_top_note(platform: str | None = None, environ: dict | None = None) -> str:
    """What to tell the user where "always on top" cannot be forced, or ``""``.

    Args:
        platform: ``QGuiApplication.platformName()``; read from the running app when ``None``.
        environ: the environment (``os.environ`` when ``None``), for ``WAYLAND_DISPLAY``.
    """
    name = platform if platform is not None else platform_name()
    env = os.environ if environ is None else environ
    if name == "wayland":
        return (
            "On Wayland an app cannot keep its own window above others, so the caption overlay may go behind "
            "the active window. Start captioner with QT_QPA_PLATFORM=xcb to run it under XWayland, or add a "
            f"'keep above' rule for the window titled '{TITLE}' in your compositor (KDE: Window Rules; "
            "GNOME: the 'Always on top' window menu entry)."
        )
    if name == "xcb" and env.get("WAYLAND_DISPLAY"):
        return (
            "Running under XWayland: the caption overlay stays above other X11 windows, but native Wayland "
            "windows (fullscreen ones included) may cover it; add a 'keep above' rule for the window titled "
            f"'{TITLE}' in your compositor if that happens."
        )
    return ""
