"""The overlay's small marks: the live turn indicator and the empty-state hint.

The indicator (top-right corner, :data:`DOT_RADIUS`) shows, from
:class:`~captioner.events.VoiceActivity` events of any backend:

* speaking: a filled dot, brighter with the speech probability;
* pause: a ring (the speaker may go on);
* turn over: a filled square, the "stop" sign (the next words start a new line);
* idle (no run, or cleared): nothing.

Each mark has a ring in the outline colour round it, so it reads on the panel and on any
window behind a translucent or empty overlay (the old 8 px dot at 25 % opacity vanished once
a turn ended).
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen

#: Inner padding (logical px) of the overlay's panel, round the text, the hint and the notice.
MARGIN = 12
#: Radius (logical px) of the indicator, and its distance from the panel's top-right corner.
DOT_RADIUS = 7.0
DOT_INSET = 7.0
#: What each indicator state means, for tooltips and the README.
INDICATOR_MEANING = {"speaking": "someone is speaking", "pause": "a pause inside a turn",
                     "turn_over": "the turn is over", "idle": "not captioning"}

#: Hint texts, longest first: the first that fits is shown.
HINTS = ("Captions appear here. Drag to move, drag the edges to resize.", "Captions appear here.", "Captions")
HINT_FLAGS = int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap)
#: Smallest hint font (pt).
HINT_MIN_PT = 7.0


def indicator_rect(width: float) -> QRectF:
    """Where the indicator is drawn in an overlay ``width`` px wide (widget coordinates)."""
    c = QPointF(width - DOT_INSET - DOT_RADIUS, DOT_INSET + DOT_RADIUS)
    return QRectF(c.x() - DOT_RADIUS, c.y() - DOT_RADIUS, 2 * DOT_RADIUS, 2 * DOT_RADIUS)


def paint_indicator(painter: QPainter, rect: QRectF, state: str, speech: float, colour: QColor,
                    outline: QColor) -> None:
    """Draw the indicator for ``state`` (see the module doc) in ``colour`` with an ``outline`` ring."""
    if state == "idle":
        return
    fill = QColor(colour)
    ring = QPen(outline, 2.0)
    inner = rect.adjusted(1.0, 1.0, -1.0, -1.0)
    if state == "speaking":
        fill.setAlphaF(0.6 + 0.4 * max(0.0, min(1.0, speech)))
        painter.setPen(ring)
        painter.setBrush(fill)
        painter.drawEllipse(inner)
    elif state == "pause":
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(outline, 5.0))
        painter.drawEllipse(inner.adjusted(1.5, 1.5, -1.5, -1.5))
        painter.setPen(QPen(fill, 2.5))
        painter.drawEllipse(inner.adjusted(1.5, 1.5, -1.5, -1.5))
    else:  # turn over
        painter.setPen(ring)
        painter.setBrush(fill)
        side = inner.width() * 0.8
        painter.drawRoundedRect(QRectF(inner.center().x() - side / 2, inner.center().y() - side / 2, side, side), 2, 2)


def largest_font(base: QFont, text: str, area: QRectF, flags: int, least: float) -> QFont | None:
    """``base`` at the largest point size, from its own (at least ``least``) down to ``least``,
    in which ``text`` drawn with ``flags`` fits ``area`` whole; None when not even ``least`` fits.
    Steps of 1 pt, of 0.5 pt below 12 pt."""
    font = QFont(base)
    size = max(least, base.pointSizeF())
    while size >= least:
        font.setPointSizeF(size)
        need = QFontMetricsF(font).boundingRect(area, flags, text)
        if need.width() <= area.width() and need.height() <= area.height():
            return font
        size = size - 1.0 if size > 12 else size - 0.5
    return None


def hint_layout(area: QRectF, caption_font: QFont) -> tuple[QFont, str]:
    """The longest hint that fits ``area``, in the largest font up to the caption font that fits
    (never clipped); ``""`` when not even the shortest fits at :data:`HINT_MIN_PT`."""
    for text in HINTS:
        font = largest_font(caption_font, text, area, HINT_FLAGS, HINT_MIN_PT)
        if font is not None:
            return font, text
    font = QFont(caption_font)
    font.setPointSizeF(HINT_MIN_PT)
    return font, ""
