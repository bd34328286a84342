"""Combining a line's readings (bench.reading_vote; issue 48.2): ROVER word voting and MBR."""

from __future__ import annotations

import math

import pytest

from bench.reading_vote import Reading, mbr, posteriors, rover, word_key


def test_word_key_compares_words_as_wer_scores_them():
    assert word_key("Thursday,") == "thursday"
    assert word_key("don't") == "don't"
    assert word_key("--") == ""


def test_rover_picks_the_majority_word_in_each_slot():
    rs = [Reading("The printer on the third floor is broken.", -0.30),  # the surest, one word off
          Reading("The printer on the third floor is broken.", -0.35),
          Reading("The printer in the third floor is broken.", -0.20),
          Reading("The printer on the third floor was broken.", -0.40)]
    # the pivot (surest) says "in"; three readings say "on": the majority wins
    assert rover(rs, pivot=2) == "The printer on the third floor is broken."


def test_rover_a_lone_outlier_reading_loses():
    rs = [Reading("Send your questions by email.", -0.2),
          Reading("Send your questions by email.", -0.25),
          Reading("Sent you a question spy e-mail now", -0.1)]
    assert rover(rs, pivot=0) == "Send your questions by email."
    # even aligned to the outlier, the two agreeing readings outvote it word by word
    assert word_key(rover(rs, pivot=2).split()[0]) == "send"


def test_rover_insertions_and_deletions_are_voted_against_the_null_word():
    rs = [Reading("We will meet again next week.", -0.2),
          Reading("We will meet again at the same time next week.", -0.3),
          Reading("We will meet again at the same time next week.", -0.3)]
    # two readings insert "at the same time" between "again" and "next": it beats the pivot's nothing
    assert rover(rs, pivot=0) == "We will meet again at the same time next week."
    # one reading inserts a word the other two lack: nothing wins there
    rs = [Reading("Thank you all.", -0.2), Reading("Thank you all.", -0.2), Reading("Thank you all now.", -0.1)]
    assert rover(rs, pivot=2, alpha=1.0) == "Thank you all."


def test_rover_keeps_the_pivot_full_stop_when_its_last_word_is_voted_out():
    rs = [Reading("It was the age of wisdom dude.", -0.1), Reading("It was the age of wisdom", -0.2),
          Reading("It was the age of wisdom", -0.2)]
    assert rover(rs, pivot=0) == "It was the age of wisdom."


def test_rover_ties_go_to_the_pivot_whatever_the_order():
    a, b = Reading("plants turn sunlight", -0.2), Reading("plants join sunlight", -0.2)
    assert rover([a, b], pivot=0) == "plants turn sunlight"
    assert rover([a, b], pivot=1) == "plants join sunlight"
    assert rover([b, a], pivot=1) == "plants turn sunlight"


def test_rover_confidence_decides_between_two_words_with_equal_votes():
    sure = Reading("plants join sunlight", -0.1, [-0.01, -0.02, -0.01])
    unsure = Reading("plants turn sunlight", -0.3, [-0.01, -2.5, -0.01])
    # equal weights, alpha 0: only the word's probability counts: "join" (0.98) beats "turn" (0.08)
    assert rover([unsure, sure], pivot=0, alpha=0.0) == "plants join sunlight"
    assert rover([unsure, sure], pivot=0, alpha=1.0) == "plants turn sunlight"  # a tie: the pivot's


def test_rover_empty_readings():
    assert rover([Reading("", -0.1)], pivot=0) == ""
    # an empty reading votes nothing in every slot: two readings with words outvote it
    rs = [Reading("", -0.05), Reading("Okay.", -0.3), Reading("Okay.", -0.4)]
    assert rover(rs, pivot=1) == "Okay."
    one_each = [Reading("", -0.05), Reading("Okay.", -0.3)]
    assert rover(one_each, pivot=0, alpha=1.0) == ""  # one vote against one: the pivot's
    assert rover(one_each, pivot=0, alpha=0.0, null_confidence=0.9) == ""  # "okay" at 0.74 against 0.9
    assert rover(one_each, pivot=0, alpha=0.0, null_confidence=0.5) == "Okay."


def test_rover_word_logprobs_of_the_wrong_length_fall_back_to_the_score():
    r = Reading("one two", -0.5, [-0.1])
    assert [p for _, _, p in r.words] == pytest.approx([math.exp(-0.5)] * 2)


def test_posteriors_are_a_tempered_softmax():
    assert posteriors([-0.1, -0.1]) == pytest.approx([0.5, 0.5])
    p = posteriors([0.0, -0.1], temperature=0.1)
    assert p == pytest.approx([1 / (1 + math.exp(-1)), math.exp(-1) / (1 + math.exp(-1))])
    assert posteriors([0.0, -5.0], temperature=0.0) == [0.5, 0.5]  # 0: uniform
    assert posteriors([]) == []


def test_mbr_picks_the_reading_closest_to_the_others():
    rs = [Reading("a lone outlier reading here", -0.05),
          Reading("the printer is broken again", -0.3),
          Reading("the printer is broken again", -0.35),
          Reading("the printer was broken again", -0.3)]
    assert mbr(rs, [0.25] * 4) == 1  # the earliest of the two identical medoids... after the score
    # a strong posterior on one reading makes it the choice
    assert mbr(rs, [0.97, 0.01, 0.01, 0.01]) == 0


def test_mbr_ties_go_to_the_surer_then_the_earlier_reading():
    rs = [Reading("turn", -0.3), Reading("join", -0.2)]
    assert mbr(rs, [0.5, 0.5]) == 1
    rs = [Reading("turn", -0.2), Reading("join", -0.2)]
    assert mbr(rs, [0.5, 0.5]) == 0
    with pytest.raises(ValueError):
        mbr([])
