"""Issue 30.4: the overlay repainted every caption word's outline and shadow at every partial
(25-45 ms of the GUI thread per paint at 28 pt); words are rendered once and reused."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from captioner.events import TextDelta, TurnBoundary
from captioner.ui.overlay import CaptionOverlay
from captioner.ui.overlay_words import WordImages, _chunks
from captioner.ui.settings import Keys

pytestmark = pytest.mark.gui


@pytest.fixture
def overlay(qtbot, settings):
    settings.set(Keys.OVERLAY_LINES, 3)
    settings.set(Keys.OVERLAY_TEXT_COLOR, "#ff0000")
    settings.set(Keys.OVERLAY_PARTIAL_COLOR, "#00ff00")
    ov = CaptionOverlay(settings)
    qtbot.addWidget(ov)
    ov.setGeometry(50, 50, 700, ov.preferred_height())
    ov.show()
    return ov


def test_a_new_partial_word_renders_only_that_word(overlay):
    overlay.apply_event(TextDelta(" we should talk about hiring", 0.0, 1.0, True, "Meeting"))
    overlay.apply_event(TextDelta(" before the", 1.0, 1.5, False, "Meeting"))
    overlay.grab()
    first = overlay._words.misses
    assert first == 8  # "Meeting:" (bold label), 5 final words, 2 partial words
    overlay.grab()  # a repaint of the same text strokes nothing
    assert overlay._words.misses == first
    overlay.apply_event(TextDelta(" before the next", 1.0, 1.8, False, "Meeting"))
    img = overlay.grab().toImage()
    assert overlay._words.misses == first + 1  # only "next"
    # the words still land in their colours: final red, partial green
    reds = greens = 0
    for y in range(0, img.height(), 2):
        for x in range(0, img.width(), 2):
            c = img.pixelColor(x, y)
            reds += c.red() > 200 and c.green() < 60 and c.blue() < 60
            greens += c.green() > 200 and c.red() < 60 and c.blue() < 60
    assert reds > 50 and greens > 20


def test_words_split_at_spaces_and_where_label_final_and_partial_meet():
    text = "You: hello wor ld"
    # label "You: " (5), final "hello wor" (to 14), partial "ld"... with the boundary inside a word
    assert list(_chunks(text, 0, len(text), 5, 12)) == [(0, 4, 0), (5, 10, 1), (11, 12, 1), (12, 14, 2), (15, 17, 2)]
    assert list(_chunks(text, 6, 14, 5, 12)) == [(6, 10, 1), (11, 12, 1), (12, 14, 2)]
    assert list(_chunks("中文字幕", 0, 4, 0, 2)) == [(0, 2, 1), (2, 4, 2)]


def test_the_cache_is_bounded_and_keyed_by_colour(overlay):
    overlay._words = WordImages(size=10)
    for i in range(30):
        overlay.apply_event(TextDelta(f" word{i}", i * 0.1, i * 0.1 + 0.1, True, "Meeting"))
        overlay.grab()
    assert len(overlay._words._images) == 10
    misses = overlay._words.misses
    overlay.text_color = QColor("#0000ff")
    overlay.grab()
    assert overlay._words.misses > misses  # a new colour renders anew, never an old colour's image


def test_the_roll_up_reuses_the_words_of_the_line_that_moves_up(overlay):
    overlay.apply_event(TextDelta(" we should talk.", 0.0, 1.0, True, "Meeting"))
    overlay.grab()
    misses = overlay._words.misses
    overlay.apply_event(TurnBoundary(1.0, "semantic_vad", 0.9, "Meeting"))
    overlay.apply_event(TextDelta(" Yes", 1.5, 1.8, True, "Meeting"))
    overlay.grab()
    assert len(overlay.visible_lines()) == 2  # the first line moved up a row
    assert overlay._words.misses - misses <= 2  # "Yes" (and its label), not the moved words
