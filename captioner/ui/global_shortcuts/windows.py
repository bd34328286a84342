"""Windows global shortcuts: ``RegisterHotKey`` (user32) on a thread with its own message loop.

``RegisterHotKey(NULL, id, modifiers | MOD_NOREPEAT, vk)`` posts ``WM_HOTKEY`` to the thread
that registered it, whichever window has the focus, and the key does not reach the focused
application. A combination another program registered fails with
``ERROR_HOTKEY_ALREADY_REGISTERED`` (1409): reported, not left dead. ``MOD_NOREPEAT``: a held
key fires once.

The registrations belong to the thread, so one thread registers, runs ``GetMessageW`` and
unregisters; a rebind ends it (``PostThreadMessageW(WM_QUIT)``) and starts another. Written
against the documented Win32 API with ctypes; not run on Windows in this project's CI.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import wintypes
from typing import Callable

from captioner.ui.global_shortcuts.keys import WINDOWS_MODS, Combo, ComboError, windows_vk

WM_HOTKEY = 0x0312
WM_QUIT = 0x0012
MOD_NOREPEAT = 0x4000
ERROR_HOTKEY_ALREADY_REGISTERED = 1409


class WindowsBackend:
    """Hot keys registered with ``RegisterHotKey`` (see the module docstring)."""

    name = "Windows hot keys (RegisterHotKey)"

    def __init__(self) -> None:
        self.user32 = ctypes.WinDLL("user32", use_last_error=True)
        self.kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        self.user32.RegisterHotKey.argtypes = (wintypes.HWND, ctypes.c_int, wintypes.UINT, wintypes.UINT)
        self.user32.RegisterHotKey.restype = wintypes.BOOL
        self.user32.UnregisterHotKey.argtypes = (wintypes.HWND, ctypes.c_int)
        self.user32.GetMessageW.argtypes = (ctypes.POINTER(wintypes.MSG), wintypes.HWND, wintypes.UINT, wintypes.UINT)
        self.user32.PostThreadMessageW.argtypes = (wintypes.DWORD, wintypes.UINT, wintypes.WPARAM, wintypes.LPARAM)
        self._thread: threading.Thread | None = None
        self._thread_id = 0

    def fileno(self) -> None:
        return None

    def dispatch(self) -> None:
        pass

    def bind(self, combos: dict[str, Combo], activated: Callable[[str], None],
             problem: Callable[[str], None] | None = None) -> dict[str, str]:
        """Register ``combos`` on a new hot-key thread (the old one ends first).

        Returns:
            action id -> why not (taken by another program, a key with no code).
        """
        self.close()
        problems: dict[str, str] = {}
        wanted: list[tuple[int, str, int, int, str]] = []
        for n, (action, combo) in enumerate(combos.items(), start=1):
            try:
                vk = windows_vk(combo)
            except ComboError as exc:
                problems[action] = str(exc)
                continue
            mods = MOD_NOREPEAT
            for m in combo.modifiers:
                mods |= WINDOWS_MODS[m]
            wanted.append((n, action, mods, vk, combo.text))
        if not wanted:
            return problems
        registered = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(wanted, activated, problems, registered),
                                        name="hotkeys", daemon=True)
        self._thread.start()
        registered.wait(2.0)  # registering takes microseconds; the answer is needed for the report
        return problems

    def _run(self, wanted, activated, problems: dict, registered: threading.Event) -> None:
        user32 = self.user32
        self._thread_id = self.kernel32.GetCurrentThreadId()
        msg = wintypes.MSG()
        # make sure this thread has a message queue before anyone posts WM_QUIT to it
        user32.PeekMessageW(ctypes.byref(msg), None, 0x0400, 0x0400, 0)  # WM_USER, PM_NOREMOVE
        ids: dict[int, str] = {}
        for n, action, mods, vk, text in wanted:
            if user32.RegisterHotKey(None, n, mods, vk):
                ids[n] = action
            elif ctypes.get_last_error() == ERROR_HOTKEY_ALREADY_REGISTERED:
                problems[action] = f"{text} is already taken by another program, which gets it even in captioner"
            else:
                problems[action] = f"{text} could not be registered (Windows error {ctypes.get_last_error()})"
        registered.set()
        try:
            while user32.GetMessageW(ctypes.byref(msg), None, 0, 0) > 0:
                if msg.message == WM_HOTKEY and msg.wParam in ids:
                    activated(ids[msg.wParam])
        finally:
            for n in ids:
                user32.UnregisterHotKey(None, n)

    def close(self) -> None:
        """End the hot-key thread (its registrations go with it)."""
        if self._thread is not None:
            self.user32.PostThreadMessageW(self._thread_id, WM_QUIT, 0, 0)
            self._thread.join(1.0)
            self._thread = None
