"""bench/sounds_live.py's pure helpers (issue 49): the clip's composition and the caption matching."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from bench.sounds_live import INTO_SENTENCE_S, PAUSE_BEFORE_S, PAUSE_INTO_S, RATE, compose, match_sounds


def ev(label: str, start: float, end: float) -> SimpleNamespace:
    return SimpleNamespace(label=label, start=start, end=end)


TRUTH = [
    {"clip": "ring", "label": "phone ringing", "also": [], "mode": "pause", "start_s": 10.0, "duration_s": 6.0},
    {"clip": "melody", "label": "phone ringing", "also": ["music"], "mode": "speech", "start_s": 30.0,
     "duration_s": 5.0},
    {"clip": "siren", "label": "siren", "also": [], "mode": "pause", "start_s": 50.0, "duration_s": 5.0},
]


def test_match_takes_the_first_caption_whose_start_lies_in_the_sound():
    got = [(11.9, ev("phone ringing", 9.3, 11.22)),    # its first patch began 0.7 s before the ring
           (15.0, ev("phone ringing", 14.0, 15.44)),   # the same ring captioned twice
           (20.0, ev("music", 18.0, 19.44)),           # over speech, no sound: unmatched
           (32.5, ev("music", 30.5, 31.94)),           # the melody as [music]: allowed by also
           (57.0, ev("siren", 55.5, 56.9))]            # starts after the siren ended: not it
    out = match_sounds(TRUTH, got)
    ring, melody, siren = out["per_event"]
    assert ring["found"] and ring["captions"] == 2
    assert ring["latency_s"] == 1.9 and ring["stream_latency_s"] == 1.22 and ring["engine_delay_s"] == 0.68
    assert not melody["found"] and melody["found_as_also"] and melody["captions"] == 1
    assert melody["latency_s"] == 2.5 and melody["caption"]["label"] == "music"
    assert not siren["found"] and siren["latency_s"] is None
    assert [u["at_s"] for u in out["unmatched"]] == [20.0, 57.0]
    s = out["summary"]
    assert (s["events"], s["found"], s["found_as_also"], s["captioned_once"], s["within_1s"]) == (3, 1, 1, 1, 0)
    assert s["latency_s"]["n"] == 2 and s["latency_s"]["max"] == 2.5


def test_compose_pauses_the_talk_between_sentences_and_keeps_every_sentence():
    # a bed of 2 s "sentences" (constant 0.3) with 1 s gaps, 120 s long
    sentences = [{"text": f"s{i}", "start": 1.0 + 3.0 * i, "end": 3.0 + 3.0 * i} for i in range(39)]
    bed = np.zeros(120 * RATE, np.float32)
    for s in sentences:
        bed[int(s["start"] * RATE):int(s["end"] * RATE)] = 0.3
    tone = (0.5 * np.sin(2 * np.pi * 1000 * np.arange(4 * RATE) / RATE)).astype(np.float32)
    sounds = [({"clip": "a", "mode": "pause", "level_db": -23.0}, tone),
              ({"clip": "b", "mode": "speech", "level_db": -23.0}, tone)]
    audio, truth, said = compose(bed, sentences, sounds)
    a, b = truth
    assert a["duration_s"] == 4.0 and a["start_s"] < b["start_s"] - 4.0
    quiet = audio[int((a["start_s"] - PAUSE_BEFORE_S) * RATE):int(a["start_s"] * RATE)]
    assert np.abs(quiet).max() < 0.01  # no talk in the second before the sound
    into = audio[int((a["start_s"] + 0.1) * RATE):int((a["start_s"] + PAUSE_INTO_S - 0.1) * RATE)]
    assert abs(float(np.mean(into))) < 0.01  # the tone alone (its mean is 0) until the talk resumes
    # every sentence said is whole at its clip time (0.3 plus the noise floor, and the tone over it)
    assert [s["text"] for s in said] == [s["text"] for s in sentences[:len(said)]]
    for s in said:
        mid = audio[int((s["start"] + 0.2) * RATE):int((s["end"] - 0.2) * RATE)]
        assert abs(float(np.mean(mid)) - 0.3) < 0.02, s
    # the speech sound starts 0.3 s into a sentence, and the clip ends on a whole one
    assert any(abs(b["start_s"] - (s["start"] + INTO_SENTENCE_S)) < 1e-6 for s in said)
    assert said[-1]["end"] >= b["start_s"] + b["duration_s"] and len(audio) / RATE < said[-1]["end"] + 0.6
