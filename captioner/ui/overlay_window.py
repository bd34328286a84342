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

import time

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QGuiApplication, QPainterPath, QRegion, QWindow


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


def active_window() -> int | None:
    """The X window the window manager has active (``_NET_ACTIVE_WINDOW`` on the root), 0 for none.

    Returns ``None`` where that cannot be known: not X11, no window manager setting the property,
    or the display cannot be opened (its own python-xlib connection, opened once; one round trip).
    """
    if not sys.platform.startswith("linux") or platform_name() != "xcb":
        return None
    conn = _x()
    if conn is None:
        return None
    try:
        from Xlib import X

        prop = conn.screen().root.get_full_property(conn.intern_atom("_NET_ACTIVE_WINDOW"), X.AnyPropertyType)
    except Exception:  # noqa: BLE001 (a closed connection, a server error: unknown)
        return None
    return int(prop.value[0]) if prop is not None and len(prop.value) else None


#: How long (s) an answer of :func:`compositing_active` is reused (a compositor may start or stop).
COMPOSITING_RECHECK_S = 2.0
_compositing: list = []  # [(monotonic time, answer)]


def _x() -> object | None:
    """This module's own python-xlib connection (opened once), or ``None``."""
    if not _x_connection:
        try:
            from Xlib import display as xdisplay

            _x_connection.append(xdisplay.Display())
        except Exception:  # noqa: BLE001 (no python-xlib, no display)
            _x_connection.append(None)
    return _x_connection[0]


def compositing_active() -> bool | None:
    """Whether a compositing manager runs on the X screen (an owner of ``_NET_WM_CM_S<n>``).

    Without one, X shows an ARGB window's transparent pixels as black: the translucent panel
    is opaque and an "empty" overlay is a black box over the windows below. ``None`` off X11
    or when it cannot be asked. Re-asked at most every :data:`COMPOSITING_RECHECK_S`.
    """
    if not sys.platform.startswith("linux") or platform_name() != "xcb":
        return None
    now = time.monotonic()
    if _compositing and now - _compositing[0][0] < COMPOSITING_RECHECK_S:
        return _compositing[0][1]
    conn = _x()
    answer = None
    if conn is not None:
        try:
            from Xlib import X

            atom = conn.intern_atom(f"_NET_WM_CM_S{conn.get_default_screen()}")
            answer = conn.get_selection_owner(atom) != X.NONE
        except Exception:  # noqa: BLE001 (a closed connection, a server error: unknown)
            answer = None
    _compositing[:] = [(now, answer)]
    return answer


def opaque_shape(width: int, height: int, panel: bool, frame: bool, indicator: QRectF | None,
                 radius: float = 10.0) -> QRegion:
    """The part of the overlay to keep where nothing is translucent (no compositor), as a window shape.

    Args:
        width, height: the overlay's size (logical px).
        panel: captions are shown (the rounded panel).
        frame: drag mode (the frame and the hint cover the whole rectangle).
        indicator: the turn indicator's rectangle when it is drawn, else ``None``.
        radius: the panel's corner radius.

    Returns:
        The region to keep; a 1x1 region in the top-left corner when nothing is drawn (an empty
        region would remove the shape instead: the whole black rectangle).
    """
    if panel or frame:
        path = QPainterPath()
        path.addRoundedRect(QRectF(0, 0, width, height), radius, radius)
        return QRegion(path.toFillPolygon().toPolygon())
    if indicator is not None:
        box = indicator.adjusted(-1.5, -1.5, 1.5, 1.5).toAlignedRect()
        return QRegion(box, QRegion.RegionType.Ellipse)
    return QRegion(0, 0, 1, 1)


def system_move_allowed(platform: str | None = None) -> bool:
    """Whether to hand a drag to the window system (``startSystemMove``/``startSystemResize``).

    Not under X11: the overlay is not managed, and a ``_NET_WM_MOVERESIZE`` that reaches the
    window manager after a quick click's release made the window follow the pointer "by itself".
    Required on Wayland, where a client cannot move its own window.
    """
    return not bypasses_window_manager(platform)


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
            "'keep above' rule for the window titled 'Captions' in your compositor (KDE: Window Rules; "
            "GNOME: the 'Always on top' window menu entry)."
        )
    if name == "xcb" and env.get("WAYLAND_DISPLAY"):
        return (
            "Running under XWayland: the caption overlay stays above other X11 windows, but native Wayland "
            "windows (fullscreen ones included) may cover it; add a 'keep above' rule for the window titled "
            "'Captions' in your compositor if that happens."
        )
    return ""
