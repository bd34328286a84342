"""A per-source streaming session: leftover audio + model state, ``start``/``feed``/``end``.

Rules (TensorFlowASR inference page, section 4; DESIGN section 1):

* ``feed(block)`` accepts any number of samples and returns only the events decoded
  since the last call. Audio that does not fill a chunk waits in the buffer, so block
  size changes latency, never the transcript.
* After each call the buffer advances by ``chunk_step``; only the overlap
  ``chunk_size - chunk_step`` (already decoded) stays as left context.
* ``end()`` pads the remainder to a whole chunk only when there is new audio beyond
  the overlap, appends the backend's ``flush_chunks`` chunks of silence, finalises,
  and resets. Pure overlap is never decoded twice.
* ``start()`` and ``end()`` both reset, so an abandoned session cannot leak state.

Turns (DESIGN section 4, issue 11): unless the backend decides turn ends itself
(``Backend.turn_source == "model"``, Audio8's VAD heads), the session runs a
:class:`~captioner.engine.turns.TurnDetector` on its audio and the decoded text and
drops the backend's own ``"line"`` boundaries, so a turn may span several lines of a
line model (their texts are joined with a space). Whatever decides, a boundary ends
a turn only when the turn has text: silence or noise alone produces no turns. Each
session also reports :class:`~captioner.events.VoiceActivity` for the UI indicator.

A session sends its chunks in order and waits for each one; do not call one session
from two threads at once. To batch several sessions from one thread use
:func:`~captioner.engine.rounds.feed_many`; to read a file ahead of the turn detection,
:class:`~captioner.engine.readahead.ReadAhead`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from typing import TYPE_CHECKING, Sequence

import numpy as np

from captioner.asr.base import Backend, PendingLine, StepResult, StepRow, resolve_lines
from captioner.asr.vad_stream import SpeechAhead
from captioner.engine.batcher import BatchEngine
from captioner.engine.turns import HeadActivity, TurnDetector, TurnSettings
from captioner.events import Event, SoundEvent, Stats, TextDelta, TurnBoundary, VadProbabilities, with_source
from captioner.speakers.tracker import SpeakerTracker

if TYPE_CHECKING:
    from captioner.engine.sound_captions import SoundTracker

#: Stream seconds a model's boundary waits for the turn's first text before it is dropped.
HOLD_BOUNDARY_S = 2.0
#: Boundaries that are facts of the stream, not turn decisions: never held or dropped.
PASS_THROUGH_KINDS = ("end_of_stream", "connection_gap")
#: A held boundary is released by final text ending at most this long (s) before it.
HELD_MATCH_S = 0.5


def sanitize(block: np.ndarray | Sequence[float]) -> tuple[np.ndarray, int]:
    """Make a mono float32 block safe for a model.

    Args:
        block: ``[n]`` (or ``[1, n]``) samples, nominally in [-1, 1].

    Returns:
        ``([n] float32, count)``: NaN/inf replaced by 0.0 (silence) and values
        clipped to [-1, 1]; ``count`` is the number of non-finite samples replaced.

    Raises:
        ValueError: the block is not one channel.
    """
    arr = np.asarray(block, dtype=np.float32)
    if arr.ndim == 2 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 1:
        raise ValueError(f"a session takes mono [n] samples, got shape {arr.shape}; downmix first")
    bad = ~np.isfinite(arr)
    count = int(bad.sum())
    if count:
        arr = np.where(bad, np.float32(0.0), arr)
    return np.clip(arr, -1.0, 1.0).astype(np.float32, copy=False), count


class StreamingSession:
    """One stream of audio (one source) decoded through a shared :class:`BatchEngine`.

    Args:
        engine: the shared engine (``BatchEngine.shared(backend)``) or a backend,
            in which case its shared engine is used.
        source: label stamped on every event ("You", "Meeting", a file name).
        turns: how turns end (``None``: the defaults); ``False`` turns the session's
            turn handling off (the backend's boundaries pass through unchanged).
        speakers: who is speaking (issue 38): the tracker that labels this source's final
            text with speaker ids (``TextDelta.speaker``) from its audio; ``None``: no labels.
        sounds: sounds that are not speech (issue 49): the
            :class:`~captioner.engine.sound_captions.SoundTracker` that runs this source's sound
            detector on every block pushed; its :class:`~captioner.events.SoundEvent` s come out
            with the events of the first chunk decoded at or after their end (so a file read ahead
            gives them in the same place as one fed block by block); ``None``: no sound captions.

    Attributes:
        buffer: ``[n] float32`` audio not yet decoded plus the overlap tail.
        state: this session's backend state, ``None`` until something decodes.
        samples_in: stream samples fed since ``start()``.
        nonfinite_samples: NaN/inf samples replaced by silence since ``start()``.
    """

    def __init__(
        self, engine: BatchEngine | Backend, source: str = "", turns: TurnSettings | bool | None = None,
        speakers: SpeakerTracker | None = None, sounds: SoundTracker | None = None,
    ) -> None:
        self.engine = engine if isinstance(engine, BatchEngine) else BatchEngine.shared(engine)
        self.backend = self.engine.backend
        self.geometry = self.backend.geometry
        self.source = source
        self.turn_settings: TurnSettings | None = None if turns is False else (
            turns if isinstance(turns, TurnSettings) else TurnSettings())
        self.turn_mode = "off" if self.turn_settings is None else getattr(self.backend, "turn_source", "audio")
        self.detector: TurnDetector | None = None
        if self.turn_mode == "audio":
            self.detector = TurnDetector(self.turn_settings, self.geometry.sample_rate, source=source)
        self.speakers = speakers
        self.sounds = sounds
        self._sound_out: deque[Event] = deque()  # sound events (and its notice) waiting for their chunk
        self.start()

    # -- public API -------------------------------------------------------------------------
    def start(self) -> None:
        """Reset to a fresh stream at stream time 0."""
        self.buffer = np.zeros(0, dtype=np.float32)
        self.state = None
        self.samples_in = 0
        self.nonfinite_samples = 0
        self._buf_pos = 0  # stream index of buffer[0]
        self._new_from = 0  # stream index of the first sample not yet decoded
        self._ending = False
        self._finished = False
        self._text_since_turn = False
        self._step_s = 0.0
        self._steps = 0
        self._join_space = False  # a dropped line end: the next line continues the turn after a space
        self._held: list[TurnBoundary] = []  # boundaries waiting for the last words of their turns
        self._partial_open = False  # the backend shows unstable text not yet final
        self._activity = HeadActivity(self.source) if self.turn_mode == "model" else None
        windows = self.backend.speech_pass() if isinstance(self.backend, Backend) else None
        self._speech = SpeechAhead(windows) if windows is not None else None  # the VAD pass, run here
        if self.detector is not None:
            self.detector.source = self.source
            self.detector.reset()
        if self.speakers is not None:
            self.speakers.reset()
        self._sound_out.clear()
        if self.sounds is not None:
            self.sounds.reset()

    @property
    def sample_rate(self) -> int:
        """Input rate (Hz) the session expects."""
        return self.geometry.sample_rate

    @property
    def stream_time(self) -> float:
        """Seconds of audio fed since ``start()``."""
        return self.samples_in / self.sample_rate

    @property
    def pending_samples(self) -> int:
        """New samples waiting for a whole chunk (not counting the overlap)."""
        return self._buf_pos + len(self.buffer) - self._new_from

    def feed(self, block: np.ndarray | Sequence[float]) -> list[Event]:
        """Add audio and decode every whole chunk it completes.

        Args:
            block: ``[n] float32`` mono samples at ``sample_rate``; any ``n >= 0``.

        Returns:
            Events decoded since the last call, labelled with ``source``.

        Raises:
            ValueError: the block is not mono.
            Exception: whatever the model raised for this session's call.
        """
        self._push(block)
        return self._drive_sync()

    def collect(self) -> list[Event]:
        """Events of work the backend finished off its engine thread for this session (a default-model
        re-decode's partial), handed over now by a collect-only row instead of with the next chunk.

        Returns:
            The events, labelled with ``source``, after the turn rules; ``[]`` when the backend
            has nothing ready (:meth:`Backend.ready`), nothing was decoded yet, or the stream is ending.

        Raises:
            Exception: whatever the backend raised for this session's call.
        """
        ready = getattr(self.backend, "ready", None)  # duck-typed backends may have none
        if self.state is None or self._ending or ready is None or not ready(self.state):
            return []
        t = self._new_from / self.sample_rate
        row = StepRow(np.zeros(0, np.float32), self.state, t, t)
        result = self.engine.submit(row, self).result()
        self.state = result.state
        return self._post(self._labelled(result.events), None, now=self.stream_time)

    def end(self) -> list[Event]:
        """Flush the stream (see module rules), finalise, and reset.

        Returns:
            The last events, ending with a ``TurnBoundary(kind="end_of_stream")`` when
            text was emitted since the previous turn boundary.
        """
        self._begin_end()
        try:
            return self._drive_sync() + self._end_events()
        finally:
            self.start()

    async def infer(self, block: np.ndarray | Sequence[float]) -> list[Event]:
        """Async :meth:`feed`: the event loop keeps running while the engine decodes."""
        self._push(block)
        return await self._drive_async()

    async def aend(self) -> list[Event]:
        """Async :meth:`end`."""
        self._begin_end()
        try:
            return await self._drive_async() + self._end_events()
        finally:
            self.start()

    def stats(self) -> Stats:
        """Per-session health: mean step ms, real-time factor, decoded audio seconds, plus what
        the backend measured itself (``Backend.state_stats``: a remote server's step ms, ...)."""
        audio_s = self._steps * self.geometry.chunk_seconds
        extra = self.backend.state_stats(self.state) if self.state is not None else {}
        return dataclasses.replace(self._base_stats(audio_s), **extra) if extra else self._base_stats(audio_s)

    def _base_stats(self, audio_s: float) -> Stats:
        return Stats(
            step_ms=1000.0 * self._step_s / self._steps if self._steps else 0.0,
            rtf=self._step_s / audio_s if audio_s else 0.0,
            backlog_s=self.pending_samples / self.sample_rate,
            audio_s=self.samples_in / self.sample_rate,
            nonfinite_samples=self.nonfinite_samples,
            source=self.source,
        )

    # -- internals ---------------------------------------------------------------------------
    def _push(self, block: np.ndarray | Sequence[float]) -> None:
        if self._ending:
            raise RuntimeError("session is ending; call start() before feeding more audio")
        arr, bad = sanitize(block)
        self.nonfinite_samples += bad
        if arr.size:
            if self._speech is not None:
                self._speech.feed(arr, self.samples_in)
            if self.speakers is not None:
                self.speakers.feed(arr, self.samples_in)
            if self.sounds is not None:
                self._sound_out.extend(self.sounds.feed(arr, self.samples_in))
            self.buffer = np.concatenate([self.buffer, arr]) if self.buffer.size else arr.copy()
            self.samples_in += arr.size

    def _speech_ahead(self, block: np.ndarray | Sequence[float]) -> None:
        """Run the VAD pass on the block that will be pushed next (a file read ahead: while the
        engine decodes the previous chunk); the push then skips it."""
        if self._speech is not None:
            self._speech.feed(sanitize(block)[0], self.samples_in)

    def _begin_end(self) -> None:
        g = self.geometry
        has_new = self.pending_samples > 0
        decoded_any = self._new_from > 0
        pad = 0
        if has_new:
            n = len(self.buffer)
            if n <= g.chunk_size:
                pad = g.chunk_size - n
            else:
                pad = (-(n - g.chunk_size)) % g.chunk_step
        if has_new or decoded_any:
            pad += self.backend.flush_chunks * g.chunk_step
        if pad:
            self.buffer = np.concatenate([self.buffer, np.zeros(pad, dtype=np.float32)])
        self._real_end = self._buf_pos + len(self.buffer) - pad  # stream index after real audio
        self._ending = True

    def _next_row(self) -> StepRow | None:
        g = self.geometry
        sr = g.sample_rate
        if len(self.buffer) >= g.chunk_size:
            chunk = self.buffer[: g.chunk_size]
            chunk_end = self._buf_pos + g.chunk_size
            last = self._ending and len(self.buffer) - g.chunk_step < g.chunk_size
            real_end = min(chunk_end, self._real_end) if self._ending else chunk_end
            speech = self._speech.take(real_end) if self._speech is not None else None
            return StepRow(chunk, self.state, self._new_from / sr, max(real_end, self._new_from) / sr, last, speech)
        if self._ending and not self._finished:
            t = self.samples_in / sr
            return StepRow(None, self.state, t, t, True)
        return None

    def _apply(self, row: StepRow, result: StepResult, dt: float) -> list[Event]:
        """Take one decoded row: advance the stream, then apply the turn rules to its events."""
        return self._post(*self._advance(row, result, dt), now=self.stream_time)

    def _advance(self, row: StepRow, result: StepResult, dt: float) -> tuple[list[Event], np.ndarray | None,
                                                                             list[float] | None]:
        """The decoding half of :meth:`_apply`: keep the backend state, move the buffer on.

        Returns:
            ``(events, audio, speech)`` for :meth:`_post`: the row's events labelled with
            ``source`` (lines still being decoded as :class:`~captioner.asr.base.PendingLine`), the real samples it decoded for the first time (``[n] float32``, for
            the turn detector; None without one) and the backend's VAD probabilities of them.
        """
        g = self.geometry
        new_audio = None  # the real samples this row decoded for the first time, for the turn detector
        if row.audio is not None and self.detector is not None:
            a = max(0, self._new_from - self._buf_pos)
            b = min(len(row.audio), int(round(row.end * g.sample_rate)) - self._buf_pos)
            new_audio = row.audio[a:b] if b > a else None
        self.state = result.state
        if row.audio is not None:
            self._new_from = self._buf_pos + g.chunk_size
            self.buffer = self.buffer[g.chunk_step :]
            self._buf_pos += g.chunk_step
            self._step_s += dt
            self._steps += 1
        if row.last:
            self._finished = True
        return self._labelled(result.events), new_audio, result.speech

    def _labelled(self, events: list[Event]) -> list[Event]:
        """A row's events labelled with ``source`` (lines still being decoded stay as they are)."""
        return [ev if isinstance(ev, PendingLine) else with_source(ev, self.source) for ev in events]

    def _post(self, events: list[Event], audio: np.ndarray | None, speech: list[float] | None = None,
              now: float = 0.0) -> list[Event]:
        """Apply the turn rules (module docstring) to one row's events, then feed the turn detector
        that row's audio, so each decision sees the text decoded up to its own audio, never later.
        ``now``: the stream time (s) the session had received when the row was decoded."""
        out: list[Event] = []
        for ev in resolve_lines(events, self.source):  # lines decoded on a pool: their events, in order
            self._route(ev, out, from_backend=True)
        if self.detector is not None:
            self.detector.note_text(out)
            if audio is not None and len(audio):
                for ev in self.detector.feed(audio, speech):
                    self._route(ev, out, from_backend=False)
        if self._held and not self._text_since_turn and not self._partial_open \
                and now - self._held[0].time > HOLD_BOUNDARY_S:
            self._held = []  # a model's boundary with no words in its turn: nothing ended
        out = self.speakers.label(out) if self.speakers is not None else out
        return out + self._sounds_due(now) if self._sound_out else out

    def _sounds_due(self, now: float | None) -> list[Event]:
        """The sound events (and a sound-model notice) detected in audio up to stream time ``now``
        (s; None: all of them), in order; they never pass through the turn rules or the speakers."""
        due: list[Event] = []
        while self._sound_out:
            ev = self._sound_out[0]
            if now is not None and isinstance(ev, SoundEvent) and ev.end > now + 1e-6:
                break
            due.append(self._sound_out.popleft())
        return due

    def _route(self, ev: Event, out: list[Event], from_backend: bool) -> None:
        """Append ``ev`` to ``out`` by the turn rules; may hold back a boundary until its text is in."""
        if isinstance(ev, TurnBoundary) and ev.kind not in PASS_THROUGH_KINDS and self.turn_mode != "off":
            if from_backend and self.turn_mode == "audio":  # the detector decides; a line end is not a turn end
                self._join_space = self._join_space or ev.kind == "line"
                return
            if self._partial_open or not self._text_since_turn:
                # the words of this turn are not all final yet: the boundary follows them
                self._held.append(ev)
                return
            self._emit_boundary(ev, out)
            return
        if isinstance(ev, TextDelta):
            if self._join_space and ev.text and not ev.text[0].isspace():
                ev = dataclasses.replace(ev, text=" " + ev.text)
            out.append(ev)
            if not ev.final:
                self._partial_open = bool(ev.text.strip())
            elif ev.text.strip():
                self._text_since_turn = True
                self._partial_open = False
                self._join_space = False
                # the final text reaching a held boundary ends that turn; more boundaries it
                # covers would end turns without words of their own, so they go
                due = [b for b in self._held if b.time <= ev.end + HELD_MATCH_S]
                if due:
                    self._held = [b for b in self._held if b.time > ev.end + HELD_MATCH_S]
                    self._emit_boundary(due[0], out)
            return
        if isinstance(ev, TurnBoundary):  # end_of_stream, a connection gap, or turn handling off
            self._text_since_turn = False
            out.append(ev)
            return
        out.append(ev)
        if isinstance(ev, VadProbabilities) and self._activity is not None:
            act = self._activity.vad(ev)
            if act is not None:
                out.append(act)

    def _emit_boundary(self, ev: TurnBoundary, out: list[Event]) -> None:
        out.append(ev)
        self._text_since_turn = False
        self._join_space = False
        if self._activity is not None:
            out.append(self._activity.boundary(ev))

    def _end_events(self) -> list[Event]:
        out: list[Event] = []
        if self.detector is not None:
            out += self.detector.finish()
        self._held = []
        if self.speakers is not None:
            out = self.speakers.label(out) + self.speakers.finish()  # the second pass's last corrections
        if self.sounds is not None:
            self._sound_out.extend(self.sounds.finish())
        out += self._sounds_due(None)
        if not self._text_since_turn:
            return out
        self._text_since_turn = False
        return out + [TurnBoundary(self.samples_in / self.sample_rate, "end_of_stream", 1.0, self.source)]

    def _drive_sync(self) -> list[Event]:
        events: list[Event] = []
        while (row := self._next_row()) is not None:
            t0 = time.perf_counter()
            result = self.engine.submit(row, self).result()
            events += self._apply(row, result, time.perf_counter() - t0)
        return events

    async def _drive_async(self) -> list[Event]:
        events: list[Event] = []
        while (row := self._next_row()) is not None:
            t0 = time.perf_counter()
            result = await asyncio.wrap_future(self.engine.submit(row, self))
            events += self._apply(row, result, time.perf_counter() - t0)
        return events
