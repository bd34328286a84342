"""Transcript builder: finals, partials, turn ends, interleaving sources, long turns, clamping."""

from __future__ import annotations

import math

from captioner.events import Level, Stats, TextDelta, TurnBoundary
from captioner.transcript.model import Transcript
from captioner.transcript.segment import Segment


def final(text, start, end, source="You"):
    return TextDelta(text, start, end, True, source)


def partial(text, source="You"):
    return TextDelta(text, 0.0, 0.0, False, source)


def test_finals_are_concatenated_verbatim_into_one_open_segment():
    t = Transcript()
    for i, tok in enumerate(["Hel", "lo", " wor", "ld", ","]):
        assert t.add(final(tok, 0.08 * i, 0.08 * (i + 1))) == []
    (seg,) = t.segments
    assert seg.text == "Hello world,"
    assert seg.source == "You"
    assert seg.start == 0.0
    assert math.isclose(seg.end, 0.40)
    assert seg.is_open and not seg.turn_end
    assert t.final_text("You") == "Hello world,"


def test_partial_replaces_and_clears_and_is_not_in_segments():
    t = Transcript()
    t.add(final("Good", 0.0, 0.2))
    t.add(partial(" mor"))
    assert t.partial("You") == " mor"
    t.add(partial(" morning every"))
    assert t.partial("You") == " morning every"
    assert t.segments[0].text == "Good"
    t.add(final(" morning", 0.2, 0.6))
    t.add(partial(""))
    assert t.partial("You") == ""
    assert t.partial("Meeting") == ""
    assert t.text() == "Good morning"


def test_turn_boundary_closes_segment_and_next_final_opens_a_new_one():
    t = Transcript()
    t.add(final(" Yes.", 1.0, 1.5))
    closed = t.add(TurnBoundary(2.5, "semantic_vad", 0.93, "You"))
    assert closed == [Segment("You", 1.0, 1.5, " Yes.", True, "semantic_vad")]
    t.add(final(" No.", 3.0, 3.4))
    segs = t.segments
    assert [s.text for s in segs] == [" Yes.", " No."]
    assert [s.turn_end for s in segs] == [True, False]
    assert segs[1].is_open
    assert t.text() == "Yes.\nNo."


def test_line_model_one_line_per_turn():
    t = Transcript()
    t.add(final("first line", 0.0, 1.2))
    t.add(TurnBoundary(1.2, "line", 1.0, "You"))
    t.add(final("second line", 1.5, 2.5))
    t.add(TurnBoundary(2.5, "line", 1.0, "You"))
    assert [(s.text, s.boundary) for s in t.segments] == [("first line", "line"), ("second line", "line")]


def test_two_sources_interleave_by_time_and_keep_separate_segments():
    t = Transcript()
    t.add(final(" Hi", 0.0, 0.3, "You"))
    t.add(final(" Bonjour", 0.5, 0.9, "Meeting"))
    t.add(final(" there", 0.3, 0.6, "You"))
    t.add(TurnBoundary(1.0, "semantic_vad", 1.0, "You"))
    t.add(final(" à tous", 0.9, 1.4, "Meeting"))
    t.add(TurnBoundary(2.0, "semantic_vad", 1.0, "Meeting"))
    t.add(final(" Okay", 2.1, 2.4, "You"))
    segs = t.segments
    assert [(s.source, s.text, s.start) for s in segs] == [
        ("You", " Hi there", 0.0),
        ("Meeting", " Bonjour à tous", 0.5),
        ("You", " Okay", 2.1),
    ]
    assert t.sources == ["You", "Meeting"]
    assert t.final_text("You") == " Hi there Okay"
    # A closed segment that starts later than an open one sorts after it.
    t2 = Transcript()
    t2.add(final("early open", 0.0, 1.0, "A"))
    t2.add(final("late closed", 0.5, 0.8, "B"))
    t2.add(TurnBoundary(0.9, "semantic_vad", 1.0, "B"))
    assert [s.source for s in t2.segments] == ["A", "B"]


def test_long_turn_splits_by_duration():
    t = Transcript(max_segment_s=20.0)
    closed = []
    for i in range(60):  # one word per second, no punctuation, one endless turn
        closed += t.add(final(f" w{i}", float(i), i + 0.5))
    assert len(closed) == 2
    assert all(s.boundary == "length" and not s.turn_end for s in closed)
    assert closed[0].start == 0.0 and closed[0].end == 20.5
    assert closed[0].text == "".join(f" w{i}" for i in range(21))
    assert closed[1].start == 21.0
    # Nothing lost or duplicated by the splits.
    assert t.final_text("You") == "".join(f" w{i}" for i in range(60))
    assert len(t.segments) == 3 and t.segments[-1].is_open


def test_long_turn_splits_at_sentence_end_after_enough_text():
    t = Transcript(sentence_chars=80)
    t.add(final(" Short one.", 0.0, 1.0))
    assert t.segments[0].is_open  # a short sentence does not split
    long_sentence = " " + "word " * 16 + "end."
    closed = t.add(final(long_sentence, 1.0, 5.0))
    assert [s.boundary for s in closed] == ["sentence"]
    assert closed[0].text == " Short one." + long_sentence
    cjk = Transcript(sentence_chars=20)
    closed = cjk.add(final("这是一个很长的中文句子，用来测试按句号切分段落的规则是否生效。", 0.0, 4.0))
    assert [s.boundary for s in closed] == ["sentence"]


def test_turn_right_after_a_split_marks_that_segment():
    t = Transcript(sentence_chars=10)
    closed = t.add(final(" A complete sentence.", 0.0, 2.0))
    assert closed[0].boundary == "sentence" and not closed[0].turn_end
    assert t.add(TurnBoundary(2.5, "semantic_vad", 0.9, "You")) == []  # returned once only
    assert t.segments[0].turn_end and t.segments[0].boundary == "semantic_vad"
    assert len(t.segments) == 1
    assert t.add(TurnBoundary(3.0, "semantic_vad", 0.9, "You")) == []  # a second one changes nothing
    assert t.add(TurnBoundary(3.0, "semantic_vad", 0.9, "Nobody")) == []


def test_times_are_clamped_monotonic_per_source():
    t = Transcript()
    t.add(final("a", 5.0, 6.0))
    t.add(final("b", 4.0, 4.5))  # goes backwards
    t.add(final("c", float("nan"), float("inf")))  # garbage times
    t.add(TurnBoundary(7.0, "semantic_vad", 1.0, "You"))
    t.add(final("d", -3.0, 2.0))  # backwards again, into a new segment
    segs = t.segments
    assert [(s.text, s.start, s.end) for s in segs] == [("abc", 5.0, 6.0), ("d", 6.0, 6.0)]
    for s in segs:
        assert s.start <= s.end
    # Other sources keep their own clocks.
    t.add(final("x", 1.0, 2.0, "Meeting"))
    assert t.segments[0] == Segment("Meeting", 1.0, 2.0, "x")


def test_other_events_and_empty_finals_are_ignored():
    t = Transcript()
    assert t.add(Stats(step_ms=3.0)) == []
    assert t.add(Level(-20.0, -10.0, "You")) == []
    assert t.add(final("", 1.0, 2.0)) == []
    assert t.segments == [] and t.sources == [] and t.text() == ""
    assert t.duration == 0.0


def test_whitespace_only_final_is_kept_verbatim_but_not_shown():
    t = Transcript()
    t.add(final(" ", 0.0, 0.1))
    assert t.segments == []
    t.add(final("ok", 0.1, 0.2))
    assert t.final_text("You") == " ok"
    assert [s.text for s in t.segments] == [" ok"]


def test_close_all_ends_every_turn_and_clears_partials():
    t = Transcript()
    t.add(final("one", 0.0, 1.0, "A"))
    t.add(final("two", 0.5, 1.5, "B"))
    t.add(partial("thr", "B"))
    closed = t.close_all()
    assert sorted(s.text for s in closed) == ["one", "two"]
    assert all(s.turn_end and s.boundary == "end_of_stream" for s in t.segments)
    assert t.partial("B") == ""
    assert t.duration == 1.5


def test_end_of_stream_turn_clears_partial_of_that_source_only():
    t = Transcript()
    t.add(partial("dangling", "A"))
    t.add(partial("other", "B"))
    t.add(TurnBoundary(1.0, "end_of_stream", 1.0, "A"))
    assert t.partial("A") == "" and t.partial("B") == "other"
