"""Where a reading finds its draft again, and how much of a draft greedy decoding keeps
(:mod:`captioner.asr.moonshine.draft_tokens`): scripted token ids and logits."""

from __future__ import annotations

import numpy as np

from captioner.asr.moonshine.draft_tokens import accepted, continuation


def logits_choosing(tokens, vocab=50):
    """``[len(tokens), vocab]`` logits whose row i has its maximum at ``tokens[i]``."""
    out = np.zeros((len(tokens), vocab), np.float32)
    out[np.arange(len(tokens)), tokens] = 1.0
    return out


def test_accepted_is_the_longest_prefix_of_greedy_choices():
    rows = logits_choosing([3, 4, 5, 6])
    assert accepted(rows, [3, 4, 5]) == 3
    assert accepted(rows, [3, 4, 9, 6]) == 2  # a token after a wrong one is not kept
    assert accepted(rows, [7]) == 0
    assert accepted(rows, []) == 0


def test_the_draft_goes_on_after_the_last_token_read():
    # "Good morning , everyone ." read as "Good morning everyone ,": after "everyone" the
    # draft's "." follows; nothing is found for a token the draft does not hold
    draft = [10, 11, 12, 13, 14]
    assert continuation(draft, [10, 11, 13]) == [14]
    assert continuation(draft, [10, 11, 99]) == []
    assert continuation(draft, []) == []
    assert continuation(draft, [10, 11, 12, 13, 14]) == []  # the draft ends there


def test_two_tokens_read_place_the_reading_before_one():
    # token 5 twice in the draft: the place that also holds the token before it wins
    draft = [5, 1, 2, 7, 5, 3, 4]
    assert continuation(draft, [7, 5]) == [3, 4]
    assert continuation(draft, [9, 5]) == [1, 2, 7, 5, 3, 4]  # one token only: the place nearest its length


def test_of_equal_places_the_one_nearest_the_readings_length_wins():
    draft = [1, 8, 2, 3, 8, 4, 5, 6, 8, 9]
    assert continuation(draft, [0, 0, 0, 0, 0, 8]) == [4, 5, 6, 8, 9]  # 6 tokens read: the 8 at index 4
    assert continuation(draft, [0, 0, 0, 0, 0, 0, 0, 0, 0, 8]) == [9]
