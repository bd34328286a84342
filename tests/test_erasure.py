"""The erasure measure (captioner.transcript.erasure), on scripted partial sequences.

The values are counted by hand; ``bench/latency.py`` computes its ``erasure`` field with
the same module (loaded by path), checked by :func:`test_bench_uses_the_same_code`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from captioner.events import TextDelta, TurnBoundary
from captioner.transcript.erasure import erasure, first_shown

ROOT = Path(__file__).resolve().parents[1]


def P(text, source=""):
    return TextDelta(text, 0.0, 0.0, final=False, source=source)


def F(text, source=""):
    return TextDelta(text, 0.0, 0.0, final=True, source=source)


#: The issue's example: every re-decode rewrites the last word and ends on a full stop.
FLICKER = [
    (0.0, P("Welcome back to the world.")),
    (0.3, P("Welcome back to the weekly.")),  # "world." changed: 1
    (0.6, P("Welcome back to the weekly planning meet.")),  # "weekly." -> "weekly": 1
    (0.9, F("Welcome back to the weekly planning meeting.")),  # "meet." -> "meeting.": 1
    (0.91, TurnBoundary(0.9, "line")),
    (0.92, P("")),  # same screen as the final
]


def test_flicker_counts_each_changed_word_as_shown():
    r = erasure(FLICKER)
    assert (r.erased_words, r.final_words, r.screens) == (3, 7, 4)
    assert r.ratio == pytest.approx(3 / 7)


def test_normalised_counts_only_changed_words():
    r = erasure(FLICKER, normalise=True)
    assert (r.erased_words, r.final_words) == (2, 7)  # "world" -> "weekly", "meet" -> "meeting"


def test_steady_tail_erases_nothing():
    events = [
        (0.0, P("Welcome back")),
        (0.3, P("Welcome back to the")),
        (0.6, F("Welcome back to")),
        (0.6, P(" the weekly")),
        (0.9, F(" the weekly planning meeting.")),
        (0.9, P("")),
    ]
    r = erasure(events)
    assert (r.erased_words, r.final_words) == (0, 7)
    assert r.ratio == 0.0


def test_events_less_than_50_ms_apart_are_one_screen():
    events = [(0.0, P("a b c")), (0.02, P("a x")), (0.2, P("a b d")), (1.0, F("a b d e"))]
    # "a b c" is never read; "a x" -> "a b d" takes back "x"
    assert erasure(events).erased_words == 1
    # without merging: "a b c" -> "a x" takes back "b", "c"; then "x"
    assert erasure(events, gap_s=0.0).erased_words == 3
    # the 50 ms chain: each event within 50 ms of the previous one extends the screen
    chain = [(0.0, P("a b")), (0.04, P("a c")), (0.08, P("a d")), (0.5, F("a d"))]
    assert erasure(chain).erased_words == 0
    assert erasure(chain).screens == 2


def test_sources_are_apart_and_committed_text_stays():
    events = [
        (0.0, F("Hello", "A")),
        (0.01, P(" world.", "A")),
        (0.02, P("Yes.", "B")),  # 20 ms after A's event: still its own screen
        (0.3, P(" word", "A")),  # "world." -> "word": 1
        (0.31, F("Yes.", "B")),
        (0.6, F(" world.", "A")),  # "word" -> "world.": 1
    ]
    r = erasure(events)
    assert r.per_source == {"A": (2, 2), "B": (0, 1)}
    assert r.ratio == pytest.approx(2 / 3)


def test_a_tail_that_continues_the_last_committed_word():
    events = [
        (0.0, F("meet")),
        (0.01, P("ing now")),  # the reader sees "meeting now"
        (0.5, F("ing")),
        (0.5, P(" now")),  # still "meeting now"
        (1.0, P("")),  # "now" taken back
    ]
    r = erasure(events)
    assert (r.erased_words, r.final_words) == (1, 1)


def test_no_final_words():
    r = erasure([(0.0, P("hm")), (0.5, P(""))])
    assert (r.erased_words, r.final_words, r.ratio) == (1, 0, None)


def test_bench_uses_the_same_code():
    spec = importlib.util.spec_from_file_location("bench_latency", ROOT / "bench" / "latency.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert Path(bench.load_erasure().__file__).resolve() == ROOT / "captioner" / "transcript" / "erasure.py"
    got = bench.stability(FLICKER)
    assert got["erasure"] == pytest.approx(3 / 7, abs=1e-3)
    assert (got["erased_words"], got["final_words"]) == (3, 7)
    assert got["erasure_normalised"] == pytest.approx(2 / 7, abs=1e-3)


def test_punctuation_appended_to_a_shown_word_is_not_erased():
    events = [
        (0.0, P("the weekly planning meeting")),
        (0.3, F("the weekly, planning meeting.")),  # "weekly" and "meeting" only gain punctuation
        (0.6, F(" Next")),
    ]
    assert erasure(events).erased_words == 0
    # punctuation taken away, or a word that merely starts the same, is a change
    assert erasure([(0.0, P("weekly.")), (0.3, F("weekly"))]).erased_words == 1
    assert erasure([(0.0, P("meet")), (0.3, F("meeting"))]).erased_words == 1


def test_first_shown_is_when_a_word_stood_for_good():
    events = [
        (0.0, P("Welcome back")),  # both final words, for good from 0.0
        (0.3, P("Welcome back to the world")),  # "to", "the" for good from 0.3; "world" is wrong
        (0.6, P("Welcome back to")),  # "the" taken back: it stands again from 0.9
        (0.9, P("Welcome back to the weekly")),
        (1.2, F("Welcome back to the weekly meeting.")),
    ]
    assert first_shown(events) == {"": [0.0, 0.0, 0.3, 0.9, 0.9, 1.2]}
