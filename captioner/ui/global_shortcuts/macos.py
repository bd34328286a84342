"""macOS global shortcuts: Carbon ``RegisterEventHotKey`` (what Qt apps and QHotkey use).

``RegisterEventHotKey(keycode, modifiers, {signature, id}, GetApplicationEventTarget(), 0, &ref)``
makes the system send a ``kEventHotKeyPressed`` event to the app whichever app is in front,
without the accessibility permission that an event tap (pynput) needs. The events arrive on
the main run loop, which Qt's Cocoa event loop runs, so the handler is called on the GUI
thread. A combination another app registered fails with ``eventHotKeyExistsErr`` (-9878):
reported. Qt's ``Ctrl`` is the Command key on macOS (:data:`~.keys.MAC_MODS`).

Written against the Carbon headers (HIToolbox/CarbonEvents.h) with ctypes; not run on macOS
in this project's CI.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable

from captioner.ui.global_shortcuts.keys import MAC_MODS, Combo, ComboError, mac_keycode


def _fourcc(code: bytes) -> int:
    return int.from_bytes(code, "big")


K_EVENT_CLASS_KEYBOARD = _fourcc(b"keyb")
K_EVENT_HOT_KEY_PRESSED = 5
K_EVENT_PARAM_DIRECT_OBJECT = _fourcc(b"----")
TYPE_EVENT_HOT_KEY_ID = _fourcc(b"hkid")
SIGNATURE = _fourcc(b"capt")
EVENT_HOT_KEY_EXISTS_ERR = -9878


class EventTypeSpec(ctypes.Structure):
    _fields_ = [("eventClass", ctypes.c_uint32), ("eventKind", ctypes.c_uint32)]


class EventHotKeyID(ctypes.Structure):
    _fields_ = [("signature", ctypes.c_uint32), ("id", ctypes.c_uint32)]


HANDLER = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class MacBackend:
    """Carbon hot keys (see the module docstring)."""

    name = "macOS hot keys (RegisterEventHotKey)"

    def __init__(self) -> None:
        self.carbon = ctypes.CDLL(ctypes.util.find_library("Carbon"))
        c = self.carbon
        c.GetApplicationEventTarget.restype = ctypes.c_void_p
        c.InstallEventHandler.argtypes = (ctypes.c_void_p, HANDLER, ctypes.c_uint32, ctypes.POINTER(EventTypeSpec),
                                          ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p))
        c.RegisterEventHotKey.argtypes = (ctypes.c_uint32, ctypes.c_uint32, EventHotKeyID, ctypes.c_void_p,
                                          ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p))
        c.UnregisterEventHotKey.argtypes = (ctypes.c_void_p,)
        c.GetEventParameter.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)
        self._refs: dict[int, ctypes.c_void_p] = {}
        self._ids: dict[int, str] = {}
        self._activated: Callable[[str], None] | None = None
        self._handler = HANDLER(self._on_event)  # kept: Carbon holds only the C pointer
        spec = EventTypeSpec(K_EVENT_CLASS_KEYBOARD, K_EVENT_HOT_KEY_PRESSED)
        self._handler_ref = ctypes.c_void_p()
        status = c.InstallEventHandler(c.GetApplicationEventTarget(), self._handler, 1, ctypes.byref(spec), None,
                                       ctypes.byref(self._handler_ref))
        if status != 0:
            raise OSError(f"InstallEventHandler failed ({status})")

    def fileno(self) -> None:
        return None

    def dispatch(self) -> None:
        pass

    def _on_event(self, _call_ref, event, _user) -> int:
        hot = EventHotKeyID()
        status = self.carbon.GetEventParameter(event, K_EVENT_PARAM_DIRECT_OBJECT, TYPE_EVENT_HOT_KEY_ID, None,
                                               ctypes.sizeof(hot), None, ctypes.byref(hot))
        if status == 0 and hot.signature == SIGNATURE and hot.id in self._ids and self._activated is not None:
            self._activated(self._ids[hot.id])
        return 0

    def bind(self, combos: dict[str, Combo], activated: Callable[[str], None],
             problem: Callable[[str], None] | None = None) -> dict[str, str]:
        """Unregister the previous hot keys and register ``combos``.

        Returns:
            action id -> why not (taken by another app, a key with no code).
        """
        self.close()
        self._activated = activated
        problems = {}
        for n, (action, combo) in enumerate(combos.items(), start=1):
            try:
                keycode = mac_keycode(combo)
            except ComboError as exc:
                problems[action] = str(exc)
                continue
            mods = 0
            for m in combo.modifiers:
                mods |= MAC_MODS[m]
            ref = ctypes.c_void_p()
            status = self.carbon.RegisterEventHotKey(keycode, mods, EventHotKeyID(SIGNATURE, n),
                                                     self.carbon.GetApplicationEventTarget(), 0, ctypes.byref(ref))
            if status == 0:
                self._refs[n] = ref
                self._ids[n] = action
            elif status == EVENT_HOT_KEY_EXISTS_ERR:
                problems[action] = f"{combo.text} is already taken by another app, which gets it even in captioner"
            else:
                problems[action] = f"{combo.text} could not be registered (Carbon error {status})"
        return problems

    def close(self) -> None:
        """Unregister every hot key."""
        for ref in self._refs.values():
            self.carbon.UnregisterEventHotKey(ref)
        self._refs.clear()
        self._ids.clear()
