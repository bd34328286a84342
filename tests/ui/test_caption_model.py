"""CaptionModel rules: finals append, partials replace, turns start lines, history bound."""

from __future__ import annotations

from captioner.events import Stats, TextDelta, TurnBoundary
from captioner.ui.caption_model import CaptionModel


def fin(text, src="Meeting", t=0.0):
    return TextDelta(text, t, t + 0.1, True, src)


def part(text, src="Meeting", t=0.0):
    return TextDelta(text, t, t + 0.1, False, src)


def test_final_appends_and_partial_replaces():
    m = CaptionModel(history=3)
    assert m.apply(part("hel"))
    assert m.apply(part("hello wor"))
    assert [ln.text for ln in m.lines] == ["Meeting: hello wor"]
    assert m.apply(fin(" hello"))
    line = m.lines[0]
    assert (line.final, line.partial) == ("hello", "")  # leading space of a line dropped, stale partial cleared
    m.apply(part(" world"))
    m.apply(fin(" world"))
    assert line.text == "Meeting: hello world"
    assert not m.apply(Stats())


def test_turn_boundary_closes_line_and_labels_next():
    closed = []
    m = CaptionModel(history=5, on_close=closed.append)
    m.apply(fin("first turn"))
    m.apply(TurnBoundary(1.0, source="Meeting"))
    m.apply(fin(" second", t=1.2))
    assert [ln.text for ln in m.lines] == ["Meeting: first turn", "Meeting: second"]
    assert [ln.final for ln in closed] == ["first turn"]
    assert m.lines[1].start == 1.2
    # a boundary with nothing committed closes nothing
    m2 = CaptionModel()
    assert not m2.apply(TurnBoundary(0.5, source="You"))


def test_sources_keep_their_own_lines():
    m = CaptionModel(history=5, show_labels=False)
    m.apply(fin("we should", "Meeting"))
    m.apply(fin("yes", "You"))
    m.apply(fin(" ship it", "Meeting"))
    assert [ln.text for ln in m.lines] == ["we should ship it", "yes"]


def test_history_bound_keeps_open_lines():
    m = CaptionModel(history=2)
    for i in range(6):
        m.apply(fin(f"line {i}", "Meeting"))
        m.apply(TurnBoundary(float(i), source="Meeting"))
    m.apply(fin("still talking", "You"))
    assert [ln.final for ln in m.lines] == ["line 4", "line 5", "still talking"]


def test_trim_front_drops_label_then_text():
    m = CaptionModel()
    m.apply(fin("one two three"))
    line = m.lines[0]
    m.trim_front(line, 3)  # inside the label: ignored
    assert line.text == "Meeting: one two three"
    m.trim_front(line, len("Meeting: one "))
    assert line.text == "two three" and line.trimmed == len("Meeting: one ")

