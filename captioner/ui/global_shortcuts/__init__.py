"""Global shortcuts: start/stop, show/hide overlay and click-through from any application.

:class:`GlobalShortcuts` is the Qt face of one platform mechanism (one module each):

- X11 (``QGuiApplication.platformName() == "xcb"``): :mod:`.x11`, ``XGrabKey`` on the root
  window through python-xlib, for every NumLock/CapsLock variant; a combination another
  client holds fails with ``BadAccess`` and is reported. The X connection's socket is
  watched by a ``QSocketNotifier``, so the GUI thread never blocks on X.
- Wayland: :mod:`.portal`, the XDG desktop portal's ``org.freedesktop.portal.GlobalShortcuts``
  interface over D-Bus (jeepney, on its own thread). The desktop decides the final keys (it
  may ask the user); where the compositor offers no such portal the app says so.
- Windows: :mod:`.windows`, ``RegisterHotKey`` on a thread of its own with its message loop;
  ``ERROR_HOTKEY_ALREADY_REGISTERED`` is reported.
- macOS: :mod:`.macos`, Carbon ``RegisterEventHotKey`` (no accessibility permission needed);
  ``eventHotKeyExistsErr`` is reported.

Why not pynput: its hot keys *listen* (the RECORD extension on X11, a ``WH_KEYBOARD_LL`` hook
on Windows, an event tap on macOS): the key still reaches the focused application too
(Ctrl+Shift+T would also open a terminal tab), a combination another program holds is not
detected, and on macOS it needs the accessibility permission. A global shortcut must be
exclusive and say when it is taken, which only the grab/registration APIs give.

Every backend calls back with an action id; :attr:`GlobalShortcuts.activated` is emitted in
the GUI thread (a queued signal where the backend runs a thread of its own).
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Protocol

from PySide6.QtCore import QObject, QSocketNotifier, Signal
from PySide6.QtGui import QGuiApplication

from captioner.engine.qt_emit import emit
from captioner.ui.global_shortcuts.actions import ACTION_DESCRIPTIONS
from captioner.ui.global_shortcuts.keys import Combo, ComboError, check_global, parse

#: Said when the desktop offers no way to register global shortcuts.
NO_MECHANISM = ("Shortcuts work only while a captioner window is active here: {why}")


class Backend(Protocol):
    """What each platform module provides."""

    #: what the user is told the mechanism is ("X11 key grabs", ...)
    name: str

    def bind(self, combos: dict[str, Combo], activated: Callable[[str], None],
             problem: Callable[[str], None]) -> dict[str, str]:
        """Replace every registration by ``combos`` (action id -> combination).

        ``activated(action_id)`` is called on each press, ``problem(text)`` for trouble that
        shows only later (a portal that refused); both may be called from another thread.

        Returns:
            action id -> why that combination could not be registered (only failures).
        """

    def fileno(self) -> int | None:
        """A socket to watch for readability (then :meth:`dispatch`), or None."""

    def dispatch(self) -> None:
        """Handle what arrived on :meth:`fileno`."""

    def close(self) -> None:
        """Release every registration (returns within a second)."""


def platform_backend(platform_name: str | None = None, env=None) -> tuple[Backend | None, str]:
    """The mechanism for this desktop, or ``(None, why there is none)``.

    Args:
        platform_name: Qt platform plugin (default: the running app's, e.g. "xcb", "wayland").
        env: environment (default ``os.environ``).
    """
    env = os.environ if env is None else env
    if platform_name is None:
        platform_name = QGuiApplication.platformName() if QGuiApplication.instance() else ""
    try:
        if sys.platform == "win32":
            from captioner.ui.global_shortcuts.windows import WindowsBackend

            return WindowsBackend(), ""
        if sys.platform == "darwin":
            from captioner.ui.global_shortcuts.macos import MacBackend

            return MacBackend(), ""
        if platform_name == "xcb":
            from captioner.ui.global_shortcuts.x11 import X11Backend

            return X11Backend(env.get("DISPLAY")), ""
        if platform_name.startswith("wayland"):
            from captioner.ui.global_shortcuts.portal import PortalBackend

            return PortalBackend(), ""
    except Exception as exc:  # noqa: BLE001 - no mechanism is a message, never a crash
        return None, NO_MECHANISM.format(why=str(exc))
    return None, ""  # offscreen, vnc, ...: no desktop to take keys from, nothing to say


class GlobalShortcuts(QObject):
    """The desktop-wide shortcuts of the app.

    Args:
        backend: the mechanism (default: :func:`platform_backend`); tests pass one.
        note: why there is no mechanism (with ``backend=None``).

    Attributes:
        backend: the mechanism in use, or None.
        note: ``""``, or why shortcuts work only inside the app.
        problems: action id -> why its combination is not global (taken, unknown key...).

    Signals:
        activated(str): an action id whose shortcut was pressed (in the GUI thread).
        problem(str): trouble reported after :meth:`bind` returned (a refusing portal).
    """

    activated = Signal(str)
    problem = Signal(str)

    def __init__(self, backend: Backend | None = None, note: str = "", parent: QObject | None = None,
                 *, auto: bool = True) -> None:
        super().__init__(parent)
        if backend is None and auto and not note:
            backend, note = platform_backend()
        self.backend = backend
        self.note = note
        self.problems: dict[str, str] = {}
        self._notifier: QSocketNotifier | None = None
        fd = backend.fileno() if backend is not None else None
        if fd is not None:
            self._notifier = QSocketNotifier(fd, QSocketNotifier.Type.Read, self)
            self._notifier.activated.connect(lambda *_: self._dispatch())

    @property
    def name(self) -> str:
        """The mechanism's name, or ``""``."""
        return self.backend.name if self.backend is not None else ""

    def bind(self, shortcuts: dict[str, str]) -> dict[str, str]:
        """Register ``shortcuts`` (action id -> QKeySequence portable text; "" = none) desktop-wide,
        replacing the previous ones.

        Returns:
            action id -> why it is not global (also kept in :attr:`problems`: a key taken, or
            one that types, see :func:`~.keys.check_global`); empty when
            every one was registered, or when there is no mechanism (see :attr:`note`).
        """
        combos: dict[str, Combo] = {}
        problems: dict[str, str] = {}
        for action, text in shortcuts.items():
            if not text:
                continue
            try:
                combos[action] = check_global(parse(text))
            except ComboError as exc:
                problems[action] = str(exc)
        if self.backend is not None:
            try:
                problems.update(self.backend.bind(combos, self._activated, self._problem))
            except Exception as exc:  # noqa: BLE001 - a broken desktop service is a message
                problems.update({a: f"the desktop refused it ({exc})" for a in combos})
            self._dispatch()
        self.problems = problems
        return dict(problems)

    def close(self) -> None:
        """Release every registration."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
        if self.backend is not None:
            self.backend.close()
            self.backend = None

    def _dispatch(self) -> None:
        if self.backend is not None:
            try:
                self.backend.dispatch()
            except Exception as exc:  # noqa: BLE001 - e.g. the X server went away
                if self._notifier is not None:
                    self._notifier.setEnabled(False)
                self._problem(f"Global shortcuts stopped working: {exc}")

    def _activated(self, action: str) -> None:
        emit(self.activated, action)

    def _problem(self, text: str) -> None:
        emit(self.problem, text)


__all__ = ["ACTION_DESCRIPTIONS", "Backend", "GlobalShortcuts", "platform_backend"]
