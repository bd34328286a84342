"""X11 global shortcuts: passive key grabs (``XGrabKey``) on the root window, via python-xlib.

A grab makes the X server send that key combination to this client whichever window has
the focus -- and *only* to this client, so the focused application does not act on it too.
X11 compares the modifier state exactly, so each combination is grabbed four times: alone,
with CapsLock (``Lock``), with NumLock (the modifier the server maps ``Num_Lock`` to, usually
``Mod2``) and with both. Only one client can grab a combination: when another program holds
it, the server answers ``BadAccess``; :meth:`X11Backend.bind` reports that combination as
taken (and drops the variants it did get) instead of leaving a shortcut that does nothing.

The backend has its own X connection (not Qt's). It never blocks: the caller watches
:meth:`X11Backend.fileno` (``QSocketNotifier``) and calls :meth:`X11Backend.dispatch`, which
handles only events already received. A held key's auto-repeat (a release and a press
with the same server time) fires once. When the keyboard mapping changes (``MappingNotify``,
a layout switch) the combinations whose keys moved are grabbed again; one that is taken
on its new key is reported through the ``problem`` callback given to :meth:`X11Backend.bind`.
"""

from __future__ import annotations

from typing import Callable

from Xlib import X, XK, error
from Xlib import display as xdisplay

from captioner.ui.global_shortcuts.keys import Combo, x11_keysym_name

#: Modifier name -> X11 mask (Meta is the Super/Windows key, Mod4 on every common layout).
MODIFIER_MASKS = {"Ctrl": X.ControlMask, "Shift": X.ShiftMask, "Alt": X.Mod1Mask, "Meta": X.Mod4Mask}
#: The modifier bits a KeyPress state is compared on (pointer-button bits are ignored).
_MODIFIER_BITS = X.ShiftMask | X.LockMask | X.ControlMask | X.Mod1Mask | X.Mod2Mask | X.Mod3Mask | X.Mod4Mask | X.Mod5Mask


class X11Backend:
    """Key grabs on one X display.

    Args:
        display_name: ``":0"``-style name (default: ``$DISPLAY``).

    Raises:
        Xlib.error.DisplayError: the display cannot be opened.
    """

    name = "X11 key grabs"

    def __init__(self, display_name: str | None = None) -> None:
        self.display = xdisplay.Display(display_name)
        self.root = self.display.screen().root
        self.numlock_mask = self._mask_of(XK.XK_Num_Lock) or X.Mod2Mask
        #: lock-key modifier combinations a grab is repeated for
        self.lock_variants = sorted({0, X.LockMask, self.numlock_mask, X.LockMask | self.numlock_mask})
        self._grabs: dict[tuple[int, int], str] = {}  # (keycode, modifier mask) -> action id
        self._released: dict[int, int] = {}  # keycode -> server time of its last release
        self._activated: Callable[[str], None] | None = None
        self._problem: Callable[[str], None] | None = None
        self._combos: dict[str, Combo] = {}

    def _mask_of(self, keysym: int) -> int:
        """The modifier mask a keysym (Num_Lock) is mapped to, or 0."""
        keycode = self.display.keysym_to_keycode(keysym)
        if not keycode:
            return 0
        for index, keycodes in enumerate(self.display.get_modifier_mapping()):
            if keycode in keycodes:
                return 1 << index
        return 0

    def fileno(self) -> int:
        """The X connection's socket."""
        return self.display.fileno()

    def bind(self, combos: dict[str, Combo], activated: Callable[[str], None],
             problem: Callable[[str], None] | None = None) -> dict[str, str]:
        """Ungrab the previous combinations and grab ``combos``; see :class:`Backend`.

        Returns:
            action id -> why not: "already taken by another program" (BadAccess), or a key
            this keyboard layout does not have.
        """
        self._ungrab_all()
        self._activated = activated
        self._problem = problem
        self._combos = dict(combos)
        problems = {}
        for action, combo in combos.items():
            keysym = XK.string_to_keysym(x11_keysym_name(combo))
            keycode = self.display.keysym_to_keycode(keysym) if keysym else 0
            if not keycode:
                problems[action] = f"{combo.text}: this keyboard has no {combo.key} key"
                continue
            mods = 0
            for m in combo.modifiers:
                mods |= MODIFIER_MASKS[m]
            if (keycode, mods) in self._grabs:
                problems[action] = f"{combo.text} is already the shortcut of another action"
                continue
            catcher = error.CatchError(error.BadAccess)
            for extra in self.lock_variants:
                self.root.grab_key(keycode, mods | extra, False, X.GrabModeAsync, X.GrabModeAsync, onerror=catcher)
            self.display.sync()  # the errors, if any, have arrived
            if catcher.get_error() is not None:
                for extra in self.lock_variants:
                    self.root.ungrab_key(keycode, mods | extra)  # only ours are released
                self.display.sync()
                problems[action] = f"{combo.text} is already taken by another program, which gets it even in captioner"
                continue
            self._grabs[(keycode, mods)] = action
        return problems

    def dispatch(self) -> None:
        """Handle the events that have arrived (never waits for more)."""
        d = self.display
        remapped = False
        while d.pending_events():
            ev = d.next_event()
            if ev.type == X.MappingNotify and ev.request == X.MappingKeyboard:
                d.refresh_keyboard_mapping(ev)
                remapped = True  # grabbed again once every change that arrived is known
            elif ev.type == X.KeyRelease:
                self._released[ev.detail] = ev.time
            elif ev.type == X.KeyPress:
                if self._released.get(ev.detail) == ev.time:
                    continue  # auto-repeat of a held key: one action per press
                state = ev.state & _MODIFIER_BITS & ~(X.LockMask | self.numlock_mask)
                action = self._grabs.get((ev.detail, state))
                if action is not None and self._activated is not None:
                    self._activated(action)
        if remapped:
            self._remapped()

    def _remapped(self) -> None:
        """The keyboard mapping changed (a layout switch): grab again where a key moved."""
        now = {}
        for action, combo in self._combos.items():
            keysym = XK.string_to_keysym(x11_keysym_name(combo))
            now[action] = self.display.keysym_to_keycode(keysym) if keysym else 0
        if any(now.get(action) != keycode for (keycode, _m), action in self._grabs.items()):
            problems = self.bind(self._combos, self._activated or (lambda _a: None), self._problem)
            if problems and self._problem is not None:
                self._problem("After the keyboard layout changed, some shortcuts no longer work from other "
                              f"applications: {'; '.join(problems.values())}. To use other keys, open "
                              "File > Settings…")

    def _ungrab_all(self) -> None:
        for keycode, mods in self._grabs:
            for extra in self.lock_variants:
                self.root.ungrab_key(keycode, mods | extra)
        self._grabs.clear()
        self.display.sync()

    def close(self) -> None:
        """Release the grabs and the X connection."""
        try:
            self._ungrab_all()
            self.display.close()
        except Exception:  # noqa: BLE001 - the server may be gone already
            pass
