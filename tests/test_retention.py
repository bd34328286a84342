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
        self._partial_tr = None
        self.finals_reused = self.finals_decoded = 0
        self.decoded: list[float] = []
        self._worker = ms.PartialWorker(self._decode_clip, threaded=False)  # synchronous: exact event order

    def _new_stream(self, state=None):
        stream = FakeStream()
        if state is not None:
            stream.add_listener(state.events.append)
        return stream

    def _add_audio(self, state, audio) -> None:
        state.stream.samples += len(audio)

    def _decode_clip(self, audio) -> str:
        """The words spoken in the clip (whole or partly), read from the time ramp in the audio."""
        t0 = float(audio[0]) / RAMP - self._offset  # stream time of the clip's first sample
        speech = len(audio) - (len(audio) - np.flatnonzero(audio)[-1] - 1 if audio.any() else 0)  # a pad is exact zeros
        t1 = t0 + speech / SR
        k = int(t0 // (LINE_S + PAUSE_S))
        start = k * (LINE_S + PAUSE_S) + 0.2
        per = LINE_S / len(WORDS)
        first = max(0, int((t0 - start) // per))
        n = int(len(WORDS) * min(1.0, max(0.0, t1 - start + 1e-3) / LINE_S))  # 1 ms: float32 ramp
        self.decoded.append(t0 - start)  # where in its line the clip started (s)
        return " ".join(WORDS[first:n])

    def step(self, rows):
        self._offset = rows[0].state.offset_s if rows[0].state is not None else 0.0
        return super().step(rows)


RAMP = 1e-4  # test audio: sample value = RAMP * session time (s), so a clip says where it starts


def chunk_at(i: int) -> np.ndarray:
    """The i-th 100 ms chunk of the test audio (a time ramp, see RAMP)."""
    return (RAMP * (i * 0.1 + np.arange(ms.CHUNK_SAMPLES) / SR)).astype(np.float32)


def test_hours_of_audio_keep_every_buffer_bounded_and_finals_exact():
    t = [0.0]
    backend = ScriptedMoonshine(lambda: t[0])
    state = None
    finals: list[str] = []
    partials = 0
    hours = 2.0
    steps = int(hours * 3600 / 0.1)
    ring_max = finished_max = 0
    for i in range(steps):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
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


def _finals_of(backend, seconds, t):
    state, finals = None, []
    for i in range(int(seconds / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        finals += [ev.text for ev in res.events if isinstance(ev, TextDelta) and ev.final]
    return finals


def test_a_re_decode_that_covered_the_whole_line_is_its_final_and_none_is_decoded_again():
    """The line's final text is the newest re-decode when that reached the line's end (the VAD
    ends a line ~0.5 s after its speech); otherwise the line is decoded once when it ends."""
    t = [0.0]
    backend = ScriptedMoonshine(lambda: t[0])
    finals = _finals_of(backend, 2 * (LINE_S + PAUSE_S), t)
    assert " ".join(f.strip() for f in finals).split() == WORDS * 2  # exact, in order, once
    assert backend.finals_reused == 2 and backend.finals_decoded == 0
    # without partials nothing covers a line: each is decoded exactly once, when it ends
    t = [0.0]
    quiet = ScriptedMoonshine(lambda: t[0])
    quiet.partials = False
    finals = _finals_of(quiet, 2 * (LINE_S + PAUSE_S), t)
    assert " ".join(f.strip() for f in finals).split() == WORDS * 2
    assert (quiet.finals_reused, quiet.finals_decoded) == (0, 2) and len(quiet.decoded) == 2


def test_partial_after_committed_words_starts_with_a_space():
    """Seen in the overlay: committed "Good morning," + partial "have a minute" was drawn as
    "Good morning,have a minute". A partial follows final text after a space, as finals do."""
    t = [0.0]
    backend = ScriptedMoonshine(lambda: t[0])
    state = None
    shown = ""  # committed text so far
    joined = []
    for i in range(int(60 / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta) and ev.final:
                shown += ev.text
            elif isinstance(ev, TextDelta) and ev.text and shown:
                joined.append(shown + ev.text)
    assert joined  # partials after committed text were emitted
    for text in joined:
        assert "  " not in text and all(w in WORDS for w in text.split()), text


class GatedMoonshine(ScriptedMoonshine):
    """The scripted backend with its re-decodes on a real worker thread, each held until released."""

    def __init__(self, clock) -> None:
        super().__init__(clock)
        import threading

        self.entered = threading.Semaphore(0)
        self.release = threading.Semaphore(0)

        self.clips: list[int] = []  # samples of each re-decode, in order

        def gated(clip):
            self.clips.append(clip.size)
            self.entered.release()
            assert self.release.acquire(timeout=30)
            return ScriptedMoonshine._decode_clip(self, clip)

        self._worker = ms.PartialWorker(gated)
        self.budget.parallel = True


def _run_gated(backend, seconds, t, on_job):
    """Step ``seconds`` of audio; ``on_job(i)`` is called each step a re-decode is running and
    returns True to let it finish (the test then waits for it before the next step)."""
    state = None
    finals, partials, running = [], [], False
    for i in range(int(seconds / 0.1)):
        t[0] += 0.1
        (res,) = backend.step([StepRow(chunk_at(i), state, i * 0.1, (i + 1) * 0.1)])
        state = res.state
        for ev in res.events:
            if isinstance(ev, TextDelta):
                (finals if ev.final else partials).append((i * 0.1 + 0.1, ev.text))
        if not running and backend._worker.busy:  # a job was submitted: wait until it runs
            running = backend.entered.acquire(timeout=30)  # (the niced thread may start late)
        if running and on_job(i):
            backend.release.release()
            assert backend._worker.wait_idle(30)
            running = False
    return state, finals, partials


def test_a_slow_partial_never_delays_a_final_and_its_stale_text_is_dropped():
    """The engine thread goes on while a re-decode runs: the line's final arrives on time
    (0.5 s after the line ends) with the re-decode still held; released after that, its text
    belongs to a closed line and must not come out as a partial or a second final."""
    t = [0.0]
    backend = GatedMoonshine(lambda: t[0])
    line_end = 0.2 + LINE_S + HANGOVER_S  # the first line completes here (stream time)
    recorded = []
    record = backend.budget.record_optional
    backend.budget.record_optional = lambda cost, audio_s: (recorded.append(audio_s), record(cost, audio_s))
    state, finals, partials = _run_gated(backend, 6.0, t, lambda i: (i + 1) * 0.1 > line_end + 1.0)
    try:
        assert finals, "no final while the partial was held"
        first_final_at = finals[0][0]
        assert first_final_at <= line_end + ms.UPDATE_INTERVAL_S + 0.11
        assert " ".join(f for _, f in finals).split() == WORDS  # exact: the stale re-decode added nothing
        assert all(not text for at, text in partials if at > line_end + 1.0)
        assert backend.budget.parallel
        # the thrown-away re-decode still cost CPU: the budget is told (not only of collected ones)
        assert backend.clips and backend.clips[0] / 16000 in recorded
    finally:
        backend.release.release()
        backend.close()


def test_threaded_partials_commit_words_before_the_line_ends():
    t = [0.0]
    backend = GatedMoonshine(lambda: t[0])
    line_end = 0.2 + LINE_S + HANGOVER_S
    state, finals, partials = _run_gated(backend, 3 * (LINE_S + PAUSE_S), t, lambda i: True)
    try:
        early = [text for at, text in finals if at < line_end]
        assert early, "LocalAgreement committed nothing before the line ended"
        words = " ".join(f.strip() for _, f in finals).split()
        assert words[: 2 * len(WORDS)] == WORDS * 2  # in order, never rewritten
        assert any(text for _, text in partials)
    finally:
        backend.close()
