"""CaptionOverlay: the frameless, always-on-top caption window over every other window.

What it guarantees (issue #4, DESIGN section 6):

* never takes keyboard focus (``Qt.WindowDoesNotAcceptFocus``, shown without
  activation, a tool window that is not in the task bar);
* readable on any background: a translucent rounded panel whose opacity the user
  sets (0.7 by default), and text drawn with an outline and a soft shadow;
* ``lines`` (1-5) visual lines, newest at the bottom; committed text never changes,
  the partial tail is italic in a pale tint, with the same outline and shadow
  (>= 4.5:1 against the default panel, see :func:`contrast_ratio`);
* wrapping by Qt's Unicode line breaker (QTextLayout, UAX #14), so Chinese/Japanese
  text without spaces and mixed CJK/Latin wrap within the width;
* a finished turn closes its line; the next turn starts a new line with its source
  label. A line above the newest one is shown whole or not at all, so the roll-up
  never leaves a stray tail of the previous turn ("to-day.") alone on the top line;
* a small live dot in the top-right corner shows speaking (filled, brighter with the
  speech probability), pause (a ring) or turn over (faint), from
  :class:`~captioner.events.VoiceActivity` events of any backend;
* click-through (input transparent) or draggable/resizable;
* position and size remembered per screen in logical pixels, clamped back onto an
  existing screen when a monitor is gone.

On Wayland a client cannot force itself on top; :func:`always_on_top_note` returns
what to tell the user (run under XWayland with ``QT_QPA_PLATFORM=xcb`` or add a
compositor rule) instead of offering a switch that does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPen,
    QPaintEvent,
    QScreen,
    QTextCharFormat,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import QLabel, QWidget

from captioner.engine.qt_emit import emit
from captioner.events import Event
from captioner.ui.caption_model import CaptionLine, CaptionModel
from captioner.ui.settings import Keys, Settings

#: Inner padding of the panel, logical px.
MARGIN = 12
#: Width in logical px of the border band that resizes instead of moving.
RESIZE_BAND = 10
#: A turn longer than this many visual lines above the view is trimmed (see CaptionModel.trim_front).
_TRIM_SLACK = 4
#: The most caption lines the overlay shows, however tall it is made (the setting's maximum).
MAX_LINES = int(Keys.OVERLAY_LINES.maximum)
#: Radius (logical px) of the live indicator dot, and its distance from the panel's top-right corner.
DOT_RADIUS = 4.0
DOT_INSET = 8.0


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


def _glyph_path(tl, start: int, length: int, origin: QPointF) -> QPainterPath:
    """Outline path of characters ``[start, start+length)`` of a laid-out line, at ``origin``."""
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


def _roll_up(collected: list, rows: int) -> list:
    """The visual lines to show, oldest first: the newest caption line's last ``rows`` visual
    lines, then older caption lines above it only while each fits *whole* (a turn's tail
    fragment alone on the top line reads as a stray word)."""
    groups: list[list] = []
    for entry in collected:
        if groups and groups[-1][0][2] is entry[2]:
            groups[-1].append(entry)
        else:
            groups.append([entry])
    shown: list = []
    for group in reversed(groups):
        room = rows - len(shown)
        if room <= 0:
            break
        if not shown:
            shown = group[-room:]
        elif len(group) <= room:
            shown = group + shown
        else:
            break
    return shown


def screen_key(screen: QScreen) -> str:
    """Stable identity of a screen for remembered geometry: name and logical size."""
    size = screen.geometry().size()
    return f"{screen.name() or 'screen'} {size.width()}x{size.height()}"


def clamp_rect(rect: QRect, available: QRect) -> QRect:
    """Move (and if needed shrink) ``rect`` so it lies wholly inside ``available``.

    Args:
        rect: overlay geometry in logical px.
        available: a screen's available geometry in logical px.

    Returns:
        A rectangle of at most the available size, inside it.
    """
    w = min(max(rect.width(), 1), available.width())
    h = min(max(rect.height(), 1), available.height())
    x = min(max(rect.x(), available.left()), available.left() + available.width() - w)
    y = min(max(rect.y(), available.top()), available.top() + available.height() - h)
    return QRect(x, y, w, h)


def always_on_top_note(platform_name: str | None = None) -> str:
    """What to tell the user when "always on top" cannot be forced, or ``""``.

    Args:
        platform_name: ``QGuiApplication.platformName()``; read from the running app
            when ``None``.
    """
    name = platform_name if platform_name is not None else QGuiApplication.platformName()
    if name != "wayland":
        return ""
    return (
        "On Wayland an app cannot keep its own window above others, so the caption overlay may go behind "
        "the active window. Start captioner with QT_QPA_PLATFORM=xcb to run it under XWayland, or add a "
        "'keep above' rule for the window titled 'Captions' in your compositor (KDE: Window Rules; "
        "GNOME: the 'Always on top' window menu entry)."
    )


class CaptionOverlay(QWidget):
    """The caption window.

    Args:
        settings: typed settings; the overlay reads its look from them and writes its
            geometry back. ``None`` uses the defaults and remembers nothing.

    Signals:
        geometry_saved(str): the screen key whose geometry was just stored.
        click_through_changed(bool): click-through switched on/off.
    """

    geometry_saved = Signal(str)
    click_through_changed = Signal(bool)

    def __init__(self, settings: Settings | None = None) -> None:
        super().__init__(None)
        self.settings = settings
        self.setWindowTitle("Captions")
        self.setObjectName("CaptionOverlay")
        self._click_through = False
        self.setWindowFlags(self._flags())
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground, True)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setMouseTracking(True)
        self.setMinimumSize(QSize(160, 40))

        self.model = CaptionModel(history=2, show_labels=True)
        self._visual: list[VisualLine] = []
        self._shown: list[tuple[QTextLayout, int, CaptionLine]] = []
        self._layout_rev = -1
        self._layout_width = -1
        self._drag: tuple[QPoint, QRect, Qt.Edge | None] | None = None
        self._resized_by_user = False  # an edge drag since the last save: the height picks the line count

        self._notice: QLabel | None = None  # a problem told on the overlay (see show_notice)
        self._notice_timer = QTimer(self)
        self._notice_timer.setSingleShot(True)
        self._notice_timer.timeout.connect(self.hide_notice)

        self._save_timer = QTimer(self)
        self._save_timer.setSingleShot(True)
        self._save_timer.setInterval(400)
        self._save_timer.timeout.connect(self.save_geometry)
        self._restoring = False

        self.apply_settings()
        app = QGuiApplication.instance()
        if app is not None:
            app.screenRemoved.connect(self._on_screen_removed)

    # -- configuration ------------------------------------------------------------------------
    def _flags(self) -> Qt.WindowType:
        flags = (
            Qt.WindowType.Tool
            | Qt.WindowType.FramelessWindowHint
            | Qt.WindowType.WindowStaysOnTopHint
            | Qt.WindowType.WindowDoesNotAcceptFocus
        )
        if self._click_through:
            flags |= Qt.WindowType.WindowTransparentForInput
        return flags

    def apply_settings(self) -> None:
        """Re-read look and behaviour from :attr:`settings` (after the settings dialog)."""
        get = self.settings.get if self.settings is not None else (lambda key: key.default)
        self.max_lines = int(get(Keys.OVERLAY_LINES))
        self.model.set_history(MAX_LINES)  # kept for the most lines a taller overlay can show
        self.model.show_labels = bool(get(Keys.OVERLAY_SOURCE_LABELS))
        font = QFont(get(Keys.OVERLAY_FONT_FAMILY)) if get(Keys.OVERLAY_FONT_FAMILY) else QFont()
        font.setPointSize(int(get(Keys.OVERLAY_FONT_SIZE)))
        font.setStyleStrategy(QFont.StyleStrategy.PreferAntialias)
        self.caption_font = font
        self.text_color = QColor(get(Keys.OVERLAY_TEXT_COLOR))
        self.partial_color = QColor(get(Keys.OVERLAY_PARTIAL_COLOR))
        self.background_color = QColor(get(Keys.OVERLAY_BACKGROUND_COLOR))
        self.opacity = float(get(Keys.OVERLAY_OPACITY))
        self.outline_color = QColor(0, 0, 0) if self.text_color.lightnessF() >= 0.5 else QColor(255, 255, 255)
        self.set_click_through(bool(get(Keys.OVERLAY_CLICK_THROUGH)), persist=False)
        self._layout_rev = -1
        self.setMinimumHeight(int(self._line_height() + 2 * MARGIN))
        if self.height() != self.preferred_height():
            self.fit_height()
        self.update()

    def fit_height(self) -> None:
        """Resize to :meth:`preferred_height`, keeping the bottom edge (captions grow upwards),
        clamped onto the screen's available area (at the top edge it grows downwards instead)."""
        g = self.geometry()
        h = self.preferred_height()
        self.setGeometry(self.clamped(QRect(g.x(), g.y() + g.height() - h, g.width(), h)))

    def screen_area(self, rect: QRect | None = None) -> QRect | None:
        """Available geometry of the screen holding ``rect``'s centre (default: the overlay's)."""
        centre = (rect or self.geometry()).center()
        screen = QGuiApplication.screenAt(centre) or self.screen() or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen is not None else None

    def clamped(self, rect: QRect) -> QRect:
        """``rect`` moved (and if needed shrunk) onto its screen's available area."""
        area = self.screen_area(rect)
        return clamp_rect(rect, area) if area is not None else rect

    def lines_that_fit(self) -> int:
        """Caption lines the current height holds (1 .. :data:`MAX_LINES`): a taller overlay shows more."""
        return max(1, min(MAX_LINES, int((self.height() - 2 * MARGIN + 1) // self._line_height())))

    def _line_height(self) -> float:
        return QFontMetricsF(self.caption_font).lineSpacing()

    def preferred_height(self) -> int:
        """Height (logical px) that shows exactly :attr:`max_lines` lines."""
        return int(round(self.max_lines * self._line_height() + 2 * MARGIN))

    # -- captions -----------------------------------------------------------------------------
    def apply_event(self, event: Event) -> None:
        """Feed one caption event (text delta, turn boundary, voice activity); repaints when needed."""
        if self.model.apply(event):
            self.update()

    def clear(self) -> None:
        """Remove every caption (new run)."""
        self.model.clear()
        self.update()

    def _shown_lines(self) -> int:
        return self.lines_that_fit()

    def visible_lines(self) -> list[VisualLine]:
        """The visual lines currently shown, top to bottom (the overlay's text model).

        As many as fit the current height (:meth:`lines_that_fit`); the line setting
        sets that height (:meth:`fit_height`).
        """
        self._relayout()
        return list(self._visual)

    def visible_text(self) -> str:
        """Shown text, visual lines joined with newlines (for tests and accessibility)."""
        return "\n".join(v.text for v in self.visible_lines())

    def _text_width(self) -> float:
        return max(20.0, self.width() - 2 * MARGIN)

    def _relayout(self) -> None:
        width = self._text_width()
        if self._layout_rev == self.model.revision and self._layout_width == width:
            return
        option = QTextOption()
        option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        partial_fmt = QTextCharFormat()
        partial_fmt.setFontItalic(True)
        partial_fmt.setForeground(self.partial_color)
        label_fmt = QTextCharFormat()
        label_fmt.setFontWeight(QFont.Weight.Bold)
        collected: list[tuple[QTextLayout, int, CaptionLine]] = []
        trims: list[tuple[CaptionLine, int]] = []
        for line in self.model.lines:
            text = line.text
            if not text:
                continue
            layout = QTextLayout(text, self.caption_font)
            layout.setTextOption(option)
            fmts = []
            n_label = len(line.shown_label)
            n_final = n_label + len(line.final)
            if n_label:
                r = QTextLayout.FormatRange()
                r.start, r.length, r.format = 0, n_label, label_fmt
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
            # a turn far longer than the view: drop its scrolled-out head at a visual line start
            if len(starts) > self._shown_lines() + _TRIM_SLACK:
                cut = starts[len(starts) - self._shown_lines() - 1]
                if len(line.shown_label) <= cut <= n_final:
                    trims.append((line, cut))
        shown = collected[-self._shown_lines() :]

        fit = max(1, int((self.height() - 2 * MARGIN + 1) // self._line_height()))
        shown = _roll_up(collected, min(self.max_lines, fit))
        visual = []
        for layout, i, line in shown:
            tl = layout.lineAt(i)
            a, b = tl.textStart(), tl.textStart() + tl.textLength()
            n_final = len(line.shown_label) + len(line.final)
            text = line.text
            visual.append(
                VisualLine(
                    final=text[a : min(b, n_final)],
                    partial=text[max(a, n_final) : b],
                    width=tl.naturalTextWidth(),
                    serial=line.serial,
                )
            )
        self._shown = shown
        self._visual = visual
        self._layout_rev = self.model.revision
        self._layout_width = width
        if trims:
            for line, cut in trims:
                self.model.trim_front(line, cut)
            self._relayout()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        """Draw the translucent panel and the last ``max_lines`` visual lines, bottom-aligned."""
        self._relayout()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        bg = QColor(self.background_color)
        bg.setAlphaF(max(0.0, min(1.0, self.opacity)))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(bg)
        painter.drawRoundedRect(QRectF(self.rect()), 10, 10)
        if not self._click_through:
            # a faint frame tells the user the overlay can be grabbed
            frame = QColor(self.text_color)
            frame.setAlphaF(0.25)
            painter.setPen(frame)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 10, 10)

        self._paint_indicator(painter)
        lh = self._line_height()
        if not self._shown and not self._click_through:
            self._paint_hint(painter)
        y0 = self.height() - MARGIN - lh * len(self._shown)
        stroke = QPen(self.outline_color, max(2.0, self.caption_font.pointSizeF() / 9.0))
        stroke.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        shadow_colour = QColor(self.outline_color)
        shadow_colour.setAlphaF(0.45)
        shadow = QPen(shadow_colour, stroke.widthF() * 1.5)
        shadow.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        shadow_offset = max(1.5, self.caption_font.pointSizeF() / 14.0)
        for row, (layout, i, line) in enumerate(self._shown):
            tl = layout.lineAt(i)
            origin = QPointF(MARGIN, y0 + row * lh - tl.y())
            a, b = tl.textStart(), tl.textStart() + tl.textLength()
            n_final = len(line.shown_label) + len(line.final)
            final = _glyph_path(tl, a, min(b, n_final) - a, origin)
            partial = _glyph_path(tl, max(a, n_final), b - max(a, n_final), origin)
            # a soft shadow, the outline, then the fill on top: readable on any background;
            # the partial tail gets the same treatment as the final text (only tint + italic differ)
            for path in (final, partial):
                painter.strokePath(path.translated(shadow_offset, shadow_offset), shadow)
            painter.strokePath(final, stroke)
            painter.strokePath(partial, stroke)
            painter.fillPath(final, self.text_color)
            painter.fillPath(partial, self.partial_color)
        painter.end()

    # -- notices ----------------------------------------------------------------------------------
    #: How long (ms) a notice stays on the overlay.
    NOTICE_MS = 8000

    @property
    def notice(self) -> QLabel | None:
        """The notice label (``None`` until the first notice)."""
        return self._notice

    def show_notice(self, text: str, ms: int | None = None) -> None:
        """Show a short problem message at the top of the overlay for ``ms`` (a failed Start
        from the tray or a shortcut while the main window is not in front)."""
        if self._notice is None:
            self._notice = QLabel(self)
            self._notice.setObjectName("overlay-notice")
            self._notice.setWordWrap(True)
            self._notice.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
            self._notice.setStyleSheet("QLabel#overlay-notice { background: rgba(150, 30, 20, 235); color: white; "
                                       "border-radius: 6px; padding: 4px 8px; font-weight: bold; }")
        self._notice.setText(text)
        self._place_notice()
        self._notice.show()
        self._notice.raise_()
        if not self.isVisible():
            self.show()
        self._notice_timer.start(self.NOTICE_MS if ms is None else ms)

    def notice_text(self) -> str:
        """The notice shown now, or ``""``."""
        return self._notice.text() if self._notice is not None and not self._notice.isHidden() else ""

    def hide_notice(self) -> None:
        """Remove the notice."""
        self._notice_timer.stop()
        if self._notice is not None:
            self._notice.hide()

    def _place_notice(self) -> None:
        if self._notice is None:
            return
        width = max(40, self.width() - MARGIN)
        height = min(self.height() - MARGIN // 2, self._notice.heightForWidth(width))
        self._notice.setGeometry(MARGIN // 2, MARGIN // 4, width, max(20, height))

    # -- the empty-state hint ---------------------------------------------------------------------
    #: Hint texts, longest first: the first that fits is shown.
    HINTS = ("Captions appear here. Drag to move, drag the edges to resize.", "Captions appear here.",
             "Captions")
    HINT_FLAGS = int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap)
    #: Smallest hint font (pt).
    HINT_MIN_PT = 7.0
    #: Least opacity of the panel behind the hint, so it reads over any window.
    HINT_BACKDROP_OPACITY = 0.8

    def hint_layout(self) -> tuple[QFont, QRectF, str]:
        """Font, rectangle and text of the hint: the longest hint that fits, in the largest font
        (up to the caption font) that fits -- never clipped."""
        area = QRectF(self.rect()).adjusted(MARGIN / 2, MARGIN / 2, -MARGIN / 2, -MARGIN / 2)
        font = QFont(self.caption_font)
        top = max(self.HINT_MIN_PT, self.caption_font.pointSizeF())
        for text in self.HINTS:
            size = top
            while size >= self.HINT_MIN_PT:
                font.setPointSizeF(size)
                need = QFontMetricsF(font).boundingRect(area, self.HINT_FLAGS, text)
                if need.width() <= area.width() and need.height() <= area.height():
                    return QFont(font), area, text
                size = size - 1.0 if size > 12 else size - 0.5
        font.setPointSizeF(self.HINT_MIN_PT)
        return font, area, ""

    def hint_backdrop_opacity(self) -> float:
        """Opacity of the panel behind the hint (at least :attr:`HINT_BACKDROP_OPACITY`)."""
        return max(self.opacity, self.HINT_BACKDROP_OPACITY)

    def hint_colour(self) -> QColor:
        """The hint's colour: the partial tint, opaque (it sits on :meth:`hint_backdrop_opacity`)."""
        return QColor(self.partial_color)

    def _paint_hint(self, painter: QPainter) -> None:
        font, area, text = self.hint_layout()
        if not text:
            return
        need = QFontMetricsF(font).boundingRect(area, self.HINT_FLAGS, text)
        back = QColor(self.background_color)
        back.setAlphaF(self.hint_backdrop_opacity())
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(back)
        painter.drawRoundedRect(need.adjusted(-MARGIN / 2, -2, MARGIN / 2, 2).intersected(QRectF(self.rect())), 6, 6)
        painter.setPen(self.hint_colour())
        painter.setFont(font)
        painter.drawText(area, self.HINT_FLAGS, text)

    def indicator(self) -> tuple[str, float]:
        """The live dot's ``(state, speech probability)``: "speaking", "pause", "turn_over" or "idle"."""
        return self.model.indicator

    def indicator_rect(self) -> QRectF:
        """Where the dot is drawn (logical px, widget coordinates)."""
        c = QPointF(self.width() - DOT_INSET - DOT_RADIUS, DOT_INSET + DOT_RADIUS)
        return QRectF(c.x() - DOT_RADIUS, c.y() - DOT_RADIUS, 2 * DOT_RADIUS, 2 * DOT_RADIUS)

    def _paint_indicator(self, painter: QPainter) -> None:
        state, speech = self.model.indicator
        if state == "idle":
            return
        colour = QColor(self.text_color)
        rect = self.indicator_rect()
        if state == "speaking":
            colour.setAlphaF(0.45 + 0.55 * speech)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(colour)
        elif state == "pause":
            colour.setAlphaF(0.7)
            painter.setPen(QPen(colour, 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            rect = rect.adjusted(0.75, 0.75, -0.75, -0.75)
        else:  # turn over
            colour.setAlphaF(0.25)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(colour)
        painter.drawEllipse(rect)

    # -- click-through, focus, drag and resize ----------------------------------------------------
    @property
    def click_through(self) -> bool:
        """True while mouse input passes through to the windows below."""
        return self._click_through

    def set_click_through(self, on: bool, persist: bool = True) -> None:
        """Make the overlay input-transparent (``on``) or draggable/resizable.

        Changing window flags re-creates the native window, so a visible overlay is
        shown again (without activation) afterwards.
        """
        on = bool(on)
        changed = on != self._click_through
        self._click_through = on
        visible = self.isVisible()
        geom = self.geometry()
        # the attribute first: on a window Qt mirrors it into WindowTransparentForInput
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, on)
        self.setWindowFlags(self._flags())
        if visible:
            self.setGeometry(geom)
            self.show()
        if persist and self.settings is not None:
            self.settings.set(Keys.OVERLAY_CLICK_THROUGH, on)
        if changed:
            emit(self.click_through_changed, on)
        self.update()

    def toggle_click_through(self) -> None:
        """Flip click-through."""
        self.set_click_through(not self._click_through)

    def _edges_at(self, pos: QPoint) -> Qt.Edge | None:
        edges = Qt.Edge(0)
        if pos.x() <= RESIZE_BAND:
            edges |= Qt.Edge.LeftEdge
        elif pos.x() >= self.width() - RESIZE_BAND:
            edges |= Qt.Edge.RightEdge
        if pos.y() <= RESIZE_BAND:
            edges |= Qt.Edge.TopEdge
        elif pos.y() >= self.height() - RESIZE_BAND:
            edges |= Qt.Edge.BottomEdge
        return edges if edges != Qt.Edge(0) else None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """Start a move (inside) or a resize (border band); the window system does it where it can."""
        if self._click_through or event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        edges = self._edges_at(event.position().toPoint())
        handle = self.windowHandle()
        native = False
        if handle is not None:
            native = handle.startSystemResize(edges) if edges is not None else handle.startSystemMove()
        if not native:
            self._drag = (event.globalPosition().toPoint(), self.geometry(), edges)
        if edges is not None:
            self._resized_by_user = True
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """Manual move/resize where the window system does not do it."""
        if self._drag is None:
            edges = self._edges_at(event.position().toPoint())
            cursor = Qt.CursorShape.SizeAllCursor
            if edges in (Qt.Edge.LeftEdge, Qt.Edge.RightEdge):
                cursor = Qt.CursorShape.SizeHorCursor
            elif edges in (Qt.Edge.TopEdge, Qt.Edge.BottomEdge):
                cursor = Qt.CursorShape.SizeVerCursor
            elif edges is not None:
                cursor = Qt.CursorShape.SizeFDiagCursor
            self.setCursor(cursor)
            return
        start, geom, edges = self._drag
        d = event.globalPosition().toPoint() - start
        g = QRect(geom)
        if edges is None:
            g.moveTo(geom.topLeft() + d)
        else:
            if edges & Qt.Edge.LeftEdge:
                g.setLeft(min(geom.left() + d.x(), geom.right() - self.minimumWidth()))
            if edges & Qt.Edge.RightEdge:
                g.setRight(geom.right() + d.x())
            if edges & Qt.Edge.TopEdge:
                g.setTop(min(geom.top() + d.y(), geom.bottom() - self.minimumHeight()))
            if edges & Qt.Edge.BottomEdge:
                g.setBottom(geom.bottom() + d.y())
            area = self.screen_area(geom)
            if area is not None:
                g = g.intersected(area)  # a resize stops at the screen's edge
        self.setGeometry(self.clamped(g))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """End a manual move/resize."""
        self._drag = None
        super().mouseReleaseEvent(event)

    def focusInEvent(self, event) -> None:  # noqa: N802
        """The overlay never keeps keyboard focus: hand it back at once."""
        self.clearFocus()

    # -- geometry persistence ------------------------------------------------------------------
    def moveEvent(self, event) -> None:  # noqa: N802
        """Remember the new position (debounced)."""
        super().moveEvent(event)
        if not self._restoring and self.isVisible():
            self._save_timer.start()

    def resizeEvent(self, event) -> None:  # noqa: N802
        """Re-wrap for the new width and remember the size (debounced)."""
        super().resizeEvent(event)
        self._layout_rev = -1
        self._place_notice()
        if not self._restoring and self.isVisible():
            self._save_timer.start()

    def current_screen(self) -> QScreen | None:
        """The screen that holds the overlay's centre (or the primary one)."""
        screen = QGuiApplication.screenAt(self.geometry().center())
        return screen or QGuiApplication.primaryScreen()

    def save_geometry(self) -> None:
        """Store the geometry (logical px) under the current screen's key."""
        self._save_timer.stop()
        if self._resized_by_user:
            self._resized_by_user = False
            lines = self.lines_that_fit()
            if lines != self.max_lines:  # the user made it taller or shorter: that is the line count now
                self.max_lines = lines
                if self.settings is not None:
                    self.settings.set(Keys.OVERLAY_LINES, lines)
        settled = self.clamped(self.geometry())
        if settled != self.geometry():  # a window-manager move or resize left it partly off the screen
            self._place(settled)
        if self.settings is None:
            return
        screen = self.current_screen()
        if screen is None:
            return
        key = screen_key(screen)
        g = self.geometry()
        self.settings.set_overlay_geometry(key, (g.x(), g.y(), g.width(), g.height()))
        emit(self.geometry_saved, key)

    def default_geometry(self, screen: QScreen) -> QRect:
        """Bottom centre of ``screen``, 70% of its width, tall enough for the line limit."""
        avail = screen.availableGeometry()
        w = max(self.minimumWidth(), int(avail.width() * 0.7))
        h = min(avail.height(), self.preferred_height())
        return QRect(avail.left() + (avail.width() - w) // 2, avail.bottom() - h - int(avail.height() * 0.06), w, h)

    def restore_geometry(self) -> QRect:
        """Place the overlay where it was on a screen that still exists, clamped onto it.

        Order: the last screen used, if present; else the primary screen's remembered
        rectangle; else the default placement. A rectangle remembered for a monitor
        that is gone, or lying off every screen, is clamped onto the chosen screen.

        Returns:
            The geometry applied (logical px).
        """
        screens = {screen_key(s): s for s in QGuiApplication.screens()}
        primary = QGuiApplication.primaryScreen()
        target = primary
        rect = None
        if self.settings is not None:
            last = self.settings.get(Keys.OVERLAY_LAST_SCREEN)
            if last in screens:
                target = screens[last]
                rect = self.settings.overlay_geometry(last)
            elif primary is not None:
                rect = self.settings.overlay_geometry(screen_key(primary))
                if rect is None and last:
                    rect = self.settings.overlay_geometry(last)  # monitor gone: keep the size, clamp
        if target is None:
            return self.geometry()
        geom = QRect(*rect) if rect else self.default_geometry(target)
        self._place(clamp_rect(geom, target.availableGeometry()))
        return self.geometry()

    def place(self, rect: QRect) -> None:
        """Put the overlay at ``rect`` (clamped onto its screen) without counting it as a user move."""
        self._place(self.clamped(rect))

    def _place(self, rect: QRect) -> None:
        self._restoring = True
        try:
            self.setGeometry(rect)
        finally:
            self._restoring = False

    def _on_screen_removed(self, screen: QScreen) -> None:
        if self.current_screen() is screen or QGuiApplication.screenAt(self.geometry().center()) is None:
            self.ensure_on_screen()

    def ensure_on_screen(self, screens: Iterable[QScreen] | None = None) -> QRect:
        """Clamp the overlay onto the screen it overlaps most (or the primary one).

        Args:
            screens: the screens that exist (defaults to ``QGuiApplication.screens()``).

        Returns:
            The new geometry.
        """
        screens = list(screens if screens is not None else QGuiApplication.screens())
        geom = self.geometry()
        best, best_area = None, 0
        for s in screens:
            inter = s.availableGeometry().intersected(geom)
            area = inter.width() * inter.height() if inter.isValid() else 0
            if area > best_area:
                best, best_area = s, area
        if best is None:
            best = QGuiApplication.primaryScreen() if QGuiApplication.primaryScreen() in screens else None
            best = best or (screens[0] if screens else None)
        if best is not None:
            self._place(clamp_rect(geom, best.availableGeometry()))
        return self.geometry()
