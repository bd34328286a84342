"""Key combinations as the settings store them (QKeySequence portable text) -> platform codes.

A shortcut is one combination such as ``"Ctrl+Shift+S"``, ``"Meta+F9"`` or ``"Alt+Space"``:
modifiers, then one key, joined by ``+`` (Qt's ``QKeySequence.toString()`` portable format;
``"Ctrl++"`` is Ctrl and the plus key). :func:`parse` splits it; the tables here give each
platform's names and codes for it. Pure Python (no Qt): the platform modules and the tests use it.

Modifier names: ``Ctrl``, ``Shift``, ``Alt``, ``Meta`` (the Windows/Super key on Linux and
Windows; on macOS Qt's ``Ctrl`` is the Command key and ``Meta`` is Control, as Qt maps them).
"""

from __future__ import annotations

from dataclasses import dataclass

MODIFIERS = ("Ctrl", "Shift", "Alt", "Meta")


class ComboError(ValueError):
    """The combination cannot be used as a global shortcut (the message says why)."""


@dataclass(frozen=True)
class Combo:
    """One key combination.

    Attributes:
        modifiers: subset of :data:`MODIFIERS`, in that order.
        key: Qt's name of the key: ``"S"``, ``"5"``, ``"F9"``, ``"Space"``, ``"PgUp"``, ``","``...
    """

    modifiers: tuple[str, ...]
    key: str

    @property
    def text(self) -> str:
        """Back to the portable text (``"Ctrl+Shift+S"``)."""
        return "+".join(self.modifiers + (self.key,))


def parse(text: str) -> Combo:
    """``"Ctrl+Shift+S"`` -> ``Combo(("Ctrl", "Shift"), "S")``.

    Raises:
        ComboError: empty text, an unknown modifier, no key, or several chords
            (``"Ctrl+K, Ctrl+C"``: a global shortcut is one combination).
    """
    text = (text or "").strip()
    if not text:
        raise ComboError("no key chosen")
    if ", " in text:
        raise ComboError(f"{text} is a sequence of several keys; a global shortcut is one combination")
    parts = text.split("+")
    if text.endswith("++") or text == "+":
        parts = parts[:-2] + ["+"]  # the plus key itself
    *mods, key = parts
    unknown = [m for m in mods if m not in MODIFIERS]
    if unknown or not key:
        raise ComboError(f"{text} is not a key combination (modifiers are {', '.join(MODIFIERS)})")
    key = key.upper() if len(key) == 1 else key
    return Combo(tuple(m for m in MODIFIERS if m in mods), key)


#: Keys that may be a desktop-wide shortcut with no Ctrl, Alt or Meta: they type nothing.
STANDALONE_KEYS = frozenset({f"F{n}" for n in range(1, 36)} | {"Pause", "Print", "ScrollLock", "Menu"})


def check_global(combo: Combo) -> Combo:
    """``combo`` if it can be taken desktop-wide.

    Raises:
        ComboError: a key that types or edits (a letter, digit, Space, Return, an arrow...) with
            no Ctrl, Alt or Meta (Shift alone does not count): grabbed, no other application
            could get it any more ("S" would stop you typing "s" anywhere).
    """
    if not set(combo.modifiers) & {"Ctrl", "Alt", "Meta"} and combo.key not in STANDALONE_KEYS:
        raise ComboError(f"{combo.text} alone would be taken from every other application (you could not type "
                         "it there); add Ctrl, Alt or the Super key")
    return combo


#: Qt key name -> X11 keysym name (letters are lower-case keysyms; digits and F-keys are their own names).
X11_KEYSYMS = {
    "Space": "space", "Esc": "Escape", "Tab": "Tab", "Backspace": "BackSpace", "Return": "Return",
    "Enter": "KP_Enter", "Ins": "Insert", "Del": "Delete", "Home": "Home", "End": "End", "PgUp": "Prior",
    "PgDown": "Next", "Left": "Left", "Up": "Up", "Right": "Right", "Down": "Down", "Pause": "Pause",
    "Print": "Print", "ScrollLock": "Scroll_Lock", "Menu": "Menu",
    ",": "comma", ".": "period", "/": "slash", ";": "semicolon", "'": "apostrophe", "[": "bracketleft",
    "]": "bracketright", "\\": "backslash", "-": "minus", "=": "equal", "`": "grave", "+": "plus",
}


def x11_keysym_name(combo: Combo) -> str:
    """The X11 keysym name of the combination's key (``"s"``, ``"F9"``, ``"Prior"``)."""
    if len(combo.key) == 1 and combo.key.isalpha():
        return combo.key.lower()
    return X11_KEYSYMS.get(combo.key, combo.key)


#: Qt key name -> Windows virtual-key code (WinUser.h VK_*); letters and digits are their ASCII codes.
WINDOWS_VK = {
    "Space": 0x20, "Esc": 0x1B, "Tab": 0x09, "Backspace": 0x08, "Return": 0x0D, "Enter": 0x0D,
    "Ins": 0x2D, "Del": 0x2E, "Home": 0x24, "End": 0x23, "PgUp": 0x21, "PgDown": 0x22, "Left": 0x25,
    "Up": 0x26, "Right": 0x27, "Down": 0x28, "Pause": 0x13, "Print": 0x2C, "ScrollLock": 0x91,
    ";": 0xBA, "=": 0xBB, ",": 0xBC, "-": 0xBD, ".": 0xBE, "/": 0xBF, "`": 0xC0, "[": 0xDB, "\\": 0xDC,
    "]": 0xDD, "'": 0xDE, "+": 0xBB,
}
#: RegisterHotKey modifier flags (MOD_ALT, MOD_CONTROL, MOD_SHIFT, MOD_WIN).
WINDOWS_MODS = {"Alt": 0x0001, "Ctrl": 0x0002, "Shift": 0x0004, "Meta": 0x0008}


def windows_vk(combo: Combo) -> int:
    """The virtual-key code of the combination's key.

    Raises:
        ComboError: a key with no code here.
    """
    key = combo.key
    if len(key) == 1 and (key.isalpha() or key.isdigit()):
        return ord(key.upper())
    if key.startswith("F") and key[1:].isdigit() and 1 <= int(key[1:]) <= 24:
        return 0x70 + int(key[1:]) - 1
    if key in WINDOWS_VK:
        return WINDOWS_VK[key]
    raise ComboError(f"the key {key} cannot be a global shortcut on Windows")


#: Qt key name -> macOS virtual key code (Carbon Events.h kVK_*; the ANSI layout's positions).
MAC_KEYCODES = {
    "A": 0x00, "S": 0x01, "D": 0x02, "F": 0x03, "H": 0x04, "G": 0x05, "Z": 0x06, "X": 0x07, "C": 0x08,
    "V": 0x09, "B": 0x0B, "Q": 0x0C, "W": 0x0D, "E": 0x0E, "R": 0x0F, "Y": 0x10, "T": 0x11, "1": 0x12,
    "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "=": 0x18, "9": 0x19, "7": 0x1A, "-": 0x1B,
    "8": 0x1C, "0": 0x1D, "]": 0x1E, "O": 0x1F, "U": 0x20, "[": 0x21, "I": 0x22, "P": 0x23, "Return": 0x24,
    "L": 0x25, "J": 0x26, "'": 0x27, "K": 0x28, ";": 0x29, "\\": 0x2A, ",": 0x2B, "/": 0x2C, "N": 0x2D,
    "M": 0x2E, ".": 0x2F, "Tab": 0x30, "Space": 0x31, "`": 0x32, "Backspace": 0x33, "Esc": 0x35,
    "F1": 0x7A, "F2": 0x78, "F3": 0x63, "F4": 0x76, "F5": 0x60, "F6": 0x61, "F7": 0x62, "F8": 0x64,
    "F9": 0x65, "F10": 0x6D, "F11": 0x67, "F12": 0x6F, "Home": 0x73, "PgUp": 0x74, "Del": 0x75, "End": 0x77,
    "PgDown": 0x79, "Left": 0x7B, "Right": 0x7C, "Down": 0x7D, "Up": 0x7E,
}
#: Carbon modifier flags: Qt's Ctrl is Command (cmdKey), Meta is Control (controlKey).
MAC_MODS = {"Ctrl": 0x0100, "Shift": 0x0200, "Alt": 0x0800, "Meta": 0x1000}


def mac_keycode(combo: Combo) -> int:
    """The macOS virtual key code of the combination's key.

    Raises:
        ComboError: a key with no code here.
    """
    if combo.key not in MAC_KEYCODES:
        raise ComboError(f"the key {combo.key} cannot be a global shortcut on macOS")
    return MAC_KEYCODES[combo.key]


def portal_trigger(combo: Combo) -> str:
    """The combination in the XDG shortcuts spec's notation, the portal's ``preferred_trigger``
    (``"CTRL+SHIFT+s"``, ``"LOGO+F9"``): modifiers upper-case, then the xkb keysym name."""
    names = {"Ctrl": "CTRL", "Shift": "SHIFT", "Alt": "ALT", "Meta": "LOGO"}
    return "+".join([names[m] for m in combo.modifiers] + [x11_keysym_name(combo)])
