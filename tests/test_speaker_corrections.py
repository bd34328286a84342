"""Live corrections of speaker labels (issue 51): the second pass relabels a shown line once, and
the transcript, the journal, ``recover`` and the pane follow it as they follow a rename."""

from __future__ import annotations

import numpy as np

from captioner.events import SpeakerFix, TextDelta, TurnBoundary
from captioner.speakers.options import AUTO
from captioner.speakers.recluster import Stretch
from captioner.speakers.registry import CORRECT_EVERY, CORRECT_FROM, CORRECT_SETTLED, SpeakerRegistry
from captioner.transcript.journal import Journal
from captioner.transcript.journal_recovery import read_journal, recover
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import Transcript
from captioner.transcript.writers import format_transcript

CALL = "Meeting"


def _events() -> list:
    return [
        TextDelta("Can we move the review?", 0.0, 2.0, True, CALL, speaker="Speaker 1"),
        TurnBoundary(2.3, "semantic", 0.9, CALL),
        TextDelta("Thursday works for me.", 2.6, 4.5, True, CALL, speaker="Speaker 2"),
        TurnBoundary(4.8, "semantic", 0.9, CALL),
        TextDelta("Then Thursday it is.", 5.0, 6.5, True, CALL, speaker="Speaker 3"),
    ]


def test_a_fix_relabels_the_segments_it_covers_and_nothing_else():
    t = Transcript()
    t.extend(_events())
    changed = t.add(SpeakerFix(2.6, 4.5, "Speaker 1", CALL))
    assert [(s.start, s.speaker) for s in changed] == [(2.6, "Speaker 1")]
    assert changed[0].text == "Thursday works for me."  # same key: a view replaces its line
    assert [s.speaker for s in t.segments] == ["Speaker 1", "Speaker 1", "Speaker 3"]
    # the open segment follows too, and another source's text never does
    assert t.add(SpeakerFix(5.0, 6.5, "Speaker 2", CALL)) == []
    assert t.add(SpeakerFix(0.0, 9.0, "Speaker 9", "You")) == []
    t.close_all()
    assert [s.speaker for s in t.segments] == ["Speaker 1", "Speaker 1", "Speaker 2"]
    assert "Speaker 1: Thursday works for me." not in format_transcript(t, "txt")  # one run of Speaker 1
    assert "Speaker 2: Then Thursday it is." in format_transcript(t, "txt")


def test_a_fix_is_journalled_and_recover_rebuilds_it(tmp_path):
    path = tmp_path / "session-20261207-100000-abcdef.jsonl"
    live = LiveTranscript(Journal(path, sources=[CALL]))
    for ev in _events():
        live.add(ev)
    live.add(SpeakerFix(2.6, 4.5, "Speaker 1", CALL))
    assert [s.speaker for s in live.closed_segments] == ["Speaker 1"]
    assert live.flush() is None
    assert read_journal(path)[-1] == {"type": "speaker_fix", "source": CALL, "start": 2.6, "end": 4.5,
                                      "speaker": "Speaker 1"}
    rebuilt = recover(path)
    assert [(s.text, s.speaker) for s in rebuilt.segments] == [(s.text, s.speaker) for s in live.transcript.segments]


def _voice(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(192).astype(np.float32)
    return v / np.linalg.norm(v)


def _noisy(v: np.ndarray, rng) -> np.ndarray:
    e = v + 0.6 * rng.standard_normal(v.shape).astype(np.float32) / np.sqrt(len(v))
    return (e / np.linalg.norm(e)).astype(np.float32)


class _Loaded(SpeakerRegistry):
    def __init__(self):
        super().__init__(AUTO, load=lambda: type("Encoder", (), {"kind": "campplus"})(), vad=lambda: None)
        assert self.encoder() is not None  # loaded: CAM++'s thresholds


def test_corrections_come_every_few_stretches_once_each_and_never_for_the_newest():
    rng = np.random.default_rng(0)
    a, b = _voice(1), _voice(2)
    reg = _Loaded()
    truth = ["a", "b"] * 16
    # the live labelling opened voice b twice: "Speaker 2", later "Speaker 3"
    live = ["Speaker 1" if v == "a" else ("Speaker 2" if i < 12 else "Speaker 3") for i, v in enumerate(truth)]
    fixes = []
    for i, (v, lab) in enumerate(zip(truth, live)):
        reg.stretches.append(Stretch(CALL, 2.0 * i, 2.0 * i + 1.8, _noisy(a if v == "a" else b, rng), 1.8, lab))
        got = reg.corrections()
        assert not got or i + 1 >= CORRECT_FROM  # too few stretches to cluster on: no correction
        fixes += got
    assert len(fixes) >= 1
    assert {f.speaker for f in fixes} == {"Speaker 2"}  # "Speaker 3" folded into the voice's id with most speech
    assert all(f.source == CALL for f in fixes)
    passes = len(truth) // CORRECT_EVERY
    newest = [2.0 * i for i in range(passes * CORRECT_EVERY - CORRECT_SETTLED, passes * CORRECT_EVERY)]
    assert not any(f.start in newest for f in fixes)
    fixed_starts = [f.start for f in fixes]
    assert len(fixed_starts) == len(set(fixed_starts))  # once each
    # the end of the stream: the rest settles; nothing is corrected twice
    more = reg.corrections(force=True)
    assert not set(f.start for f in more) & set(fixed_starts)
    assert all(s.speaker == ("Speaker 1" if v == "a" else "Speaker 2") for s, v in zip(reg.stretches, truth))
    assert reg.corrections(force=True) == []
    # the folded speaker attracts nothing any more
    assert "Speaker 3" not in [s.ident for s in reg.clusters.speakers]
