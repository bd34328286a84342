"""A short problem message on the caption overlay (a failed Start from the tray or a shortcut).

:class:`OverlayNotice` is a mixin for the overlay widget (before QWidget in its bases; it needs
``_notice`` and ``_notice_timer`` from the overlay).
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QLabel

from captioner.ui.overlay_marks import MARGIN, largest_font

#: Smallest notice font (pt) unless the application's own font is smaller (then that one, as
#: before); it grows up to the caption font where the overlay has room, so a reader who set
#: large captions can read the notice from as far away.
NOTICE_MIN_PT = 10.0
#: The notice label's padding (px, both sides, as its stylesheet sets it): 4 px top/bottom, 8 px left/right.
NOTICE_PAD = (16, 8)


class OverlayNotice:
    """The notice label at the top of the overlay."""

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
        self.update()  # the window's shape (no compositor) must hold the notice
        self._notice_timer.start(self.NOTICE_MS if ms is None else ms)

    def notice_text(self) -> str:
        """The notice shown now, or ``""``."""
        return self._notice.text() if self._notice is not None and not self._notice.isHidden() else ""

    def hide_notice(self) -> None:
        """Remove the notice."""
        self._notice_timer.stop()
        if self._notice is not None:
            self._notice.hide()
            self.update()

    def notice_font(self, text: str, width: int, height: int) -> QFont:
        """The largest bold font, from :data:`NOTICE_MIN_PT` (or the application's font where
        that is smaller) up to the caption font, in which ``text`` wrapped to ``width`` px fits
        ``height`` px (padding included)."""
        least = min(NOTICE_MIN_PT, QApplication.font().pointSizeF())
        bold = QFont(self.caption_font)
        bold.setBold(True)
        area = QRectF(0, 0, max(1, width - NOTICE_PAD[0]), max(1, height - NOTICE_PAD[1]))
        font = largest_font(bold, text, area, int(Qt.TextFlag.TextWordWrap), least)
        if font is None:
            font = bold
            font.setPointSizeF(least)
        return font

    def _place_notice(self) -> None:
        if self._notice is None:
            return
        width = max(40, self.width() - MARGIN)
        room = self.height() - MARGIN // 2
        self._notice.setFont(self.notice_font(self._notice.text(), width, room))
        height = min(room, self._notice.heightForWidth(width))
        self._notice.setGeometry(MARGIN // 2, MARGIN // 4, width, max(20, height))
