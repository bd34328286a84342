"""The backend contract: one loaded model, stepped in batches by one engine worker.

A backend knows its :class:`~captioner.asr.geometry.ChunkGeometry` and its batch
capacity ``B``. It keeps *no per-session state of its own*: every session's state
travels in :class:`StepRow` / :class:`StepResult`, so one backend serves any
number of sessions (microphone and system audio are two sessions of one backend).

Only the engine worker thread calls :meth:`Backend.step`; a backend need not be
thread-safe. Backends never import Qt. A step's events may hold a :class:`PendingLine`
(a line still being decoded off the engine thread, the default model's line pool:
:mod:`captioner.asr.moonshine.line_pool`); the session resolves it in stream order
(:func:`resolve_lines`).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from captioner.asr.geometry import ChunkGeometry
from captioner.events import Event, with_source


class BackendError(RuntimeError):
    """A model could not be loaded or run. The message says what and how to fix it."""


class DecodeCancelled(Exception):
    """A decode was cancelled by its caller (its ``stop`` event was set) before it finished;
    nothing is wrong with the model (:mod:`captioner.asr.moonshine.line_framing`)."""


@dataclass
class StepRow:
    """One session's slot in a batched model call.

    Attributes:
        audio: ``[chunk_size] float32`` samples in [-1, 1] at the backend's sample
            rate, or ``None`` for a finish-only row (``end()`` with no new audio:
            the backend only finalises the session's state), or ``[0] float32`` for a
            collect-only row (sent only while :meth:`Backend.ready` is True: nothing new,
            the backend hands over what it finished off the engine thread).
        state: the session's backend state from the previous :class:`StepResult`,
            or ``None`` for a fresh session (the backend builds the initial state).
        start: stream time (s) of the first *new* sample in ``audio`` (the overlap
            before it was decoded by the previous call).
        end: stream time (s) just after the last real (non-padding) sample.
        last: True on the final row of a stream (sent by ``end()``): the backend
            flushes whatever it holds back and may emit an end-of-stream turn.
        speech: ``[k, tracks]`` speech probabilities of the VAD windows this row's real
            audio completes, computed by the session with the backend's :meth:`Backend.speech_pass`
            (as the audio arrived, or read ahead); None: the backend runs its pass itself.
    """

    audio: np.ndarray | None
    state: Any
    start: float
    end: float
    last: bool = False
    speech: np.ndarray | None = None


@dataclass
class StepResult:
    """What one row of a model call produced.

    Attributes:
        state: the session's new backend state, passed back in the next row.
        events: events decoded from this row only (text deltas, turn boundaries,
            VAD probabilities), with an empty ``source``.
        speech: for a backend that runs a 16 kHz speech VAD on the session's audio (the
            default model's line cutter): the speech probability (0..1) of every 512-sample
            window this row's real audio completed, in stream order; the session's turn
            detector takes them instead of running a second VAD pass. None: not computed.
    """

    state: Any
    events: list[Event] = field(default_factory=list)
    speech: list[float] | None = None


@dataclass(eq=False)
class PendingLine:
    """A completed line being decoded: stands in a step's events for the line's events.

    Attributes:
        future: resolves to the line's text (or raises the model's error).
        finish: ``finish(text) -> list[Event]``: the line's events given its text; call it in
            stream order (it updates the session's join state).
    """

    future: Future
    finish: Callable[[str], list[Event]]

    def events(self) -> list[Event]:
        """Wait for the text and return the line's events.

        Raises:
            Exception: what the decode raised (``BackendError`` for a model failure).
        """
        return self.finish(self.future.result())


def resolve_lines(events: Iterable[Event | PendingLine], source: str) -> list[Event]:
    """``events`` with every :class:`PendingLine` replaced by its events (waiting for each in
    order), all labelled with ``source``.

    Raises:
        Exception: what a line's decode raised.
    """
    out: list[Event] = []
    for ev in events:
        if isinstance(ev, PendingLine):
            out += [with_source(e, source) for e in ev.events()]
        else:
            out.append(ev)
    return out


class Backend(abc.ABC):
    """A loaded streaming model shared by every session.

    Attributes:
        name: short backend name for messages and stats ("default", "audio8", ...).
        geometry: chunk layout; ``geometry.sample_rate`` is the rate sessions feed.
        batch_size: ``B``, the most sessions one :meth:`step` call decodes.
        flush_chunks: whole chunks of silence appended by ``end()`` after the last
            audio chunk (Audio8: ``right_pad_text_tokens`` = 10; TFLite: 0).
        turn_source: who decides turn ends. ``"audio"`` (default): the session's
            :class:`~captioner.engine.turns.TurnDetector` (VAD + smart-turn) does, and
            the backend's own boundaries (a line model's ``"line"``) are dropped.
            ``"model"``: the backend's semantic boundaries (Audio8 VAD heads) are kept.
        wakeup: set by the live engine (:class:`~captioner.engine.live.LiveCaptioner`):
            a backend that finishes work on threads of its own (the default model's
            re-decodes) calls it, from any thread, as soon as :meth:`ready` turns True for
            a session; the engine then collects the events with a collect-only row
            instead of waiting for the session's next chunk. It returns at once.
    """

    name: str = "backend"
    geometry: ChunkGeometry
    batch_size: int = 1
    flush_chunks: int = 0
    turn_source: str = "audio"
    wakeup: Callable[[], None] | None = None

    @property
    def sample_rate(self) -> int:
        """Input sample rate in Hz (``geometry.sample_rate``)."""
        return self.geometry.sample_rate

    @abc.abstractmethod
    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Decode up to ``batch_size`` rows in one model call.

        Args:
            rows: 1..B rows, each from a different session. A backend with a fixed
                batch pads the missing rows itself with silence from the initial
                state; those padding rows never reach a session.

        Returns:
            One :class:`StepResult` per row, in order.

        Raises:
            BackendError (or any exception): the engine re-raises it in every
            session waiting on this call and keeps its worker running.
        """

    def ready(self, state: Any) -> bool:
        """True when work the backend finished off the engine thread waits for the session whose
        state is ``state`` (a collect-only :class:`StepRow` hands it over); called on the
        caller's thread, so it only reads thread-safe flags. Default: never."""
        return False

    def state_stats(self, state: Any) -> dict:
        """Backend-measured fields of :class:`~captioner.events.Stats` for one session's
        ``state`` (e.g. a remote server's step ms and GPU memory); ``{}`` = none."""
        return {}

    def speech_pass(self) -> Any:
        """A fresh VAD pass for one session (:class:`~captioner.asr.vad_stream.SpeechWindows`)
        whose probabilities the backend takes as ``StepRow.speech``, so the VAD runs on the
        session's thread instead of the engine's; None (default): the backend needs none."""
        return None

    def close(self) -> None:
        """Release model resources (interpreters, GPU memory). Idempotent."""

    def describe(self) -> str:
        """One line for logs and the UI: backend, model, geometry."""
        g = self.geometry
        clock = f", clock {g.clock_ms} ms, delay {g.delay_ms} ms" if g.clock_ms else ""
        return (
            f"{self.name}: {g.sample_rate} Hz, chunk {g.chunk_size}/{g.chunk_step} samples{clock}, B={self.batch_size}"
        )
