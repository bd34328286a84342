"""Drawing the overlay's caption lines from a cache of rendered words.

A caption is drawn as outlined, shadowed glyph paths (readable over any background). Stroking
those paths is the costly part of a paint: 2-6 ms per line for each of the shadow and the
outline at the default 28 pt (measured on the 2-core test machine, offscreen), so a paint of
the shown lines took 25-45 ms of the GUI thread, and the overlay repaints at every partial
(issue 30: the event loop's timer lateness).

Between two paints almost every word is the same, so each word is rendered once into two
small images (shadow + outline; fill) and every paint only draws images: a new partial word
costs one word's strokes, the rest is a few dozen ``drawImage`` calls. Words are split at
spaces and where the label, the final and the partial text meet (they differ in weight,
slant and colour). Each row draws every word's shadow and outline layer before any fill, as
the direct drawing did, so a neighbour's outline never covers a letter. A word's image holds
its sub-pixel position (to 1/8 px) in its key, so the glyphs land where the layout put them.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen

from captioner.ui.overlay_text import glyph_path

#: Rendered words kept (two images each, ~10-30 kB per word at 28 pt): a few screens of words.
CACHE_WORDS = 256
_Q = 8  # sub-pixel steps of a word's position


def _chunks(text: str, a: int, b: int, n_label: int, n_final: int):
    """``(start, end, kind)`` of the non-space runs of ``text[a:b]``, kind 0 label, 1 final, 2 partial
    (the caller makes a sound caption's final text kind 3: italic, so never the same image)."""
    cuts = sorted({a, b, *(c for c in (n_label, n_final) if a < c < b)})
    for lo, hi in zip(cuts, cuts[1:]):
        kind = 0 if lo < n_label else 1 if lo < n_final else 2
        i = lo
        while i < hi:
            while i < hi and text[i].isspace():
                i += 1
            j = i
            while j < hi and not text[j].isspace():
                j += 1
            if j > i:
                yield i, j, kind
            i = j


class WordImages:
    """LRU cache of rendered words: ``(under, fill, dx, dy)`` per word, style and sub-pixel offset.

    ``under`` is the shadow and outline, ``fill`` the glyphs' fill, both ``QImage``
    (ARGB32 premultiplied) at the painter's device pixel ratio; ``(dx, dy)`` (logical px) is
    where the images' top-left corner goes relative to the word's integer position.

    Args:
        size: most words kept; the least recently drawn is dropped first.
    """

    def __init__(self, size: int = CACHE_WORDS) -> None:
        self.size = size
        self._images: OrderedDict = OrderedDict()
        self.misses = 0

    def clear(self) -> None:
        """Forget every word (font or colours changed: their keys never match again anyway)."""
        self._images.clear()

    def get(self, key, render):
        hit = self._images.get(key)
        if hit is not None:
            self._images.move_to_end(key)
            return hit
        self.misses += 1
        hit = self._images[key] = render()
        if len(self._images) > self.size:
            self._images.popitem(last=False)
        return hit


def paint_lines(painter: QPainter, shown: list, left: float, top: float, line_height: float, font: QFont,
                text_color: QColor, partial_color: QColor, outline_color: QColor,
                cache: WordImages | None = None) -> None:
    """Draw the shown visual lines from ``top`` down: a soft shadow, the outline, then the fill.

    Args:
        shown: ``(QTextLayout, line index, CaptionLine)`` per visual line, top to bottom.
        left, top, line_height: logical px.
        cache: the widget's :class:`WordImages` (a throwaway one when None).

    The partial tail gets the same outline and shadow as the final text (only tint and italic differ).
    """
    cache = cache if cache is not None else WordImages()
    width = max(2.0, font.pointSizeF() / 9.0)
    shadow_colour = QColor(outline_color)
    shadow_colour.setAlphaF(0.45)
    shadow_offset = max(1.5, font.pointSizeF() / 14.0)
    pad = int(math.ceil(width * 0.75 + shadow_offset)) + 2  # half the shadow pen, its offset, antialiasing
    dpr = painter.device().devicePixelRatioF() if painter.device() is not None else 1.0
    style = (font.key(), text_color.rgba(), partial_color.rgba(), outline_color.rgba(), dpr)
    for row, (layout, i, line) in enumerate(shown):
        tl = layout.lineAt(i)
        # rows on whole pixels: a line that moves up a row (the roll-up) reuses its words' images
        origin = QPointF(left, round(top + row * line_height) - tl.y())
        a, b = tl.textStart(), tl.textStart() + tl.textLength()
        n_label = len(line.shown_label)
        n_final = n_label + len(line.final)
        y = origin.y() + tl.y()
        iy = math.floor(y)
        fy = round((y - iy) * _Q)
        pieces = []
        sound = bool(getattr(line, "sound", ""))
        for s, e, kind in _chunks(line.text, a, b, n_label, n_final):
            kind = 3 if sound and kind == 1 else kind
            x = origin.x() + tl.cursorToX(s)[0]
            ix = math.floor(x)
            fx = round((x - ix) * _Q)
            if fx == _Q:
                ix, fx = ix + 1, 0
            key = (line.text[s:e], kind, fx, fy, style)

            def render(s=s, e=e, kind=kind, x=x, fx=fx):
                # the word's glyphs with its start at (fx/_Q, fy/_Q) from its integer position
                at = QPointF(origin.x() - x + fx / _Q, origin.y() - y + fy / _Q)
                fill_colour = partial_color if kind == 2 else text_color
                return _render(glyph_path(tl, s, e - s, at), pad, dpr, width, shadow_offset, shadow_colour,
                               outline_color, fill_colour)

            under, fill, dx, dy = cache.get(key, render)
            pieces.append((ix + dx, iy + dy, under, fill))
        for px, py, under, _ in pieces:
            painter.drawImage(QPointF(px, py), under)
        for px, py, _, fill in pieces:
            painter.drawImage(QPointF(px, py), fill)


def _render(path, pad, dpr, width, shadow_offset, shadow_colour, outline_color, fill_colour):
    """``(under, fill, dx, dy)``: ``path``'s shadow + outline and fill images, and where their
    top-left corner goes relative to the path's coordinate origin (integer logical px)."""
    box = path.boundingRect()
    dx, dy = math.floor(box.left()) - pad, math.floor(box.top()) - pad
    w, h = math.ceil(box.right()) + pad - dx, math.ceil(box.bottom()) + pad - dy
    path = path.translated(-dx, -dy)
    images = []
    for layer in ("under", "fill"):
        img = QImage(max(1, math.ceil(w * dpr)), max(1, math.ceil(h * dpr)), QImage.Format.Format_ARGB32_Premultiplied)
        img.setDevicePixelRatio(dpr)
        img.fill(0)
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        if layer == "under":
            shadow = QPen(shadow_colour, width * 1.5)
            shadow.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
            p.strokePath(path.translated(shadow_offset, shadow_offset), shadow)
            stroke = QPen(outline_color, width)
            stroke.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
            p.strokePath(path, stroke)
        else:
            p.fillPath(path, fill_colour)
        p.end()
        images.append(img)
    return images[0], images[1], dx, dy


__all__ = ["CACHE_WORDS", "WordImages", "paint_lines"]
