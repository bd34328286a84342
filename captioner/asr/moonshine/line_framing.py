"""A completed line's final text: the surest of up to five framings of its audio (issues 27, 40).

The default model's reading of a line flips with shifts of its framing of a few milliseconds,
in no fixed direction. So a completed line is read as cut and, unless the model is sure of that
reading, again with :data:`~captioner.asr.moonshine.framings.FRAME_LEAD_S` of silence before it
and :data:`~captioner.asr.moonshine.framings.FRAME_TAIL_S` after it; the reading with the higher
mean token log-probability is the line's final text.

A line whose surer reading of the two is still unsure is read three more times, retimed, and
the surest of all its readings is kept. The framings, the choice among readings and the
measurements behind both: :mod:`captioner.asr.moonshine.framings`.

Read one after the other, an unsure line's final waits for two decodes. Live, where a line's
final is what the reader waits for, :class:`LineReader` with ``at_once=True`` starts the framed
reading on a helper thread at the same time as the reading as cut (ONNX Runtime releases the
GIL; each decode runs on one intra-op thread, so the two use both cores) and cancels it
between two decoder steps when the reading as cut turns out sure. The text is the same as
reading them in turn; the final of an unsure line (35-40 % of them) comes after the longer of
the two decodes instead of after both. Once the reading as cut is unsure, the retimed readings
start on the helpers' second thread at once, beside the framed one (cancelled if the framed
reading turns out sure), so both cores read until the line's last reading ends
(:meth:`LineReader._start_further`). A line's readings cost about 0.2 s (as cut, drafted), 0.3-0.4 s
(each of the others) on this 2-core machine, so a line read five times cannot have its final
sooner than ~0.7 s after it is cut on two cores, whatever the schedule (``bench/reading_cost.py``).
When the audio waiting to be read grows (a busy core), a live line reads less: no retimed
readings, then no framed one, and none past a cap on the waiting audio
(:mod:`captioner.asr.moonshine.reading_budget`, issue 48.3). The file path (``captioner
transcribe``) reads two lines at once instead (:mod:`captioner.asr.moonshine.line_pool`) and
reads each line's framings in turn.

No Qt; the model is duck-typed (``transcribe`` and, optionally, ``transcribe_scored``).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

import numpy as np

from captioner.asr.base import DecodeCancelled
from captioner.asr.moonshine.framings import (  # FRAME_*, WORDS_MIN_S: read as line_framing.X by bench/
    END_PAD_S,
    FRAME_LEAD_S,
    FRAME_TAIL_S,
    FURTHER_RATES,
    SAMPLE_RATE,
    SURE_LOGPROB,
    WORDS_MIN_S,
    framed,
    retimed,
    surest,
)
from captioner.asr.moonshine.empty_lines import reread_empty
from captioner.asr.moonshine.reading_budget import Level, ReadingBudget
from captioner.asr.moonshine.repeats import collapse_repeats
from captioner.native_calls import model_call

#: Live (reading at once), the retimed readings of a line must end within this many seconds of
#: the end of its framed reading (they start before, once the reading as cut is unsure; the line's
#: final waits for them); one still running then is cancelled and left
#: out, so live reads fewer of them than the file path only on a loaded machine or a long line.
#: Each costs an encoder run (~45-55 ms per second of audio here, the framing's silence
#: included) and a decode from the draft: 0.28-0.37 s for a 3.2 s line (``bench/reading_cost.py``).
#: Measured 2026-12-06 (issue 40), 2 cores, beside the partial re-decodes: waiting for all
#: three put finals at p95 1.5 s after their audio on the 2-minute meeting (0.43 s with two
#: framings); a 0.25 s budget kept the 20-minute meeting's finals at p95 0.85 s (0.69 s
#: before) but left most retimed readings out: live WER 7.45 % against 5.34 % one-pass.
FURTHER_BUDGET_S = 1.0
#: Threads reading beside the caller live (at once): the framed reading and the retimed ones
#: share them, so with the caller's reading as cut both cores are busy; a third would only
#: share them too (each decode runs on one intra-op thread).
HELPERS = 2


class LineReader:
    """Reads a completed line's final text (see the module docstring).

    Args:
        model: the loaded model: ``transcribe(audio, **bias) -> str`` and, for the two
            framings, ``transcribe_scored(audio, **bias) -> (text, mean log-prob)``; a model
            with ``cancellable = True`` also takes ``stop=threading.Event`` and raises
            :class:`~captioner.asr.base.DecodeCancelled` once it is set.
        bias: keyword arguments of every decode (the hotwords: ``{"bias": tree}`` or ``{}``):
            every reading of a line decodes with the list, and its score leaves out the
            hotwords it spells (:func:`~captioner.asr.moonshine.hotwords.reading_score`), so
            the choice does not throw away a reading for the name the list steered in.
        at_once: read the other readings on :data:`HELPERS` helper threads while the line as
            cut is read (live, with two usable cores); needs a cancellable model, else
            readings go in turn.
        sample_rate: of the clips (Hz).
        budget: live (``at_once``), which readings a line may start and how long the audio after
            it may wait (:class:`~captioner.asr.moonshine.reading_budget.ReadingBudget`); None
            reads every line in full.
    """

    def __init__(self, model: Any, bias: dict | None = None, *, at_once: bool = False,
                 sample_rate: int = SAMPLE_RATE, budget: ReadingBudget | None = None) -> None:
        self.model = model
        self.bias = dict(bias or {})
        self.sample_rate = int(sample_rate)
        self._scored = getattr(model, "transcribe_scored", None)
        self.at_once = bool(at_once and self._scored is not None and getattr(model, "cancellable", False))
        self._helper = ThreadPoolExecutor(HELPERS, thread_name_prefix="captioner-framing") if self.at_once else None
        #: readings started on the helpers (framed and retimed), and how many of those were
        #: cancelled (not needed after all, or a reading failed): what the speculation did (tests read them)
        self.started_at_once = 0
        #: retimed readings left out live: not ended within :data:`FURTHER_BUDGET_S` of the
        #: framed reading's end (running or still queued), or cancelled by a Stop
        self.late = 0
        self.cancelled = 0
        self.budget = budget if self.at_once else None
        #: unsure lines left without their framed (``shed_framed``) or retimed (``shed_retimed``)
        #: readings by the budget's level, and lines whose readings its cap cut short (``capped``)
        self.shed_framed = 0
        self.shed_retimed = 0
        self.capped = 0
        #: lines every reading of which was empty, given the words of a reading with the end token
        #: held back (:mod:`captioner.asr.moonshine.empty_lines`)
        self.forced = 0
        self._running: dict[Future, threading.Event] = {}  # helper readings not finished, and their stops
        self._lock = threading.Lock()
        #: set by :meth:`hurry` (a Stop): every line keeps the readings it has
        self._hurry = threading.Event()
        self._timer: threading.Timer | None = None  # a hurry() with a grace period, until it fires

    def read(self, clip: np.ndarray, at_end: bool = False, draft: list | None = None) -> str:
        """Final text of a completed line's ``[n] float32`` samples.

        Args:
            at_end: the input ended on this line (it is read with :data:`END_PAD_S` of silence
                appended, in both framings).
            draft: token ids the line's text likely starts with (its latest re-decode), for a
                model that takes drafts (``drafts = True``): both framings check them in one
                decoder run instead of a step per token (the text is the same).

        Raises:
            BackendError: the model failed.
        """
        sr = self.sample_rate
        if at_end:
            clip = np.concatenate([clip, np.zeros(int(END_PAD_S * sr), np.float32)])
        kw = dict(self.bias)
        if draft and getattr(self.model, "drafts", False):
            kw["draft"] = list(draft)
        if self._scored is None:
            return collapse_repeats(self.model.transcribe(clip, **kw).strip())
        text = self._read_at_once(clip, kw) if self._helper is not None else self._read_in_turn(clip, kw)
        if not text and getattr(self.model, "forces_words", False) and not self._hurry.is_set():
            try:  # every reading empty: once more with the end token held back (empty_lines)
                forced = reread_empty(self._scored, clip, self._stoppable(kw), sr)
            except DecodeCancelled:  # a Stop (hurry) cancelled it
                forced = None
            if forced is not None:
                self.forced += 1
                text = forced[0]
        return collapse_repeats(text)

    def _read_in_turn(self, clip: np.ndarray, kw: dict) -> str:
        """:meth:`read` one reading after the other (the file path); the text before
        :func:`~captioner.asr.moonshine.repeats.collapse_repeats`."""
        sr = self.sample_rate
        cut = self._reading(self._scored(clip, **kw))
        if (cut[0] and cut[1] >= SURE_LOGPROB) or self._hurry.is_set():
            return cut[0]
        try:
            other = self._scored(framed(clip, sr), **self._stoppable(kw))
        except DecodeCancelled:  # a Stop (hurry) cancelled it
            return cut[0]
        best = surest((cut, self._reading(other)), len(clip), sr)
        if best[1] < SURE_LOGPROB and FURTHER_RATES and not self._hurry.is_set():
            best = surest([best] + self._further(clip, kw), len(clip), sr)
        return best[0]

    def _read_at_once(self, clip: np.ndarray, kw: dict) -> str:
        """:meth:`read` live: the framed reading runs on a helper while the line as cut is read
        here; once the reading as cut is unsure, the retimed readings start on the helpers too,
        without waiting for the framed one (they are cancelled if it turns out sure), so the
        helpers' two threads stay busy until the line's last reading ends. Returns the text
        before :func:`~captioner.asr.moonshine.repeats.collapse_repeats`.

        With a :attr:`budget`, the line starts only the readings its level allows, and readings
        still running at its deadline (the waiting audio's cap) are cancelled: the line keeps
        the surest of those done. Without one, or at level ``ALL`` within the cap, the text is
        the same."""
        sr = self.sample_rate
        plan = self.budget.plan() if self.budget is not None else None
        level = Level.ALL if plan is None else plan.level
        cap = None if plan is None else plan.deadline  # the budget's clock: time.monotonic
        second = self._start_helper(framed(clip, sr), kw) if level < Level.CUT_ONLY else None
        further: list[tuple[Future, threading.Event]] = []
        extra = overran = False  # the line needed more than its reading as cut; the cap cut it short
        try:
            cut = self._reading(self._scored(clip, **kw))
            if (cut[0] and cut[1] >= SURE_LOGPROB) or self._hurry.is_set():
                return cut[0]
            extra = True
            if second is None:  # the budget allows the reading as cut only
                self.shed_framed += 1
                return cut[0]

            def framed_sure() -> bool:  # the framed reading has ended, and the surer of the two is sure
                future = second[0]
                if not future.done() or future.cancelled() or future.exception() is not None:
                    return False
                return surest((cut, self._reading(future.result())), len(clip), sr)[1] >= SURE_LOGPROB

            if level == Level.ALL and not framed_sure():
                further = self._start_further(clip, kw, unless=framed_sure)
            try:
                other = second[0].result(timeout=None if cap is None else max(0.0, cap - time.monotonic()))
            except FutureTimeout:  # the audio waiting reached the cap: the line keeps its reading as cut
                overran = True
                self.capped += 1
                return cut[0]
            except (DecodeCancelled, CancelledError):  # a Stop (hurry) cancelled it
                return cut[0]
            best = surest((cut, self._reading(other)), len(clip), sr)
            if best[1] < SURE_LOGPROB and level > Level.ALL and FURTHER_RATES and not self._hurry.is_set():
                self.shed_retimed += 1
            if best[1] >= SURE_LOGPROB or not further or self._hurry.is_set():
                return best[0]
            # the budget counts from the framed reading's end, as when the retimed readings
            # started only then: starting them sooner never leaves out more of them
            deadline = time.monotonic() + FURTHER_BUDGET_S
            if cap is not None and cap < deadline:
                deadline, overran = cap, True  # overran if a reading is still running then
            readings = [best]
            for future, _ in further:
                try:
                    readings.append(self._reading(future.result(timeout=max(0.0, deadline - time.monotonic()))))
                except (FutureTimeout, DecodeCancelled, CancelledError):
                    self.late += 1
            overran = overran and len(readings) <= len(further) and not self._hurry.is_set()
            self.capped += int(overran)
            return surest(readings, len(clip), sr)[0]
        finally:  # readings not needed any more (sure, late, a Stop, or one failed): cancel them
            for future, stop in [second, *further] if second is not None else []:
                if not future.done():
                    self._cancel(future, stop)
            if plan is not None:
                self.budget.done(plan, extra=extra, overran=overran)

    def _start_further(self, clip: np.ndarray, kw: dict,
                       unless: Callable[[], bool]) -> list[tuple[Future, threading.Event]]:
        """Start the readings of ``clip`` at :data:`FURTHER_RATES` (:func:`retimed`) on the helpers;
        returns their futures and stops in the order of the rates. A reading whose turn comes
        once ``unless()`` is true (the framed reading ended sure) is not read: a helper that
        has just read the framed line checks it before it starts the next reading's encoder run,
        which no stop can cut short.

        The helper that is free now (the other one still reads the framed line) takes the
        shortest clip, the next one free the longest, then the rest. Measured 2026-12-07 on the
        20-minute meeting's lines read five times (``bench/reading_cost.py``, each reading alone:
        cut ~0.21 s, framed ~0.29 s, retimed 0.27-0.32 s): the last reading ends p50 0.73 s after
        the line is cut, against 0.83 s when the retimed readings waited for the framed one (the
        slower one on the caller, the faster two in turn on the helper) and 0.67 s packed
        perfectly; live, with the partial re-decodes beside them, the meeting's final per line
        p95 1.38 -> 1.27 s."""
        if not FURTHER_RATES or self._hurry.is_set():
            return []
        clips = {rate: retimed(clip, rate, self.sample_rate) for rate in FURTHER_RATES}
        by_length = sorted(FURTHER_RATES, key=lambda rate: len(clips[rate]))
        order = [by_length[0], *reversed(by_length[1:])]
        started = {rate: self._start_helper(clips[rate], kw, unless) for rate in order}
        return [started[rate] for rate in FURTHER_RATES]

    def _further(self, clip: np.ndarray, kw: dict) -> list[tuple[str, float]]:
        """The readings of ``clip`` at :data:`FURTHER_RATES` (:func:`retimed`), in that order,
        read in turn (the file path); a Stop (:meth:`hurry`) keeps the readings done so far."""
        out: list[tuple[str, float]] = []
        for rate in FURTHER_RATES:
            if self._hurry.is_set():
                break
            try:
                out.append(self._reading(self._scored(retimed(clip, rate, self.sample_rate), **self._stoppable(kw))))
            except DecodeCancelled:
                break
        return out

    def hurry(self, after: float = 0.0) -> None:
        """A Stop was asked (any thread; idempotent): ``after`` seconds from now, a line keeps
        the readings it already has. A line being read then keeps its reading as cut (or the
        surest of those done); its further readings are cancelled at their next decoder step
        or not started, so the pending lines of a file (:mod:`captioner.asr.moonshine.line_pool`) end
        within about one reading each (measured 2026-12-06: Ctrl-C in ``captioner transcribe``
        waited 3.3 s for four lines' five readings). Every line still gets its words;
        :meth:`resume` undoes it."""
        with self._lock:
            if self._timer is not None or self._hurry.is_set():
                return
            if after > 0:
                self._timer = threading.Timer(after, self._hurry_now)
                self._timer.args = (self._timer,)  # a timer that resume() replaced does nothing
                self._timer.daemon = True
                self._timer.start()
                return
        self._hurry_now()

    def _hurry_now(self, timer: threading.Timer | None = None) -> None:
        with self._lock:
            if timer is not None and timer is not self._timer:
                return
            self._timer = None
            self._hurry.set()
            stops = list(self._running.values())
        for stop in stops:
            stop.set()

    def resume(self) -> None:
        """Read every line in full again (a new run after a Stop)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._hurry.clear()

    def _stoppable(self, kw: dict) -> dict:
        """``kw`` plus ``stop=`` the hurry event, for a model that can cancel a reading."""
        return dict(kw, stop=self._hurry) if getattr(self.model, "cancellable", False) else kw

    def _cancel(self, future: Future, stop: threading.Event) -> None:
        """Stop a helper's reading at its next decoder step (or before it starts) and count it."""
        stop.set()
        future.add_done_callback(self._count_cancelled)

    def _start_helper(self, clip: np.ndarray, kw: dict,
                      unless: Callable[[], bool] | None = None) -> tuple[Future, threading.Event]:
        """Start reading ``clip`` (decode arguments ``kw``) on a helper thread, unless ``unless()``
        is true when its turn comes; returns its future and its stop. After :meth:`close` the
        future is returned cancelled (nothing is read)."""
        stop = threading.Event()
        if self._hurry.is_set():
            stop.set()
        try:
            future = self._helper.submit(self._helper_reading, clip, stop, kw, unless)
        except RuntimeError:  # the helpers were shut down (close() while the line was read)
            future = Future()
            future.cancel()
            stop.set()
            return future, stop
        with self._lock:
            self._running[future] = stop
        future.add_done_callback(self._finished)
        self.started_at_once += 1
        return future, stop

    def _helper_reading(self, clip: np.ndarray, stop: threading.Event, kw: dict,
                        unless: Callable[[], bool] | None) -> tuple[str, float]:
        if unless is not None and unless():
            stop.set()
            raise DecodeCancelled("the framed reading was sure: this one is not needed")
        with model_call():  # the process never finalises while a decode runs (issue 30.2)
            return self._scored(clip, stop=stop, **kw)

    def _finished(self, future: Future) -> None:
        with self._lock:
            self._running.pop(future, None)

    def _count_cancelled(self, future: Future) -> None:
        if not future.cancelled() and isinstance(future.exception(), DecodeCancelled):
            self.cancelled += 1

    @staticmethod
    def _reading(result: tuple[str, float]) -> tuple[str, float]:
        text, score = result
        return text.strip(), float(score)

    def close(self, timeout: float = 0.5) -> None:
        """Cancel the second readings (queued ones at once, the running one at its next decoder
        step) and wait up to ``timeout`` s for the helper's decode to end; idempotent. A decode
        that does not end in time (a hung model) is left to :func:`captioner.native_calls.exit_process`
        (it runs inside ``model_call``), so Stop and Quit stay within their 2 s."""
        if self._helper is None:
            return
        with self._lock:
            running = dict(self._running)
        for stop in running.values():
            stop.set()
        self._helper.shutdown(wait=False, cancel_futures=True)
        wait(list(running), timeout=timeout)


__all__ = [
    "FURTHER_BUDGET_S",
    "HELPERS",
    "LineReader",
    # re-exported from captioner.asr.moonshine.framings: bench/ scripts read them as line_framing.X
    "END_PAD_S",
    "FRAME_LEAD_S",
    "FRAME_TAIL_S",
    "FURTHER_RATES",
    "SAMPLE_RATE",
    "SURE_LOGPROB",
    "WORDS_MIN_S",
    "framed",
    "retimed",
    "surest",
]
