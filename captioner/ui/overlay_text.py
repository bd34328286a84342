"""How the overlay lays out and draws caption text: colours, wrapping, the roll-up and the glyphs.

Pure functions over Qt text classes (no widget state): the overlay widget calls them from its
layout pass and its paint event.

* readable on any background: text is drawn with an outline and a soft shadow over a
  translucent panel; :func:`contrast_ratio` is the WCAG 2.x ratio the defaults are checked with
  (>= 4.5:1 for the partial tint on the default panel);
* wrapping by Qt's Unicode line breaker (QTextLayout, UAX #14), so Chinese/Japanese text
  without spaces and mixed CJK/Latin wrap within the width;
* a line above the newest one is shown whole or not at all (:func:`roll_up`), so the roll-up
  never leaves a stray tail of the previous turn ("to-day.") alone on the top line;
* a sound caption (issue 49, ``CaptionLine.sound``) is drawn italic with its brackets (and a
  musical note for music, :func:`~captioner.ui.caption_model.sound_caption`), and when it sits
  right above the newest line it keeps its one row (:func:`roll_up`).
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QFont, QPainterPath, QTextCharFormat, QTextLayout, QTextOption

from captioner.ui.caption_model import CaptionLine

#: A turn longer than this many visual lines above the view is trimmed (see CaptionModel.trim_front).
TRIM_SLACK = 4


@dataclass(frozen=True)
class VisualLine:
    """One laid-out line as shown: its committed part and its partial part.

    Attributes:
        final: label + committed characters on this visual line.
        partial: partial (unstable) characters on this visual line.
        width: natural text width in logical px.
        serial: :attr:`CaptionLine.serial` of the caption line it belongs to.
    """

    final: str
    partial: str
    width: float
    serial: int

    @property
    def text(self) -> str:
        """Everything shown on the line."""
        return self.final + self.partial


def relative_luminance(color: QColor) -> float:
    """WCAG 2.x relative luminance of an opaque sRGB colour, in [0, 1]."""

    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(color.redF()) + 0.7152 * lin(color.greenF()) + 0.0722 * lin(color.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """WCAG 2.x contrast ratio of two opaque colours, 1..21 (4.5 is the AA level for body text)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def panel_over(background: QColor, opacity: float, backdrop: QColor) -> QColor:
    """The overlay panel colour as seen over ``backdrop`` (alpha blending at ``opacity`` 0..1)."""
    o = max(0.0, min(1.0, opacity))
    return QColor.fromRgbF(*(o * x + (1.0 - o) * y for x, y in zip(
        (background.redF(), background.greenF(), background.blueF()),
        (backdrop.redF(), backdrop.greenF(), backdrop.blueF()))))


def glyph_path(tl, start: int, length: int, origin: QPointF) -> QPainterPath:
    """Outline path of characters ``[start, start+length)`` of a laid-out line (a ``QTextLine``), at ``origin``."""
    path = QPainterPath()
    if length <= 0:
        return path
    for run in tl.glyphRuns(start, length):
        raw = run.rawFont()
        for index, pos in zip(run.glyphIndexes(), run.positions()):
            glyph = raw.pathForGlyph(index)
            glyph.translate(origin + pos)
            path.addPath(glyph)
    return path


def roll_up(collected: list, rows: int) -> list:
    """The visual lines to show, oldest first.

    Args:
        collected: ``(layout, line index, CaptionLine)`` for every visual line, oldest first.
        rows: how many visual lines fit.

    Returns:
        The newest caption line's last ``rows`` visual lines, then older caption lines above it
        only while each fits *whole* (a turn's tail fragment alone on the top line reads as a
        stray word). A sound caption right above the newest line keeps one row when ``rows > 1``
        (the newest line then gets one row less): it is shown once it is heard, not once the
        turn being said ends, and it takes no more than its one line.
    """
    groups: list[list] = []
    for entry in collected:
        if groups and groups[-1][0][2] is entry[2]:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    shown: list = []
    reserve = int(rows > 1 and len(groups) > 1 and bool(getattr(groups[-2][0][2], "sound", ""))
                  and not getattr(groups[-1][0][2], "sound", ""))
    for group in reversed(groups):
        room = rows - len(shown)
        if room <= 0:
            break
        if not shown:
            shown = group[-(room - reserve):]
        elif len(group) <= room:
            shown = group + shown
        else:
            break
    return shown


def lay_out(lines: list[CaptionLine], font: QFont, width: float, rows: int, partial_color: QColor):
    """Wrap every caption line at ``width`` and pick what is shown.

    Args:
        lines: the caption model's lines, oldest first.
        font: the caption font.
        width: text width in logical px.
        rows: visual lines that fit.
        partial_color: colour of the partial (italic) tail.

    Returns:
        ``(shown, visual, trims)``: the shown ``(layout, index, CaptionLine)`` entries, their
        :class:`VisualLine` texts, and ``(CaptionLine, cut)`` pairs for turns far longer than the
        view whose scrolled-out head may be dropped at character ``cut`` (a visual line start).
    """
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    partial_fmt = QTextCharFormat()
    partial_fmt.setFontItalic(True)
    partial_fmt.setForeground(partial_color)
    label_fmt = QTextCharFormat()
    label_fmt.setFontWeight(QFont.Weight.Bold)
    sound_fmt = QTextCharFormat()
    sound_fmt.setFontItalic(True)
    collected: list[tuple[QTextLayout, int, CaptionLine]] = []
    trims: list[tuple[CaptionLine, int]] = []
    for line in lines:
        text = line.text
        if not text:
            continue
        layout = QTextLayout(text, font)
        layout.setTextOption(option)
        fmts = []
        n_label = len(line.shown_label)
        n_final = n_label + len(line.final)
        if n_label:
            r = QTextLayout.FormatRange()
            r.start, r.length, r.format = 0, n_label, label_fmt
            fmts.append(r)
        if getattr(line, "sound", "") and line.final:  # a sound caption: italic, apart from speech
            r = QTextLayout.FormatRange()
            r.start, r.length, r.format = n_label, len(line.final), sound_fmt
            fmts.append(r)
        if line.partial:
            r = QTextLayout.FormatRange()
            r.start, r.length, r.format = n_final, len(line.partial), partial_fmt
            fmts.append(r)
        layout.setFormats(fmts)
        layout.beginLayout()
        starts = []
        while True:
            tl = layout.createLine()
            if not tl.isValid():
                break
            tl.setLineWidth(width)
            starts.append(tl.textStart())
        layout.endLayout()
        for i in range(layout.lineCount()):
            collected.append((layout, i, line))
        if len(starts) > rows + TRIM_SLACK:
            cut = starts[len(starts) - rows - 1]
            if len(line.shown_label) <= cut <= n_final:
                trims.append((line, cut))
    shown = roll_up(collected, rows)
    visual = []
    for layout, i, line in shown:
        tl = layout.lineAt(i)
        a, b = tl.textStart(), tl.textStart() + tl.textLength()
        n_final = len(line.shown_label) + len(line.final)
        text = line.text
        visual.append(VisualLine(final=text[a: min(b, n_final)], partial=text[max(a, n_final): b],
                                 width=tl.naturalTextWidth(), serial=line.serial))
    return shown, visual, trims
