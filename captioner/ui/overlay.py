"""CaptionOverlay: the frameless, always-on-top caption window over every other window.

What it guarantees (issues #4, #22, DESIGN section 6):

* never takes keyboard focus (``Qt.WindowDoesNotAcceptFocus``, shown without activation, a
  tool window that is not in the task bar); under X11 it is an override-redirect window that
  the window manager neither frames nor re-stacks, so it stays above fullscreen windows and
  click-through passes clicks at the X level (see :mod:`captioner.ui.overlay_window`);
* readable on any background: a translucent rounded panel whose opacity the user sets (0.7
  by default), text drawn with an outline and a soft shadow (:mod:`captioner.ui.overlay_text`);
* ``lines`` (1-5) visual lines, newest at the bottom; committed text never changes, the
  partial tail is italic in a pale tint; a finished turn closes its line, the next turn starts
  a new line with its source label;
* with nothing to show it draws no panel: click-through leaves only the turn indicator, drag
  mode a faint frame and a hint (:mod:`captioner.ui.overlay_marks`);
* click-through (input transparent) or draggable/resizable (:mod:`captioner.ui.overlay_drag`);
* position and size remembered per screen in logical pixels, moved relatively at another
  resolution and clamped back onto an existing screen when a monitor is gone
  (:mod:`captioner.ui.overlay_place`);
* under X11 it steps behind the app's own dialog while that has the focus
  (:mod:`captioner.ui.overlay_stacking`), and without a compositing manager it is cut to what
  it draws (:mod:`captioner.ui.overlay_shape`).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QTextLayout,
)
from PySide6.QtWidgets import QLabel, QWidget

from captioner.engine.qt_emit import emit
from captioner.events import Event
from captioner.ui import overlay_marks
from captioner.ui.caption_model import CaptionLine, CaptionModel
from captioner.ui.overlay_drag import Drag, cursor_for, edges_at
from captioner.ui.overlay_marks import DOT_INSET, DOT_RADIUS, HINT_FLAGS, HINTS, MARGIN, paint_indicator
from captioner.ui.overlay_geometry import RememberedGeometry
from captioner.ui.overlay_place import clamp_rect, screen_key
from captioner.ui.overlay_text import VisualLine, contrast_ratio, lay_out, panel_over, relative_luminance
from captioner.ui.overlay_words import WordImages, paint_lines
from captioner.ui.overlay_stacking import DialogStacking
from captioner.ui.overlay_alert import OverlayAlert
from captioner.ui.overlay_notice import OverlayNotice
from captioner.ui.overlay_shape import OpaqueShape
from captioner.ui.overlay_window import TITLE, always_on_top_note, overlay_flags, system_move_allowed
from captioner.ui.settings import Keys, Settings

__all__ = [
    "CaptionOverlay", "DOT_INSET", "DOT_RADIUS", "MARGIN", "MAX_LINES", "VisualLine", "always_on_top_note",
    "clamp_rect", "contrast_ratio", "panel_over", "relative_luminance", "screen_key",
]

#: The most caption lines the overlay shows, however tall it is made (the setting's maximum).
MAX_LINES = int(Keys.OVERLAY_LINES.maximum)
#: Extra right margin (logical px) so no text runs under the turn indicator (4 px clear of it).
INDICATOR_ROOM = int(DOT_INSET + 2 * DOT_RADIUS + 4 - MARGIN)


class CaptionOverlay(RememberedGeometry, DialogStacking, OpaqueShape, OverlayAlert, OverlayNotice, QWidget):
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
        self.setWindowTitle(TITLE)  # what window-manager rules match (README, Settings' note)
        self.setObjectName("CaptionOverlay")
        self.setAccessibleName("Captions overlay")  # a fixed name: screen readers follow the transcript pane
        self._click_through = False
        self.setWindowFlags(overlay_flags(False))
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground, True)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, True)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground, True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setMouseTracking(True)
        self.setMinimumSize(QSize(160, 40))

        self.model = CaptionModel(history=2, show_labels=True)
        self._visual: list[VisualLine] = []
        self._shown: list[tuple[QTextLayout, int, CaptionLine]] = []
        self._words = WordImages()  # rendered words: a paint strokes only the words it has not drawn
        self._layout_rev = -1
        self._layout_width = -1
        self._drag: Drag | None = None
        self._resized_by_user = False  # an edge drag since the last save: the height picks the line count
        self._shape_key: tuple | None = None  # what the window shape was cut for (no compositor), see _check_shape

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
        self.watch_screens()
        self.watch_focus()

    # -- configuration ------------------------------------------------------------------------
    def apply_settings(self) -> None:
        """Re-read look and behaviour from :attr:`settings` (after the settings dialog)."""
        get = self.settings.get if self.settings is not None else (lambda key: key.default)
        self.max_lines = int(get(Keys.OVERLAY_LINES))
        self.model.set_history(MAX_LINES)  # kept for the most lines a taller overlay can show
        self.model.show_labels = bool(get(Keys.OVERLAY_SOURCE_LABELS))
        self.model.speaker_labels = str(get(Keys.OVERLAY_SPEAKER_LABELS))  # issue 38: off / change / every
        self.model.relabel()
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

    def set_speaker_names(self, name_of) -> None:
        """Show speakers by ``name_of(speaker id) -> name`` (the run's ``Transcript.speaker_name``;
        None: the ids); call it again, or :meth:`relabel`, after a rename: every kept line
        is labelled again, so a rename shows at once."""
        self.model.speaker_name = name_of
        self.relabel()

    def relabel(self) -> None:
        """Label the shown lines again (a speaker was renamed) and repaint."""
        self.model.relabel()
        self.update()

    def clear(self) -> None:
        """Remove every caption (new run)."""
        self.model.clear()
        self.update()

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

    def _relayout(self) -> None:
        width = max(20.0, self.width() - 2 * MARGIN - INDICATOR_ROOM)
        if self._layout_rev == self.model.revision and self._layout_width == width:
            return
        self._shown, self._visual, trims = lay_out(self.model.lines, self.caption_font, width,
                                                   self.lines_that_fit(), self.partial_color)
        self._layout_rev = self.model.revision
        self._layout_width = width
        if trims:  # a turn far longer than the view: drop its scrolled-out head at a visual line start
            for line, cut in trims:
                self.model.trim_front(line, cut)
            self._relayout()

    def is_idle(self) -> bool:
        """True while there is no caption to show (the panel is not drawn then)."""
        self._relayout()
        return not self._shown

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 (Qt API)
        """Draw the translucent panel and the shown visual lines, bottom-aligned; with nothing to
        show, no panel: only the indicator, and in drag mode a faint frame and the hint."""
        self._relayout()
        self._check_shape()
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        if self._shown:
            bg = QColor(self.background_color)
            bg.setAlphaF(max(0.0, min(1.0, self.opacity)))
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(bg)
            painter.drawRoundedRect(QRectF(self.rect()), 10, 10)
        if not self._click_through:
            # a faint frame tells the user the overlay can be grabbed
            frame = QColor(self.text_color)
            frame.setAlphaF(0.25 if self._shown else 0.45)
            painter.setPen(frame)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 10, 10)
            if not self._shown and not self.notice_text() and not self.alert_text():  # read alone, not over the hint
                self._paint_hint(painter)
        state, speech = self.model.indicator
        paint_indicator(painter, self.indicator_rect(), state, speech, self.text_color, self.outline_color)
        lh = self._line_height()
        paint_lines(painter, self._shown, MARGIN, self.height() - MARGIN - lh * len(self._shown), lh,
                    self.caption_font, self.text_color, self.partial_color, self.outline_color, self._words)
        self.paint_alert_frame(painter)  # issue 49: a name alert frames the whole overlay
        painter.end()

    # -- the empty-state hint and the indicator ----------------------------------------------------
    HINTS = HINTS
    HINT_FLAGS = HINT_FLAGS
    #: Least opacity of the panel behind the hint, so it reads over any window.
    HINT_BACKDROP_OPACITY = 0.8

    def hint_layout(self) -> tuple[QFont, QRectF, str]:
        """Font, rectangle and text of the hint: the longest hint that fits, in the largest font
        (up to the caption font) that fits -- never clipped."""
        area = QRectF(self.rect()).adjusted(MARGIN / 2, MARGIN / 2, -MARGIN / 2, -MARGIN / 2)
        font, text = overlay_marks.hint_layout(area, self.caption_font)
        return font, area, text

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
        """The live indicator's ``(state, speech probability)``: "speaking", "pause", "turn_over" or "idle"."""
        return self.model.indicator

    def indicator_rect(self) -> QRectF:
        """Where the indicator is drawn (logical px, widget coordinates)."""
        return overlay_marks.indicator_rect(self.width())

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
        self._drag = None
        visible = self.isVisible()
        geom = self.geometry()
        # the attribute first: on a window Qt mirrors it into WindowTransparentForInput
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, on)
        if self.windowFlags() != overlay_flags(on):
            self.setWindowFlags(overlay_flags(on))
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

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """Start a move (inside) or a resize (border band); see :mod:`captioner.ui.overlay_drag`."""
        if self._click_through or event.button() != Qt.MouseButton.LeftButton:
            return super().mousePressEvent(event)
        edges = edges_at(event.position().toPoint(), self.width(), self.height())
        handle = self.windowHandle()
        native = False
        if handle is not None and system_move_allowed():
            native = handle.startSystemResize(edges) if edges is not None else handle.startSystemMove()
        self._drag = None if native else Drag(event.globalPosition().toPoint(), self.geometry(), edges)
        if edges is not None:
            self._resized_by_user = True
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """Follow the pointer during a drag (only with the left button held); else show the cursor shape."""
        if self._drag is None:
            self.setCursor(cursor_for(edges_at(event.position().toPoint(), self.width(), self.height())))
            return
        if not event.buttons() & Qt.MouseButton.LeftButton:  # the release went elsewhere: the drag is over
            self._drag = None
            return
        g = self._drag.follow(event.globalPosition().toPoint(), event.buttons(), self.minimumWidth(),
                              self.minimumHeight())
        if g is None:
            return
        if self._drag.edges is not None:
            area = self.screen_area(self._drag.start)
            if area is not None:
                g = g.intersected(area)  # a resize stops at the screen's edge
        self.setGeometry(self.clamped(g))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        """End a drag."""
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
            self.forget_wanted_place()
            self._save_timer.start()

    def resizeEvent(self, event) -> None:  # noqa: N802
        """Re-wrap for the new width and remember the size (debounced)."""
        super().resizeEvent(event)
        self._layout_rev = -1
        self._place_notice()
        self._place_alert()
        if not self._restoring and self.isVisible():
            self.forget_wanted_place()
            self._save_timer.start()

