"""Issue 13: the status line speaks plain words ("keeping up", "3 s behind") with the numbers in a
tooltip, is cleared after Stop; the falling-behind advice fits the model that runs; the partial
text in the main window is readable (>= 4.5:1, the overlay's rule)."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QColor, QPalette
from ui_fakes import run_and_stop

from captioner.events import Stats, TextDelta
from captioner.ui.overlay import contrast_ratio
from captioner.ui.run_bar import health_text

pytestmark = pytest.mark.gui


def test_health_in_plain_words():
    assert health_text(0.4, 0.2, 0, 0.0) == "keeping up"
    assert health_text(1.3, 3.2, 0, 0.0) == "3 s behind"
    assert health_text(1.3, 75.0, 0, 0.0) == "1 min 15 s behind"
    assert "lost" in health_text(0.5, 0.1, 2, 1.5)


def test_status_line_words_tooltip_and_cleared_after_stop(make_window, qtbot):
    win, record = make_window()
    win._on_event(Stats(rtf=1.87, backlog_s=3.1, overflows=0, source="talk.wav"))
    label = win.run_bar.stats_label
    assert label.text() == "3 s behind"
    assert "RTF" not in label.text() and "backlog" not in label.text()
    tip = label.toolTip()
    assert "1.87" in tip and "3.1 s" in tip and "real-time" in tip.lower()
    run_and_stop(qtbot, win, record)
    assert label.text() == "" and label.toolTip() == ""


def test_falling_behind_advice_fits_the_model_that_runs(make_window):
    win, _ = make_window()
    win._run_backend = "default"
    win._on_event(Stats(rtf=1.4, backlog_s=9.0, source="talk.wav"))
    text = [m[0] for m in win.messages.messages() if m[2] == "backlog"][0]
    assert "built-in" not in text.lower() or "already" in text.lower()
    win.messages.clear()
    win._run_backend = "audio8"
    win._on_event(Stats(rtf=1.4, backlog_s=9.0, source="talk.wav"))
    text = [m[0] for m in win.messages.messages() if m[2] == "backlog"][0]
    assert "clock" in text and "built-in" in text


def _colour_of_partial(html: str) -> QColor:
    found = re.search(r"<i style='color:(#[0-9a-fA-F]{6})'>", html)
    assert found, html
    return QColor(found.group(1))


@pytest.mark.parametrize("dark", [False, True])
def test_partial_text_in_the_window_is_readable(make_window, dark):
    win, _ = make_window()
    view = win.transcript_view
    if dark:
        pal = view.palette()
        pal.setColor(QPalette.ColorRole.Window, QColor("#202020"))
        pal.setColor(QPalette.ColorRole.WindowText, QColor("#f0f0f0"))
        view.live_label.setPalette(pal)
    win.recorder.begin("fake", ["You"])
    win._on_event(TextDelta(" hello wor", 0.0, 1.0, False, "You"))
    partial = _colour_of_partial(view.live_text())
    background = view.live_label.palette().color(QPalette.ColorRole.Window)
    assert contrast_ratio(partial, background) >= 4.5
    assert partial != view.live_label.palette().color(QPalette.ColorRole.WindowText)
