"""Speed of the embedded default model (Moonshine base-en) through the streaming session.

Renders English sentences with espeak-ng, streams them in 100 ms blocks as fast as possible
through one StreamingSession, and prints JSON: real-time factor, per-step latency
(median/p95/max ms), and WER against the rendered text.

    python bench/default_model.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from captioner.asr import load_backend  # noqa: E402
from captioner.audio.fileio import load_audio  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
from captioner.events import TextDelta  # noqa: E402
from tests.speech import normalize_words, speech_file  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1, help="stream the speech this many times")
    args = ap.parse_args()
    import jiwer

    with tempfile.TemporaryDirectory() as tmp:
        path, ref = speech_file(Path(tmp) / "speech.wav")
        audio = load_audio(path)
    t0 = time.perf_counter()
    backend = load_backend("default")
    load_s = time.perf_counter() - t0
    steps, wers, total, audio_s = [], [], 0.0, 0.0
    for _ in range(args.repeat):
        s = StreamingSession(backend, "bench")
        events = []
        t_run = time.perf_counter()
        for i in range(0, len(audio), 1600):
            t = time.perf_counter()
            events += s.feed(audio[i : i + 1600])
            steps.append((time.perf_counter() - t) * 1000)
        events += s.end()
        total += time.perf_counter() - t_run
        audio_s += len(audio) / 16000
        hyp = " ".join(e.text for e in events if isinstance(e, TextDelta) and e.final)
        wers.append(jiwer.wer(normalize_words(ref), normalize_words(hyp)))
    st = np.array(steps)
    print(json.dumps({
        "backend": backend.describe(),
        "load_s": round(load_s, 3),
        "audio_s": round(audio_s, 2),
        "rtf": round(total / audio_s, 3),
        "step_ms_median": round(float(np.median(st)), 2),
        "step_ms_p95": round(float(np.percentile(st, 95)), 2),
        "step_ms_max": round(float(st.max()), 2),
        "wer": round(float(np.mean(wers)), 4),
    }, indent=2))


if __name__ == "__main__":
    main()
