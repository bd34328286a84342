"""A name alert on the caption overlay (issue 49): a banner and a thick frame for a few seconds.

When someone says a word the user listed (:mod:`captioner.transcript.alerts`), the overlay
shows, for :attr:`OverlayAlert.ALERT_MS`, a banner across its top half ('ALERT: "Maria" said by
Meeting') and a thick two-tone frame round the whole overlay. Neither relies on colour:
the banner is words in a bold font with its own 3 px border, the frame is 6 px wide where
the overlay otherwise has a hairline or nothing. The newest caption line stays visible below
the banner. Screen readers hear it at once (an assertive announcement).

:class:`OverlayAlert` is a mixin for the overlay widget (before QWidget in its bases); it
creates its label and timer on first use and reuses the notice's font fitting
(:meth:`~captioner.ui.overlay_notice.OverlayNotice.notice_font`).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QLabel

from captioner.ui.accessibility import announce

#: The frame: 6 px of amber with a 2 px dark line inside it, readable on a dark or a light panel.
FRAME_PX = 6.0
FRAME_COLOUR = "#ffbf00"
FRAME_INNER = "#000000"
#: The banner's share of the overlay's height at most: the newest caption line stays in view.
BANNER_SHARE = 0.5
#: Horizontal and vertical room (px) the banner's border and padding take (2 x (3 + 6), 2 x (3 + 2)).
BANNER_PAD = (18, 10)


class OverlayAlert:
    """The name alert's banner and frame on the overlay."""

    #: How long (ms) an alert stays on the overlay.
    ALERT_MS = 5000

    def show_alert(self, text: str, ms: int | None = None) -> None:
        """Show ``text`` ('ALERT: "Maria" said by Meeting') in the banner, frame the overlay and
        announce it, for ``ms`` (default :attr:`ALERT_MS`); a newer alert replaces the shown one
        and starts the time again. A hidden overlay stays hidden (the desktop notification tells)."""
        if getattr(self, "_alert", None) is None:
            self._alert = QLabel(self)
            self._alert.setObjectName("overlay-alert")
            self._alert.setWordWrap(True)
            self._alert.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self._alert.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
            self._alert.setStyleSheet(f"QLabel#overlay-alert {{ background: rgba(20, 20, 20, 240); color: white; "
                                      f"border: 3px solid {FRAME_COLOUR}; border-radius: 6px; padding: 2px 6px; "
                                      "font-weight: bold; }")
            self._alert_timer = QTimer(self)
            self._alert_timer.setSingleShot(True)
            self._alert_timer.timeout.connect(self.hide_alert)
        self._alert.setText(text)
        self._alert.setAccessibleName(text)
        self._place_alert()
        self._alert.show()
        self._alert.raise_()
        self._alert_timer.start(self.ALERT_MS if ms is None else int(ms))
        self.update()  # the frame, and the window's shape where no compositor runs
        announce(self, text, assertive=True)

    def alert_text(self) -> str:
        """The alert shown now, or ``""``."""
        label = getattr(self, "_alert", None)
        return label.text() if label is not None and not label.isHidden() else ""

    @property
    def alert_label(self) -> QLabel | None:
        """The banner (``None`` until the first alert)."""
        return getattr(self, "_alert", None)

    def hide_alert(self) -> None:
        """Remove the banner and the frame."""
        label = getattr(self, "_alert", None)
        if label is not None:
            self._alert_timer.stop()
            label.hide()
            self.update()

    def paint_alert_frame(self, painter: QPainter) -> None:
        """Draw the thick frame while an alert shows (call it from ``paintEvent``)."""
        if not self.alert_text():
            return
        painter.save()
        painter.setBrush(Qt.BrushStyle.NoBrush)
        half = FRAME_PX / 2
        outer = QRectF(self.rect()).adjusted(half, half, -half, -half)
        painter.setPen(QPen(QColor(FRAME_COLOUR), FRAME_PX))
        painter.drawRoundedRect(outer, 10, 10)
        painter.setPen(QPen(QColor(FRAME_INNER), 2.0))
        painter.drawRoundedRect(outer.adjusted(half + 1, half + 1, -half - 1, -half - 1), 8, 8)
        painter.restore()

    def _place_alert(self) -> None:
        label = getattr(self, "_alert", None)
        if label is None:
            return
        inset = int(FRAME_PX) + 2
        width = max(40, self.width() - 2 * inset)
        top = inset
        notice = getattr(self, "_notice", None)
        if notice is not None and not notice.isHidden():  # under a problem notice, not over it
            top = max(top, notice.geometry().bottom() + 2)
        room = max(20, int(self.height() * BANNER_SHARE) - top + inset)
        label.setFont(self.notice_font(label.text(), width - BANNER_PAD[0] + 16, room - BANNER_PAD[1] + 8))
        height = min(room, label.heightForWidth(width))
        label.setGeometry(inset, top, width, max(20, height))
