"""The caption page's appearance from its URL's query parameters, each checked against an allow-list.

A parameter is either one of the allowed values, or the request is refused (HTTP 400 with a
plain-text message naming the parameter and what it accepts). Nothing a parameter says reaches
the page as markup or CSS: the page receives the *checked* values as JSON (``/style``) and sets
them one by one through the DOM's style properties; colours are ``#rrggbb`` or a fixed name,
fonts a key of :data:`FONTS`, numbers are integers in a range.

Parameters (defaults for the caption page / the transcript page):

===========  ==============================================  ==========================
``size``     font size in CSS pixels, 10-200                  40 / 20
``color``    text colour: ``#rgb``, ``#rrggbb`` or a name     white / white
``bg``       caption box colour (same forms)                  black / black
``opacity``  caption box opacity in percent, 0-100            60 / 100
``lines``    lines shown (caption page), 1-20                 3
``align``    ``left``, ``center`` or ``right``                center / left
``font``     a key of :data:`FONTS`                           sans
``labels``   who speaks, before a line: ``auto`` (where the   auto
             speaker changes, once the engine named a speaker
             or two sources spoke), ``on`` (every line) or
             ``off``; the label is the speaker's name or id
             ("Speaker 2"), else the source's ("You")
===========  ==============================================  ==========================

The page background outside the caption box is always transparent (an OBS browser source
lays it over the video).
"""

from __future__ import annotations

import re
from typing import Mapping

#: Font families offered, as key -> CSS font stack (fonts that ship with Windows, macOS and
#: Debian's fonts-dejavu-core first).
FONTS = {
    "sans": '"DejaVu Sans", "Segoe UI", Arial, Helvetica, sans-serif',
    "serif": '"DejaVu Serif", Georgia, "Times New Roman", serif',
    "mono": '"DejaVu Sans Mono", Consolas, "Courier New", monospace',
    "system": "system-ui, sans-serif",
    "rounded": '"Arial Rounded MT Bold", "Nunito", "Varela Round", "DejaVu Sans", sans-serif',
}
#: Colour names accepted besides ``#rgb``/``#rrggbb``, with their hex value.
COLOURS = {
    "white": "#ffffff", "black": "#000000", "yellow": "#ffff00", "cyan": "#00ffff", "lime": "#00ff00",
    "green": "#008000", "magenta": "#ff00ff", "red": "#ff0000", "orange": "#ffa500", "blue": "#0000ff",
    "navy": "#000080", "gray": "#808080", "grey": "#808080", "silver": "#c0c0c0",
}
ALIGNS = ("left", "center", "right")
LABELS = ("auto", "on", "off")
#: Integer parameters: (lowest, highest).
RANGES = {"size": (10, 200), "opacity": (0, 100), "lines": (1, 20)}
#: Defaults per page (``"captions"`` = the rolling caption page, ``"transcript"`` = the whole session).
DEFAULTS = {
    "captions": {"size": 40, "color": "#ffffff", "bg": "#000000", "opacity": 60, "lines": 3, "align": "center",
                 "font": "sans", "labels": "auto"},
    "transcript": {"size": 20, "color": "#ffffff", "bg": "#000000", "opacity": 100, "lines": 20, "align": "left",
                   "font": "sans", "labels": "auto"},
}
_HEX = re.compile(r"#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_INT = re.compile(r"[0-9]{1,4}")


class AppearanceError(ValueError):
    """A query parameter is not allowed; the message names it and what it accepts (never echoes
    the value: it is shown as plain text, but there is no reason to repeat what a stranger wrote)."""


def colour(value: str) -> str | None:
    """``value`` as ``#rrggbb`` (lower case), or None when it is no allowed colour form."""
    value = value.strip()
    if value.lower() in COLOURS:
        return COLOURS[value.lower()]
    m = _HEX.fullmatch(value)
    if m is None:
        return None
    digits = m.group(1).lower()
    return "#" + (digits if len(digits) == 6 else "".join(c * 2 for c in digits))


def parse(query: Mapping[str, str], page: str = "captions") -> dict:
    """The checked appearance of ``page`` from ``query`` (every key of :data:`DEFAULTS` set).

    Args:
        query: the URL's query parameters (the last value of each name).
        page: ``"captions"`` or ``"transcript"``.

    Raises:
        AppearanceError: an unknown parameter or a value outside its allow-list.
    """
    out = dict(DEFAULTS[page])
    for name, raw in query.items():
        if name not in out:
            raise AppearanceError(f"unknown parameter {name!r:.40}: the page accepts "
                                  + ", ".join(sorted(out)))
        value = str(raw)
        if name in RANGES:
            lo, hi = RANGES[name]
            if not _INT.fullmatch(value) or not lo <= int(value) <= hi:
                raise AppearanceError(f"{name} must be a whole number from {lo} to {hi}")
            out[name] = int(value)
        elif name in ("color", "bg"):
            hexed = colour(value)
            if hexed is None:
                raise AppearanceError(f"{name} must be #rgb, #rrggbb (hex digits) or one of "
                                      + ", ".join(sorted(COLOURS)))
            out[name] = hexed
        elif name == "align":
            if value not in ALIGNS:
                raise AppearanceError("align must be one of " + ", ".join(ALIGNS))
            out[name] = value
        elif name == "labels":
            if value not in LABELS:
                raise AppearanceError("labels must be one of " + ", ".join(LABELS))
            out[name] = value
        elif name == "font":
            if value not in FONTS:
                raise AppearanceError("font must be one of " + ", ".join(FONTS))
            out[name] = value
    return out


def style_json(checked: dict) -> dict:
    """What the page's script applies: the checked values plus the font's CSS stack."""
    return dict(checked, font_family=FONTS[checked["font"]])
