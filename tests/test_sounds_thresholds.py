"""The shipped sound-caption thresholds (captioner/sounds/classes.py, issue 49 second pass) on
scripted class probabilities: what a short notification, a ring, a jingle, a laugh and breaking
glass give. Probabilities are the model's quantised levels (``p = sigmoid(0.7565417 * (q - 190))``).
No model is loaded."""

from __future__ import annotations

import math

import numpy as np
import pytest

from captioner.sounds.classes import SOUNDS, SoundClass
from captioner.sounds.detector import PATCH_S, SoundDetector
from captioner.sounds.frontend import PATCH_HOP_S

NAMES = sorted({"Speech"} | {c for s in SOUNDS for c in s.classes})
PATCH = 7680  # samples between patch starts (0.48 s)
FIRST = 15600  # samples that complete the first patch (0.975 s)


def q(level: int) -> float:
    """The probability of the model's uint8 logit ``level`` (190 -> 0.5, 192 -> 0.8195)."""
    return 1.0 / (1.0 + math.exp(-0.7565417 * (level - 190)))


class Scripted:
    """The i-th call returns row i ({class name: probability}); absent classes score 0."""

    def __init__(self, rows: list[dict[str, float]], names: list[str]) -> None:
        self.rows, self.names, self.calls = rows, names, 0

    def __call__(self, patch: np.ndarray) -> np.ndarray:
        row = self.rows[self.calls] if self.calls < len(self.rows) else {}
        self.calls += 1
        probs = np.zeros(len(self.names), np.float32)
        for name, p in row.items():
            probs[self.names.index(name)] = p
        return probs


def detect(rows: list[dict[str, float]], sounds=SOUNDS, names=NAMES) -> list:
    det = SoundDetector(Scripted(rows, names), names, sounds)
    x = (0.01 * np.random.default_rng(1).standard_normal(FIRST + (len(rows) - 1) * PATCH)).astype(np.float32)
    out = []
    for i in range(0, len(x), 1600):
        out += det.feed(x[i:i + 1600])
    return out


def labels(rows: list[dict[str, float]], **kw) -> list[str]:
    return [e.label for e in detect(rows, **kw)]


QUIET: dict[str, float] = {"Speech": q(196)}


def test_need_three_patches_in_a_row_and_the_event_spans_them():
    sounds = (SoundClass("phone ringing", ("Telephone",), on=0.6, need=3, instant=None),)
    names = ["Speech", "Telephone"]
    assert labels([QUIET, {"Telephone": 0.99}, {"Telephone": 0.99}, QUIET, QUIET], sounds=sounds, names=names) == []
    events = detect([QUIET, {"Telephone": 0.7}, {"Telephone": 0.7}, {"Telephone": 0.7}, QUIET], sounds, names)
    assert [e.label for e in events] == ["phone ringing"]
    assert events[0].start == pytest.approx(PATCH_HOP_S)
    assert events[0].end == pytest.approx(PATCH_HOP_S + 2 * PATCH_HOP_S + PATCH_S)
    # a dip under ``on`` in the middle starts the count again
    rows = [{"Telephone": 0.7}] * 2 + [{"Telephone": 0.5}] + [{"Telephone": 0.7}] * 2 + [QUIET]
    assert labels(rows, sounds=sounds, names=names) == []


def test_any_combines_sibling_classes_and_max_does_not():
    names = ["Speech", "Laughter", "Giggle"]
    split = [{"Laughter": 0.4, "Giggle": 0.4}] * 3
    anyl = (SoundClass("laughter", ("Laughter", "Giggle"), on=0.5, instant=None, combine="any"),)
    maxl = (SoundClass("laughter", ("Laughter", "Giggle"), on=0.5, instant=None, combine="max"),)
    assert labels(split, sounds=anyl, names=names) == ["laughter"]
    assert labels(split, sounds=maxl, names=names) == []
    det = SoundDetector(Scripted([], names), names, anyl)
    probs = np.array([0.0, 0.4, 0.4], np.float32)
    assert det.scores(probs)[0] == pytest.approx(1 - 0.6 * 0.6, abs=1e-6)  # 0.64, above either class
    assert SoundDetector(Scripted([], names), names, maxl).scores(probs)[0] == pytest.approx(0.4)


def test_a_short_notification_is_not_a_phone_ringing_but_a_ring_is():
    # a notification sound: "Telephone" 0.99 on one patch, 0.82 on the next (lomiri "Slick")
    assert labels([QUIET, {"Telephone": q(196)}, {"Telephone": q(192)}, QUIET] + [QUIET] * 3) == []
    # a ring: three patches in a row at 0.68 or more
    ring = [QUIET] + [{"Telephone": q(191)}] * 3 + [QUIET]
    assert labels(ring) == ["phone ringing"]


def test_a_notification_jingle_is_not_music_but_music_is():
    # one patch at 0.95, the next at 0.5: a desktop notification jingle (oxygen "Im-Message-In")
    assert labels([QUIET, {"Music": q(194)}, {"Music": q(190)}, QUIET, QUIET]) == []
    # two patches in a row at 0.68
    assert labels([QUIET, {"Music": q(191)}, {"Music": q(191)}, QUIET]) == ["music"]
    # one patch at 0.99: at once
    events = detect([QUIET, {"Music": q(196)}, QUIET, QUIET])
    assert [e.label for e in events] == ["music"] and events[0].end == pytest.approx(PATCH_HOP_S + PATCH_S)


def test_a_laugh_split_between_its_classes_is_laughter_a_cough_is_not():
    laugh = {"Laughter": q(190), "Giggle": q(190), "Speech": q(188)}  # 1 - 0.5 * 0.5 = 0.75 >= 0.6
    assert labels([QUIET, laugh, QUIET, QUIET]) == ["laughter"]
    cough = {"Laughter": q(189), "Speech": q(190)}  # 0.32 on one patch: the highest everyday sound
    assert labels([QUIET, cough, QUIET, QUIET]) == []
    # two patches of 0.32 + 0.18: 1 - 0.68 * 0.82 = 0.44 >= 0.4; 0.32 + 0.09 (0.38) is not enough
    assert labels([QUIET] + [{"Laughter": q(189), "Snicker": q(188)}] * 2 + [QUIET]) == ["laughter"]
    assert labels([QUIET] + [{"Laughter": q(189), "Snicker": q(187)}] * 2 + [QUIET]) == []


def test_breaking_glass_is_caught_from_one_patch():
    assert labels([QUIET, {"Breaking": q(191)}, QUIET, QUIET]) == ["glass breaking"]
    assert labels([QUIET, {"Breaking": q(189), "Shatter": q(188)}, QUIET, QUIET]) == []  # an axe on wood


def test_speech_at_full_score_raises_nothing_with_the_shipped_thresholds():
    assert labels([{"Speech": 1.0}] * 30) == []


def test_every_shipped_label_has_a_valid_rule():
    for s in SOUNDS:
        assert s.combine in ("max", "any") and s.need >= 2
        assert 0 < s.off < s.on <= 1 and (s.instant is None or s.on <= s.instant <= 1)
