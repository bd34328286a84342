"""Fakes for the GUI tests: a delayed-word backend, a scripted source and a small live pipeline.

The backend is a real :class:`captioner.asr.base.Backend` driven through the real
:class:`captioner.engine.session.StreamingSession`, so "Stop keeps the last words"
depends on the same flush rule the app uses: a word is emitted ``DELAY`` chunks
after its audio, and only the ``flush_chunks`` chunks of silence that ``end()``
appends push the last words out.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from captioner.asr.base import Backend, StepResult
from captioner.asr.geometry import ChunkGeometry
from captioner.engine.session import StreamingSession
from captioner.events import Level, Stats, TextDelta

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
CHUNK = 160  # samples per chunk at 16 kHz = 10 ms
DELAY = 3  # chunks between a word's audio and its final text


class DelayedWordBackend(Backend):
    """Chunk k with constant value (i+1)/100 "says" WORDS[i]; 0 is silence.

    Each word is emitted as a final ``TextDelta`` ``DELAY`` chunks later (a delayed
    streams model in miniature); the words still held back are sent as the partial.
    ``fail_at``: raise on that one model call (counting from 1) to test error paths.
    """

    name = "fake"
    batch_size = 2
    flush_chunks = DELAY

    def __init__(self, fail_at: int | None = None) -> None:
        self.geometry = ChunkGeometry(16000, CHUNK, CHUNK)
        self.fail_at = fail_at
        self.calls = 0
        self.closed = False

    def step(self, rows):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("fake model exploded")
        out = []
        for row in rows:
            pending = list(row.state or [])
            if row.audio is not None:
                code = int(round(float(row.audio[0]) * 100))
                pending.append(WORDS[code - 1] if 1 <= code <= len(WORDS) else None)
            events = []
            while len(pending) > DELAY or (row.last and pending):
                word = pending.pop(0)
                if word:
                    events.append(TextDelta(" " + word, row.start, row.end, True))
            held = " ".join(w for w in pending if w)
            events.append(TextDelta(" " + held if held else "", row.start, row.end, False))
            out.append(StepResult(pending, events))
        return out

    def close(self) -> None:
        self.closed = True


def write_wav(path) -> None:
    """A tiny real WAV file (0.1 s of silence): the window checks files are audio; the fake
    source factory never reads them."""
    import soundfile

    soundfile.write(str(path), np.zeros(1600, dtype=np.float32), 16000)


def speech(words: list[str], gap_chunks: int = 1) -> np.ndarray:
    """Audio for the fake backend: one chunk per word, ``gap_chunks`` of silence after each."""
    chunks = []
    for w in words:
        chunks.append(np.full(CHUNK, (WORDS.index(w) + 1) / 100, dtype=np.float32))
        chunks.extend(np.zeros(CHUNK, dtype=np.float32) for _ in range(gap_chunks))
    return np.concatenate(chunks)


class ArraySource:
    """A source that hands out an array in blocks, then reports end of data."""

    def __init__(self, label: str, audio: np.ndarray, block: int = 100) -> None:
        self.label = label
        self.audio = audio
        self.block = block
        self.pos = 0

    def read(self) -> np.ndarray | None:
        if self.pos >= len(self.audio):
            return None
        blk = self.audio[self.pos : self.pos + self.block]
        self.pos += len(blk)
        return blk


class FakeLive:
    """A tiny LiveCaptioner: one thread feeds every source into its session.

    All audio is fed at once (faster than real time), then the thread waits for
    ``stop()``; ``stop(drain=True)`` ends every session so the model flushes.
    Errors end the run and are kept in :attr:`error`.
    """

    def __init__(self, backend, sources, on_event, turns=None) -> None:
        self.sources = sources
        self.turns = turns
        self.sessions = [StreamingSession(backend, s.label, turns) for s in sources]
        self.on_event = on_event
        self.error: BaseException | None = None
        self.fed_all = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def is_running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            for src, sess in zip(self.sources, self.sessions):
                while (blk := src.read()) is not None and not self._stop.is_set():
                    for ev in sess.feed(blk):
                        self.on_event(ev)
                self.on_event(Level(-20.0, -10.0, src.label))
                self.on_event(Stats(step_ms=1.0, rtf=0.1, audio_s=sess.stream_time, source=src.label))
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
            return
        self.fed_all.set()
        self._stop.wait()

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool:
        self._stop.set()
        self._thread.join(10)
        if drain and self.error is None:
            for sess in self.sessions:
                for ev in sess.end():
                    self.on_event(ev)
        return True

    def backlog_s(self) -> float:
        return 0.0


def fake_factories(audio_by_label: dict[str, np.ndarray], fail_at: int | None = None, load_error=None):
    """(backend_factory, source_factory, pipeline_factory) for :class:`EngineWorker`; also returns a record."""
    record: dict = {"backends": [], "pipelines": []}

    def backend_factory(config):
        if load_error is not None:
            raise load_error
        b = DelayedWordBackend(fail_at)
        record["backends"].append(b)
        return b

    def source_factory(specs, backend):
        # keyed by label, or by the file's name for file sources (their label is the short name)
        return [ArraySource(s.label, audio_by_label[s.label] if s.label in audio_by_label
                            else audio_by_label[Path(s.path).name]) for s in specs]

    def pipeline_factory(backend, sources, on_event, turns=None):
        p = FakeLive(backend, sources, on_event, turns)
        record["pipelines"].append(p)
        return p

    return backend_factory, source_factory, pipeline_factory, record


def run_and_stop(qtbot, win, record) -> None:
    """Press Start, wait until the fake pipeline has fed everything and captions show, press Stop."""
    n = len(record["pipelines"])
    win.start_button.click()
    qtbot.waitUntil(lambda: len(record["pipelines"]) > n and record["pipelines"][-1].fed_all.is_set(), timeout=5000)
    qtbot.waitUntil(lambda: win.overlay.visible_text() != "" and win.start_button.text() == "Stop", timeout=5000)
    win.start_button.click()
    qtbot.waitUntil(lambda: win.engine_state == "idle", timeout=5000)


def file_window(settings, controller, tmp: Path):
    """The main window (and its overlay) captioning ``tmp/talk.wav`` through ``controller``, shown, as
    the standalone test apps (atspi_app.py, scaled_layout_app.py) build it; returns ``(win, overlay)``."""
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys

    overlay = CaptionOverlay(settings)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(tmp / "talk.wav"))
    win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp / "journal"))
    win.ask_unsaved = lambda: "discard"
    win.show()
    return win, overlay
