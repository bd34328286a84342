"""Cue splitting: line widths, CJK wrapping by characters, proportional times, strict ordering."""

from __future__ import annotations

from captioner.transcript.cues import (
    Cue,
    display_width,
    is_cjk_text,
    make_cues,
    segment_cues,
    wrap_text,
)
from captioner.transcript.segment import Segment

LATIN = (
    "Le café était très agréable, über alles: this sentence is long enough to need "
    "several lines and more than one cue so the split rules are exercised properly."
)
CJK = "中文字幕测试，没有空格的长句子需要按字符换行，并且每一行不能超过十六个字。"


def test_widths():
    assert display_width("abc") == 3
    assert display_width("中文") == 4
    assert display_width("🎤") == 2
    assert display_width("e\u0301") == 1  # combining acute
    assert is_cjk_text(CJK) and not is_cjk_text(LATIN) and not is_cjk_text("   ")


def test_latin_wraps_at_spaces_within_42_columns():
    lines = wrap_text(LATIN, 42)
    assert " ".join(lines) == LATIN  # breaks only replace spaces
    assert all(display_width(line) <= 42 for line in lines)
    assert lines[0] == "Le café était très agréable, über alles:"
    assert len(lines) == 4


def test_cjk_wraps_by_characters_and_keeps_punctuation_on_the_line():
    lines = wrap_text(CJK, 32)
    assert "".join(lines) == CJK
    assert all(len(line) <= 16 for line in lines)
    assert lines[0] == "中文字幕测试，没有空格的长句子需"
    assert not any(line[0] in "，。" for line in lines)
    # 16 characters that end in a comma: the comma may not start the next line.
    lines = wrap_text("一二三四五六七八九十一二三四五六，七八", 32)
    assert lines == ["一二三四五六七八九十一二三四五", "六，七八"]


def test_long_word_and_emoji_sequences():
    url = "https://example.com/" + "x" * 60
    lines = wrap_text("see " + url, 42)
    assert lines[0] == "see" and "".join(lines[1:]) == url
    assert all(display_width(line) <= 42 for line in lines)
    family = "\U0001F469\u200d\U0001F4BB"  # woman technologist (ZWJ sequence)
    lines = wrap_text("字" * 15 + family + "字", 32)
    assert lines == ["字" * 15, family + "字"]  # the ZWJ sequence is never cut


def test_segment_cues_split_two_lines_and_share_time_by_characters():
    seg = Segment("You", 10.0, 22.0, " " + LATIN, True, "semantic_vad")
    cues = segment_cues(seg)
    assert len(cues) == 2
    assert all(1 <= len(c.lines) <= 2 for c in cues)
    assert cues[0].start_ms == 10_000 and cues[-1].end_ms == 22_000
    assert cues[0].end_ms == cues[1].start_ms
    chars = [sum(len(x.replace(" ", "")) for x in c.lines) for c in cues]
    share = (cues[0].end_ms - cues[0].start_ms) / 12_000
    assert abs(share - chars[0] / sum(chars)) < 0.002


def test_label_prefixes_first_line_and_fits_width():
    seg = Segment("Meeting", 0.0, 5.0, LATIN)
    cues = segment_cues(seg, label="Meeting: ")
    assert all(c.lines[0].startswith("Meeting: ") for c in cues)
    assert all(display_width(line) <= 42 for c in cues for line in c.lines)


def test_overlapping_sources_get_strictly_increasing_starts_and_positive_durations():
    segs = [
        Segment("You", 1.0, 1.0, "zero length"),
        Segment("Meeting", 1.0, 3.0, "same start"),
        Segment("You", 1.0, 1.2, "also same start"),
        Segment("Meeting", 0.5, 0.6, "earlier"),
        Segment("You", 2.0, 2.0, "   "),  # blank: skipped
        Segment("You", 1.0004, 1.0004, "sub-millisecond"),
    ]
    cues = make_cues(segs)
    starts = [c.start_ms for c in cues]
    assert starts == sorted(set(starts))  # strictly increasing
    assert all(c.end_ms > c.start_ms for c in cues)
    assert cues[0] == Cue(500, 1000, ("Meeting: earlier",), "Meeting")  # 0.1 s held to 0.5 s
    assert [c.lines[0] for c in cues[1:]] == [
        "You: zero length",
        "Meeting: same start",
        "You: also same start",
        "You: sub-millisecond",
    ]
    assert starts[1:] == [1000, 1001, 1002, 1003]
    # A cue is never held past the next cue of its own source.
    you = [c for c in cues if c.source == "You"]
    assert all(a.end_ms <= b.start_ms for a, b in zip(you, you[1:]))


def test_single_source_is_not_labelled_unless_asked():
    segs = [Segment("You", 0.0, 1.0, "hello")]
    assert make_cues(segs)[0].lines == ("hello",)
    assert make_cues(segs, label_sources=True)[0].lines == ("You: hello",)
    assert make_cues([]) == []


def test_lines_are_balanced_instead_of_leaving_a_stub():
    text = "one two three four five six seven eight nine ten"  # 48 columns
    (cue,) = segment_cues(Segment("You", 0.0, 3.0, text))
    assert cue.lines == ("one two three four five", "six seven eight nine ten")
    short = "fits on one line"
    assert segment_cues(Segment("You", 0.0, 1.0, short))[0].lines == (short,)


def test_short_caption_stays_on_one_line():
    from captioner.transcript.cues import make_cues
    from captioner.transcript.segment import Segment

    (cue,) = make_cues([Segment("You", 0.0, 1.0, "w1 w2 w3 w4 w5")])
    assert list(cue.lines) == ["w1 w2 w3 w4 w5"]


def test_the_ascii_fast_paths_measure_and_break_as_the_character_rules_do():
    """Issue 30.4 (Save of an 8-hour transcript): ASCII text skips the per-character width rules;
    the widths, pieces and visible counts must be the ones those rules give."""
    import random
    import string

    from captioner.transcript import cues

    rng = random.Random(7)
    for _ in range(500):
        text = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 90)))
        assert cues.display_width(text) == sum(cues.char_width(ch) for ch in text)
        assert not cues.is_cjk_text(text)
        assert cues._visible_chars([text, "a b"]) == sum(
            1 for line in (text, "a b") for ch in line if not ch.isspace() and cues.char_width(ch) > 0)
        # the general piece rules, run on the same text with a non-ASCII character appended
        general = cues._atoms(text + " é")[:-1]
        assert cues._atoms(text) == general
