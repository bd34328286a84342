"""The speakers' second pass over a whole session (issue 51): captioner/speakers/recluster.py."""

from __future__ import annotations

import numpy as np

from captioner.events import TextDelta, TurnBoundary
from captioner.speakers.recluster import Stretch, cluster, relabel, relabel_events


def _voices(k: int, dim: int = 192, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((k, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _near(centre: np.ndarray, rng, spread: float = 0.6) -> np.ndarray:
    """A stretch of a voice: its centre plus noise of norm ~``spread`` (cos ~0.86 to it, ~0.73
    between two stretches of the voice, ~0 between voices)."""
    e = centre + spread * rng.standard_normal(centre.shape).astype(np.float32) / np.sqrt(len(centre))
    return (e / np.linalg.norm(e)).astype(np.float32)


def test_cluster_finds_the_number_of_voices_from_the_data():
    rng = np.random.default_rng(1)
    voices = _voices(4)
    truth = [i % 4 for i in range(40)]
    emb = np.stack([_near(voices[t], rng) for t in truth])
    lab = cluster(emb, max_speakers=20)
    assert len(set(lab)) == 4
    # the same partition as the truth (numbers in order of first appearance)
    assert list(lab) == truth


def test_cluster_never_makes_more_than_max_speakers():
    rng = np.random.default_rng(2)
    voices = _voices(5)
    emb = np.stack([_near(voices[i % 5], rng) for i in range(30)])
    assert len(set(cluster(emb, max_speakers=3))) == 3
    assert len(set(cluster(emb, max_speakers=1))) == 1


def test_a_voice_opened_twice_live_is_one_speaker_after_the_second_pass():
    rng = np.random.default_rng(3)
    a, b = _voices(2, seed=4)
    stretches = []
    live = ["Speaker 1", "Speaker 2", "Speaker 1", "Speaker 3", "Speaker 2", "Speaker 3", "Speaker 1", "Speaker 2"]
    truth = ["a", "b", "a", "b", "b", "b", "a", "b"]  # live opened "b" twice: Speaker 2 and Speaker 3
    for i, (lab, t) in enumerate(zip(live, truth)):
        stretches.append(Stretch("Meeting", 2.0 * i, 2.0 * i + 1.8, _near(a if t == "a" else b, rng), 1.8, lab))
    new = relabel(stretches, max_speakers=20)
    assert new == ["Speaker 1" if t == "a" else "Speaker 2" for t in truth]
    # a file nobody has seen: numbered in order of first appearance
    assert relabel(stretches, 20, renumber=True) == new


def test_short_and_unembedded_stretches_keep_their_live_label_unless_clearly_elsewhere():
    rng = np.random.default_rng(5)
    a, b = _voices(2, seed=6)
    stretches = [Stretch("M", 2.0 * i, 2.0 * i + 1.8, _near(a if i % 2 == 0 else b, rng), 1.8,
                         "Speaker 1" if i % 2 == 0 else "Speaker 2") for i in range(8)]
    stretches.append(Stretch("M", 20.0, 20.4, None, 0.4, "Speaker 1"))  # "Yes.": no embedding
    stretches.append(Stretch("M", 21.0, 21.5, _near(b, rng, 0.1), 0.5, "Speaker 1"))  # short, clearly b
    new = relabel(stretches, 20)
    assert new[8] == "Speaker 1"
    assert new[9] == "Speaker 2"


def test_one_voice_stays_one_speaker():
    rng = np.random.default_rng(7)
    (a,) = _voices(1, seed=8)
    stretches = [Stretch("M", 2.0 * i, 2.0 * i + 1.8, _near(a, rng), 1.8, "Speaker 1") for i in range(30)]
    assert set(relabel(stretches, 20)) == {"Speaker 1"}


def test_relabel_events_gives_each_final_the_label_of_the_stretch_it_overlaps_most():
    stretches = [(Stretch("M", 0.0, 2.0, None, 2.0, "Speaker 1"), "Speaker 2"),
                 (Stretch("M", 2.5, 4.0, None, 1.5, "Speaker 2"), "Speaker 2"),
                 (Stretch("You", 0.0, 2.0, None, 2.0, "Speaker 1"), "Speaker 9")]
    events = [TextDelta("Hello there.", 0.0, 2.0, True, "M", speaker="Speaker 1"),
              TextDelta("partial", 2.5, 3.0, False, "M"),
              TurnBoundary(2.2, "semantic", 0.9, "M"),
              TextDelta("Fine.", 2.5, 4.0, True, "M", speaker="Speaker 2"),
              TextDelta("Unlabelled.", 5.0, 6.0, True, "M")]
    out = relabel_events(events, stretches)
    assert [getattr(e, "speaker", None) for e in out] == ["Speaker 2", "", None, "Speaker 2", ""]
    assert out[2] is events[2] and out[4] is events[4]


def test_a_mark_of_doubt_stays_unless_one_voice_is_clearly_it():
    from captioner.speakers.clustering import UNSURE

    rng = np.random.default_rng(9)
    a, b, c = _voices(3, seed=10)
    stretches = [Stretch("M", 2.0 * i, 2.0 * i + 1.8, _near(a if i % 2 == 0 else b, rng), 1.8,
                         "Speaker 1" if i % 2 == 0 else "Speaker 2") for i in range(8)]
    stretches.append(Stretch("M", 20.0, 20.5, _near(c, rng), 0.5, UNSURE))  # a voice nobody has
    stretches.append(Stretch("M", 21.0, 21.5, _near(b, rng, 0.2), 0.5, UNSURE))  # clearly b
    new = relabel(stretches, 20, renumber=True)
    assert new[8] == UNSURE and new[9] == "Speaker 2"
    assert UNSURE not in new[:8]
