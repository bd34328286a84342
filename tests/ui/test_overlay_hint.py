"""Issue 13: the overlay's empty-state hint is never clipped (a narrow overlay cut it off) and
stays readable at low background opacity."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QFontMetricsF

from captioner.ui.overlay import MARGIN, CaptionOverlay, contrast_ratio, panel_over
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui


@pytest.mark.parametrize("size", [(160, 40), (300, 110), (420, 80), (900, 130), (1800, 300)])
def test_the_hint_fits_the_overlay(qtbot, settings, size):
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.setMinimumSize(1, 1)
    ov.resize(*size)
    font, rect, text = ov.hint_layout()
    inner = QRectF(ov.rect()).adjusted(MARGIN / 2, MARGIN / 2, -MARGIN / 2, -MARGIN / 2)
    assert text and inner.contains(rect), (size, rect, text)
    # the text really fits the rectangle it is given (nothing drawn outside it)
    flags = ov.HINT_FLAGS
    needed = QFontMetricsF(font).boundingRect(rect, flags, text)
    assert needed.width() <= rect.width() + 1 and needed.height() <= rect.height() + 1, (size, text)


def test_the_hint_is_readable_at_low_opacity(qtbot, settings):
    settings.set(Keys.OVERLAY_OPACITY, 0.05)
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    for backdrop in (QColor("#ffffff"), QColor("#000000"), QColor("#ffff66")):
        behind = panel_over(ov.background_color, ov.hint_backdrop_opacity(), backdrop)
        assert contrast_ratio(ov.hint_colour(), behind) >= 4.5, backdrop.name()


def test_a_notice_is_shown_alone_not_over_the_hint(qtbot, settings):
    """A failed Start told on the overlay: its red notice was drawn over the hint's first line,
    which then read as a jumble of two texts (2026-12-06, a newcomer's screenshot)."""
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.resize(900, 130)
    ov.set_click_through(False, persist=False)  # the hint is drawn only while the overlay can be grabbed
    painted = []
    ov._paint_hint = lambda painter: painted.append(ov.notice_text())
    ov.grab()
    assert painted == [""]  # idle, no notice: the hint
    ov.show_notice("No microphone was found.", 60000)
    ov.grab()
    assert painted == [""]  # the notice alone
    ov.hide_notice()
    ov.grab()
    assert painted == ["", ""]


@pytest.mark.parametrize("size", [(1100, 110), (600, 130), (900, 300)])
def test_a_notice_grows_toward_the_caption_font_where_it_fits(qtbot, settings, size):
    """Low vision: a reader who set large captions reads the notice at that distance too; it is
    at least the usual label size, at most the caption font, and never taller than the overlay."""
    from captioner.ui.overlay_notice import NOTICE_MIN_PT

    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.resize(*size)
    ov.show_notice("No microphone was found. Connect one (or start the sound server) and press Refresh "
                   "devices, or caption system audio or a file instead.", 60000)
    pt = ov.notice.font().pointSizeF()
    assert NOTICE_MIN_PT < pt <= ov.caption_font.pointSizeF(), pt
    assert ov.notice.heightForWidth(ov.notice.width()) <= ov.height() - MARGIN // 2
    assert ov.notice.geometry().bottom() < ov.height()
