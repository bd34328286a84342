"""Synthetic meeting audio for the latency benchmark: espeak-ng voices taking turns, with pauses.

Generated at run time (nothing big is committed). Deterministic for a given seed: the
same sentences, voices, speeds and pauses every time.

    python bench/meeting_audio.py out.wav --minutes 2
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

#: Rate of the written WAV (Hz); the captioner resamples at the edge as for any file.
RATE = 16000

#: (espeak-ng voice, words per minute): several speakers of a meeting.
VOICES = [("en-us", 165), ("en-gb", 155), ("en-us+f3", 170), ("en-gb-x-rp", 150), ("en-us+m3", 160)]

SENTENCES = [
    "Good morning everyone, thank you for joining the weekly planning call.",
    "Let us start with a quick update on the release schedule.",
    "The new version of the software is almost ready for testing.",
    "We found two problems in the login page last week.",
    "Both of them are fixed now and the patch is under review.",
    "Can you share the numbers from the customer survey?",
    "Most people said the application is faster than before.",
    "A few users still find the settings page confusing.",
    "I think we should simplify the menu before the next release.",
    "That sounds reasonable, but we need to check with the design team first.",
    "The budget for the second quarter was approved yesterday.",
    "We can hire one more engineer for the mobile team.",
    "Please send the quarterly report to everyone before Friday.",
    "The meeting with the partners is moved to Thursday afternoon.",
    "Does anyone have questions about the travel plans?",
    "I will book the flights and the hotel this week.",
    "The server migration will take place on Saturday night.",
    "During that time the website may be slow for about an hour.",
    "We should tell our customers about it in advance.",
    "Marketing wants to launch the campaign at the end of the month.",
    "The video for the launch is still being edited.",
    "We also need new pictures for the web page.",
    "Let us review the open tickets in the tracker.",
    "There are twelve tickets left, and three of them are urgent.",
    "The most important one is the crash when the network drops.",
    "I can take that one, I worked on the network code before.",
    "Great, then the remaining tickets go to the support team.",
    "Our next training session is planned for the first week of June.",
    "Please register on the internal page if you want to attend.",
    "The office will be closed on Monday because of the holiday.",
    "If you need help during that time, send an email to the help desk.",
    "I would like to thank the team for the hard work this month.",
    "The feedback from the last demo was very positive.",
    "We will meet again at the same time next week.",
    "Before we finish, are there any other topics to discuss?",
    "No, I think we covered everything for today.",
]


@dataclass(frozen=True)
class Utterance:
    """One sentence in the meeting: its text and where it lies in the file (s)."""

    text: str
    start: float
    end: float
    voice: str


def _espeak(text: str, voice: str, wpm: int, path: Path) -> np.ndarray:
    """Render ``text`` with espeak-ng; returns ``[n] float32`` at :data:`RATE`."""
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(wpm), "-w", str(path), text], check=True)
    data, rate = sf.read(path, dtype="float32")
    if data.ndim == 2:
        data = data.mean(axis=1)
    import soxr

    return soxr.resample(data, rate, RATE).astype(np.float32)


def make_meeting(path: str | Path, minutes: float, seed: int = 10) -> list[Utterance]:
    """Write a meeting of about ``minutes`` minutes to ``path`` (16 kHz mono WAV).

    Turns of 1-3 sentences by one voice; 1-4 s pauses between sentences (random,
    seeded); a little background noise (-60 dBFS) so silence is not digital zero.

    Returns:
        the utterances in order with their file times (s), for WER and latency.
    """
    rng = random.Random(seed)
    target = minutes * 60.0
    cache: dict[tuple[str, str], np.ndarray] = {}
    parts: list[np.ndarray] = [np.zeros(int(0.5 * RATE), np.float32)]
    t = 0.5
    utts: list[Utterance] = []
    order: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        while t < target:
            voice, wpm = VOICES[rng.randrange(len(VOICES))]
            for _ in range(rng.randint(1, 3)):
                if not order:
                    order = list(SENTENCES)
                    rng.shuffle(order)
                text = order.pop()
                key = (text, voice)
                if key not in cache:
                    cache[key] = _espeak(text, voice, wpm, Path(tmp) / "u.wav")
                speech = cache[key]
                utts.append(Utterance(text, t, t + len(speech) / RATE, voice))
                gap = rng.uniform(1.0, 4.0)
                parts += [speech, np.zeros(int(gap * RATE), np.float32)]
                t += len(speech) / RATE + int(gap * RATE) / RATE
                if t >= target:
                    break
    audio = np.concatenate(parts)
    audio += np.random.default_rng(seed).normal(0, 1e-3, len(audio)).astype(np.float32)
    sf.write(path, np.clip(audio, -1, 1), RATE, subtype="PCM_16")
    return utts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=10)
    args = ap.parse_args()
    utts = make_meeting(args.out, args.minutes, args.seed)
    print(json.dumps({"utterances": len(utts), "seconds": round(utts[-1].end, 1)}))


if __name__ == "__main__":
    main()
