"""Real English speech for tests: espeak-ng renders sentences to WAV (22.05 kHz mono).

espeak-ng is a Debian package (the test command installs it); speech is generated at test
time, so no audio fixtures are committed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import soundfile as sf

SENTENCES = [
    "The meeting will start at nine tomorrow morning in the small conference room.",
    "Please send the quarterly report to everyone on the team before Friday.",
    "We need more time to test the new version of the software.",
    "She said that the weather would be cold and rainy all week.",
    "Thank you all for joining the call today.",
]


def have_espeak() -> bool:
    """True when the espeak-ng binary is on PATH."""
    return shutil.which("espeak-ng") is not None


def espeak(text: str, path: Path, speed_wpm: int = 160) -> Path:
    """Render ``text`` with espeak-ng into ``path`` (WAV, 22050 Hz mono int16)."""
    subprocess.run(["espeak-ng", "-s", str(speed_wpm), "-w", str(path), text], check=True)
    return path


def speech_file(path: Path, sentences: list[str] = SENTENCES, gap_s: float = 0.8) -> tuple[Path, str]:
    """Render sentences with ``gap_s`` seconds of silence between them into one WAV.

    Returns:
        (path, reference text).
    """
    parts = []
    rate = None
    for i, s in enumerate(sentences):
        part = espeak(s, path.with_name(f"{path.stem}_{i}.wav"))
        data, rate = sf.read(part, dtype="float32")
        parts += [data, np.zeros(int(gap_s * rate), np.float32)]
    sf.write(path, np.concatenate(parts), rate)
    return path, " ".join(sentences)


def normalize_words(text: str) -> str:
    """Lower-case, punctuation removed, single spaces: the usual WER normalisation."""
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())
