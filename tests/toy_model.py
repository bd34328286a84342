"""A small deterministic *causal* streaming model for testing the engine contract.

It is a real (if tiny) model, not a mock of the backend API: per chunk it computes
framed log-energies of the audio (frame 160 samples, hop 80, like a feature front end
whose frames overlap chunk boundaries), folds them into a recurrent state, and emits a
letter whenever the state's quantised value changes. Chunks overlap by exactly
FRAME - HOP samples, so the frames of consecutive chunks tile the stream's frame grid
without gaps or repeats: decoding is causal, and chunked decoding of a whole number of
chunks equals one pass over the frames of the whole signal.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from captioner.asr.base import Backend, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.events import TextDelta

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
FRAME, HOP = 160, 80


class ToyCausalBackend(Backend):
    """Chunk 640 samples, step 560 (overlap 80 = FRAME - HOP, as a real front end).

    State per session: ``(h: float, last_letter: str | None)``; ``None`` means fresh
    (h = 0.0). ``calls`` records the number of rows of every ``step`` call.
    """

    name = "toy"

    def __init__(self, batch_size: int = 2, fail_next: int = 0) -> None:
        self.geometry = ChunkGeometry(16000, 640, 560)
        self.batch_size = batch_size
        self.calls: list[int] = []
        self.fail_next = fail_next

    @staticmethod
    def frames_energy(chunk: np.ndarray) -> np.ndarray:
        """[F] float64 log-energies of frames (FRAME long, HOP apart) covering the chunk."""
        n = 1 + (len(chunk) - FRAME) // HOP
        idx = np.arange(FRAME)[None, :] + HOP * np.arange(n)[:, None]
        return np.log1p(1000.0 * np.mean(chunk[idx].astype(np.float64) ** 2, axis=1))

    def decode_chunk(self, chunk: np.ndarray, state):
        h, last = state if state is not None else (0.0, None)
        text = ""
        for e in self.frames_energy(chunk):
            h = 0.7 * h + e + 0.1
            letter = ALPHABET[int(h * 7.0) % 26]
            if letter != last:
                text += letter
                last = letter
        return text, (h, last)

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        self.calls.append(len(rows))
        if self.fail_next:
            self.fail_next -= 1
            raise RuntimeError("injected model failure")
        out = []
        for row in rows:
            if row.audio is None:
                out.append(StepResult(row.state))
                continue
            assert row.audio.shape == (self.geometry.chunk_size,) and row.audio.dtype == np.float32
            text, state = self.decode_chunk(row.audio, row.state)
            events = [TextDelta(text, row.start, row.end, True)] if text else []
            out.append(StepResult(state, events))
        return out

    def one_pass(self, signal: np.ndarray) -> str:
        """Reference: one pass over all frames of the whole-chunk part of ``signal``, no chunking."""
        g = self.geometry
        chunks = 1 + (len(signal) - g.chunk_size) // g.chunk_step if len(signal) >= g.chunk_size else 0
        covered = (chunks - 1) * g.chunk_step + g.chunk_size if chunks else 0
        if not covered:
            return ""
        text, _ = self.decode_chunk(signal[:covered], None)
        return text
