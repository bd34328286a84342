"""Retention: nothing a long live session keeps grows without bound (issue 10, item 4).

In the style of WhisperLiveKit's ``test_retention.py``: hours of simulated audio through
the default model's backend logic (its runtime replaced by a scripted fake with the same
events, so the test runs in seconds without the model), then every buffer is checked.
Measured with the real runtime (bench/latency.py): the runtime keeps every line and VAD
segment of a stream, so RSS grew ~15 MB/min and each pass got slower; the backend now
replaces the stream at a quiet moment every ``ROTATE_S`` seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("moonshine_voice")

from moonshine_voice.moonshine_api import TranscriptLine  # noqa: E402
from moonshine_voice.transcriber import LineCompleted, LineUpdated  # noqa: E402

from captioner.asr import moonshine as ms  # noqa: E402
from captioner.asr.base import StepRow  # noqa: E402
from captioner.engine.scheduler import DecodeBudget  # noqa: E402
from captioner.events import TextDelta  # noqa: E402

SR = 16000
LINE_S, PAUSE_S, HANGOVER_S = 4.0, 2.0, 0.5
WORDS = "alpha beta gamma delta epsilon zeta eta theta".split()


class FakeStream:
    """Scripted runtime stream: a 4 s line every 6 s of its own time, completed 0.5 s after."""

    created = 0
    open_streams = 0

    def __init__(self) -> None:
        FakeStream.created += 1
        FakeStream.open_streams += 1
        self.samples = 0
        self.listeners = []
        self.done = set()
        self._handle = FakeStream.created

    def add_listener(self, fn) -> None:
        self.listeners.append(fn)

    def start(self) -> None:
        pass

    def _line(self, k: int, complete: bool, now: float) -> TranscriptLine:
        start = k * (LINE_S + PAUSE_S) + 0.2
        dur = LINE_S if complete else max(0.0, min(LINE_S, now - start))
        return TranscriptLine(text=" ".join(WORDS) if complete else "", start_time=start, duration=dur,
                              line_id=self._handle * 10**6 + k, is_complete=complete)

    def update_transcription(self, flags: int = 0) -> None:
        now = self.samples / SR
        k = int((now - 0.2) // (LINE_S + PAUSE_S)) if now > 0.2 else -1
        for j in range(max(0, k - 1), k + 1):
            start = j * (LINE_S + PAUSE_S) + 0.2
            if j in self.done or now < start:
                continue
            line_done = now >= start + LINE_S + HANGOVER_S
            line = self._line(j, line_done, now)
            event = LineCompleted(line=line, stream_handle=0) if line_done else LineUpdated(line=line, stream_handle=0)
            if line_done:
                self.done.add(j)
            for fn in self.listeners:
                fn(event)

    def stop(self) -> None:
        self.update_transcription()

    def close(self) -> None:
        FakeStream.open_streams -= 1
        self.listeners = []


class ScriptedMoonshine(ms.MoonshineBackend):
    """The real backend logic on the scripted runtime (no model load)."""

    def __init__(self, clock) -> None:  # noqa: D401 - no super(): nothing to load
        self.model_dir = None
        self.geometry = ms.ChunkGeometry(SR, ms.CHUNK_SAMPLES, ms.CHUNK_SAMPLES)
        self.batch_size = 2
        self.budget = DecodeBudget(clock=clock)
        self.partials = True
        self._since_trim = 0
        self.tuning = {}

    def _new_stream(self, state=None):
        stream = FakeStream()
        if state is not None:
            stream.add_listener(state.events.append)
        return stream

    def _add_audio(self, state, audio) -> None:
        state.stream.samples += len(audio)

    def _decode_clip(self, audio) -> str:
        n = int(len(WORDS) * min(1.0, (len(audio) / SR - ms.PARTIAL_PAD_S) / LINE_S))
        return " ".join(WORDS[: max(0, n)])


def test_hours_of_audio_keep_every_buffer_bounded_and_finals_exact():
    t = [0.0]
    backend = ScriptedMoonshine(lambda: t[0])
    state = None
    chunk = np.zeros(ms.CHUNK_SAMPLES, np.float32)
    finals: list[str] = []
    partials = 0
    hours = 2.0
    steps = int(hours * 3600 / 0.1)
    ring_max = finished_max = 0
    for i in range(steps):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk, state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta):
                if ev.final:
                    finals.append(ev.text)
                elif ev.text:
                    partials += 1
        ring_max = max(ring_max, len(state.ring))
        finished_max = max(finished_max, len(state.finished_ids))
    lines = int(hours * 3600 // (LINE_S + PAUSE_S)) - 1
    # bounded: the audio kept, the line ids remembered, the runtime streams alive
    assert ring_max <= int(ms.KEEP_S * SR)
    assert finished_max <= ms.ROTATE_S / (LINE_S + PAUSE_S) + 2
    assert FakeStream.open_streams == 1
    assert FakeStream.created >= hours * 3600 / (ms.ROTATE_S + LINE_S + PAUSE_S)
    assert len(state.agreement.committed) <= len(WORDS)
    assert len(backend.budget._required) <= 10 * backend.budget.window_s / 0.1
    # exact and never rewritten: every line's words arrive once, in order, early ones via agreement
    words = " ".join(f.strip() for f in finals).split()
    assert len(words) >= lines * len(WORDS)
    assert words[: lines * len(WORDS)] == WORDS * lines
    assert partials > lines  # partials were granted (the fake is cheap: plenty of headroom)
    assert len(finals) > lines  # words became final before their line ended
    # stream times stay monotonic across rotations
    assert state.offset_s > hours * 3600 - ms.ROTATE_S - 2 * (LINE_S + PAUSE_S)


def test_partial_after_committed_words_starts_with_a_space():
    """Seen in the overlay: committed "Good morning," + partial "have a minute" was drawn as
    "Good morning,have a minute". A partial follows final text after a space, as finals do."""
    t = [0.0]
    backend = ScriptedMoonshine(lambda: t[0])
    state = None
    chunk = np.zeros(ms.CHUNK_SAMPLES, np.float32)
    shown = ""  # committed text so far
    joined = []
    for i in range(int(60 / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk, state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta) and ev.final:
                shown += ev.text
            elif isinstance(ev, TextDelta) and ev.text and shown:
                joined.append(shown + ev.text)
    assert joined  # partials after committed text were emitted
    for text in joined:
        assert "  " not in text and all(w in WORDS for w in text.split()), text
