"""A 6-channel 48 kHz file with speech only in the centre channel is transcribed (issue #3).

The file is played as if live (FileSource, faster than real time) through the same
edge conversion as a device: every channel is averaged, so the centre survives at
1/6 of its level and the default model still hears it.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
import soundfile as sf

from captioner.audio.edge import EdgeConverter
from captioner.audio.filesource import FileSource
from captioner.engine.live import LiveCaptioner
from captioner.events import TextDelta

TEXT = "The quarterly budget meeting starts on Monday morning in the large conference room."

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (CI installs it)"),
]


def test_centre_only_51_file_is_transcribed(tmp_path):
    from captioner.asr import load_backend

    raw = tmp_path / "raw.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(raw), TEXT], check=True)
    x, rate = sf.read(raw, dtype="float32")
    conv = EdgeConverter(rate, 1, 48000, quality="VHQ")
    centre = np.concatenate([conv.process(x), conv.flush(), np.zeros(48000, np.float32)])
    frames = np.zeros((len(centre), 6), np.float32)
    frames[:, 2] = centre  # FL FR C LFE SL SR
    path = tmp_path / "film51.wav"
    sf.write(path, frames, 48000, subtype="PCM_16")
    assert sf.info(path).channels == 6 and sf.info(path).samplerate == 48000

    backend = load_backend("default")
    try:
        events = []
        live = LiveCaptioner(backend, [FileSource(path, "Film", realtime=False)], events.append)
        live.start()
        assert live.wait(300)
    finally:
        backend.close()
    text = " ".join(e.text for e in events if isinstance(e, TextDelta) and e.final and e.source == "Film")
    words = set(re.sub(r"[^a-z ]+", " ", text.lower()).split())
    assert len(words & {"quarterly", "budget", "meeting", "monday", "morning", "conference", "room"}) >= 5, text
