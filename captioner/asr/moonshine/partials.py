"""The default model's partials: re-decodes of a session's open line, and the words they commit.

While a line is open, :class:`Partials` re-decodes it now and then on the partial thread
(:class:`~captioner.asr.moonshine.partial_worker.PartialWorker`, lower CPU priority) --
optional work, granted by the shared :class:`~captioner.engine.scheduler.DecodeBudget` and shed
while the engine is behind. What two re-decodes agree on becomes final early
(:class:`~captioner.asr.moonshine.agreement.LineAgreement`); of the rest, the steady words are
shown as the partial (:class:`~captioner.asr.moonshine.steady_tail.SteadyTail`). A re-decode is
never a line's final text: it did not hear the end of its line.

:class:`Partials` is mixed into :class:`~captioner.asr.moonshine.backend.MoonshineBackend`, which
owns what it uses (``partials``, ``budget``, ``_worker``, ``wakeup``, ``_clip``, ``_final``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from captioner.asr.base import BackendError
from captioner.asr.moonshine.line_state import LineState, join_line
from captioner.asr.moonshine.partial_worker import PartialJob
from captioner.events import Event, TextDelta

#: Seconds of silence appended to an open line before a partial re-decode: the end of
#: the clip reads as the end of an utterance (measured on the meeting's first sentence:
#: with none a 1 s clip decoded as "Our next trainer to our next", with 0.2 s as "Our next
#: training."; 0.6 s gave nothing for clips under ~1.5 s).
PARTIAL_PAD_S = 0.2
#: Shortest open line (s) worth a partial re-decode.
MIN_PARTIAL_S = 0.3


class Partials:
    """Re-decodes of the open line (a mixin of :class:`~captioner.asr.moonshine.backend.MoonshineBackend`)."""

    def _partial_done(self) -> None:
        """A re-decode finished (partial thread): wake the live engine to collect it now."""
        wakeup = self.wakeup
        if wakeup is not None:
            wakeup()

    def ready(self, state: Any) -> bool:
        """A finished re-decode of this session's open line waits to be shown (see :attr:`~captioner.asr.base.Backend.wakeup`)."""
        return isinstance(state, LineState) and self._worker.done(state.key)

    def _record_optional(self, job: PartialJob) -> None:
        """Tell the budget what a finished re-decode cost (collected or thrown away)."""
        self.budget.record_optional(job.cost_s, len(job.clip) / self.sample_rate)

    def _partial(self, state: LineState, submit: bool = True) -> list[Event]:
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

    def _apply_partial(self, state: LineState, job: PartialJob) -> list[Event]:
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
