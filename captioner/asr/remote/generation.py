"""One server generation (``commit final=false`` .. ``transcription.done``): events -> captioner events.

Runs on the stream's loop thread. Per ``transcription.delta`` it advances the step clock
(:mod:`~captioner.asr.remote.timemap`), turns the text, the VAD probabilities and the turn
hysteresis into :mod:`captioner.events`, tells the resend buffer how far the server has
transcribed, and hands the events to the stream.

After a reconnect the new session is sent audio from before the seam again
(:mod:`~captioner.asr.remote.resend`); what it says about that audio was already said by the
old session, so deltas that end at or before the seam are dropped, and the first words after
it are dropped too when they repeat the last words the old session said (a model may place a
word one step later on a fresh start).

Errors by kind (DESIGN section 2: errors never close the socket):

* ``invalid_event``, ``model_not_found``, ``model_not_validated``: the session settings are
  refused: :class:`~captioner.asr.remote.faults.Fatal`;
* ``processing_error``: the generation failed (no ``done`` follows): reconnect;
* any other code, known or not: reported once, skipped; the same code
  ``REPEAT_LIMIT`` times within ``REPEAT_WINDOW_S`` is a fault that will not go away: fatal;
* a malformed frame (invalid JSON, no type, binary): reported once, skipped;
  ``REPEAT_LIMIT`` within ``REPEAT_WINDOW_S``: reconnect.
"""

from __future__ import annotations

import collections
import logging
import time
import unicodedata
from typing import TYPE_CHECKING, Any

from captioner.asr.audio8.vad import horizon_index
from captioner.asr.remote import protocol as P
from captioner.asr.remote.faults import Fatal, Transient
from captioner.asr.remote.timemap import TimeMap
from captioner.events import Event, Notice, TextDelta, TurnBoundary, VadProbabilities

if TYPE_CHECKING:  # pragma: no cover
    from captioner.asr.remote.resend import Piece

log = logging.getLogger(__name__)

#: Error codes that mean the server refused the session settings: retrying cannot help.
FATAL_CODES = frozenset({"invalid_event", "model_not_found", "model_not_validated"})
#: The same error code (or bad frames) this many times within REPEAT_WINDOW_S is a lasting fault.
REPEAT_LIMIT = 3
REPEAT_WINDOW_S = 10.0
#: Words of the old session compared with the first words after a seam.
SEAM_WORDS = 3


class Generation:
    """Per-generation bookkeeping: time map, delta count, held text, seam.

    Args:
        stream: the owning :class:`~captioner.asr.remote.stream.RemoteStream` (its lock, event
            list, VAD hysteresis, resend buffer; built above this module, which it imports).
        seam: first stream sample the previous session had not transcribed, when this
            generation starts after a reconnect (None on the first session).
    """

    def __init__(self, stream: Any, seam: int | None = None) -> None:
        self.s = stream
        self.map = TimeMap()
        self.inflight: collections.deque[Piece] = collections.deque()  # sent, not transcribed (latency)
        self.deltas = 0
        self.held = ""
        self.held_from = 0
        self.pending_vad: dict | None = None
        self.final_sent = False
        self.final_at = 0.0
        self.answered_once = False
        self.sent_at = time.monotonic()
        self.last_event = time.monotonic()
        self.seam = seam
        self.dropped_at_seam = 0  # deltas with text about audio the old session had transcribed
        self._seam_check = seam is not None  # the first text after the seam is still to come
        self._errors: dict[str, collections.deque[float]] = collections.defaultdict(collections.deque)
        stream._vad.armed = False
        with stream._cond:
            stream._sent_gen, stream._next_need = 0, stream._lag

    def unanswered(self) -> bool:
        """Audio (or the final commit) is waiting for an answer: a whole step more than the
        next delta needs (its step + look-ahead) was sent."""
        return self.final_sent or self.map.gen_end >= self.deltas * P.STEP_SAMPLES + self.s._lag + P.STEP_SAMPLES

    def audio_end(self, n: int) -> int:
        """Generation sample where the audio described by the first ``n`` deltas ends: the
        step clock minus the delay (0 while the deltas still describe the server's left pad)."""
        return max(0, n - self.s._delay_steps) * P.STEP_SAMPLES

    def time_at(self, g: int) -> float:
        """Stream time (s) of generation sample ``g``."""
        return self.map.stream_at(g) / P.SAMPLE_RATE

    def _repeated(self, key: str) -> bool:
        now = time.monotonic()
        times = self._errors[key]
        times.append(now)
        while times and now - times[0] > REPEAT_WINDOW_S:
            times.popleft()
        return len(times) >= REPEAT_LIMIT

    def bad_frame(self, problem: str) -> None:
        """A frame that is not a protocol event: report once, skip; repeated: reconnect.

        Raises:
            Transient: the REPEAT_LIMIT-th bad frame within REPEAT_WINDOW_S.
        """
        s = self.s
        if self._repeated("bad frame"):
            raise Transient(f"{problem} ({REPEAT_LIMIT} bad frames within {REPEAT_WINDOW_S:g} s)")
        log.info("caption server %s: %s; skipped", s.url, problem)
        s._report_once("bad_frame", Notice(f"Caption server {s.url}: {problem}; the frame was skipped and the "
                                           "stream goes on.", "warning", "remote_bad_frame"))

    def handle(self, ev: dict) -> bool:
        """Apply one server event; True on ``transcription.done``.

        Raises:
            Transient, Fatal: see the module docstring.
        """
        kind = ev["type"]
        s = self.s
        if kind == "transcription.delta":
            self._delta(str(ev.get("delta") or ""))
        elif kind == "semantic_vad.delta":
            self.pending_vad = ev
        elif kind == "metrics.delta":
            s.metrics = {k: ev.get(k) for k in ("step_ms", "rtf", "rtf_ema", "gpu_memory_used_bytes",
                                                 "gpu_memory_total_bytes", "gpu_memory_used_ratio")}
            with s._lock:
                s.step_ms_recent.append(float(ev.get("step_ms") or 0.0))
        elif kind == "transcription.done":
            if not self.final_sent:
                raise Transient("the server ended the generation before captioner did")
            self.flush()
            return True
        elif kind == "error":
            self._error(ev)
        elif kind != "session.created":
            log.debug("caption server sent an unknown event type %r", kind)
        return False

    def _error(self, ev: dict) -> None:
        s = self.s
        code = str(ev.get("code") or "")
        message = P.error_message(ev, s.url)
        if code == "processing_error":
            if not self.final_sent:
                raise Transient(f"server processing error: {str(ev.get('error') or '')[:120]}")
            raise Fatal(message)
        if code in FATAL_CODES:
            raise Fatal(message)
        if self._repeated(f"code {code}"):
            raise Fatal(f"{message} ({REPEAT_LIMIT} times within {REPEAT_WINDOW_S:g} s)")
        log.info("caption server %s reported error %r; skipped", s.url, code)
        s._report_once(f"error {code}", Notice(f"{message}; skipped, the stream goes on.", "warning",
                                               "remote_server_error"))

    def _delta(self, delta: str) -> None:
        s = self.s
        self.deltas += 1
        if self.deltas > s._delay_steps:  # a delta about real audio, not the left pad
            s._fruitless = 0
        self.answered_once = True
        g_end = self.audio_end(self.deltas)
        t_end = self.time_at(g_end)
        stream_end = self.map.stream_at(g_end)
        old = self.seam is not None and stream_end <= self.seam  # the old session said this already
        events: list[Event] = []
        fired = None
        vad = self.pending_vad
        self.pending_vad = None
        if vad is not None and not old and self.deltas > s._delay_steps:  # not about the left pad
            fired = self._vad(vad, t_end, events)
        if not self.held:
            self.held_from = self.deltas - 1
        text = self.held + delta
        self.held = ""
        if text and "\ud800" <= text[-1] <= "\udbff":  # half of a surrogate pair: wait for the rest
            self.held, text = text[-1], text[:-1]
        if text and old:
            self.dropped_at_seam += 1
            text = ""
        if text and self._seam_check:
            self._seam_check = False
            text = s._drop_repeated_words(_clean(text))
        if text:
            start = self.time_at(self.audio_end(self.held_from))
            events.append(TextDelta(_clean(text), start, t_end, True))
            s._said(_clean(text), self.map.stream_at(self.audio_end(self.held_from)))
        if fired is not None:
            events.append(TurnBoundary(t_end, "semantic_vad", fired))
        now = time.perf_counter()
        with s._cond:
            needed = (self.deltas - 1) * P.STEP_SAMPLES + s._lag  # the audio this delta needed
            s._next_need = needed + P.STEP_SAMPLES
            s._buffer.confirm(stream_end)  # never moves back (audio resent before a seam)
            while self.inflight and self.inflight[0].gen_start + self.inflight[0].samples < needed:
                self.inflight.popleft()
            for p in self.inflight:  # client latency: from pushing the piece that completed this step's need
                if p.gen_start + p.samples >= needed:
                    if p.stream_pos is not None and p.gen_start < needed:
                        s.latencies_ms.append((now - p.pushed_at) * 1000.0)
                    break
            s._events.extend(events)
            s._cond.notify_all()

    def _vad(self, vad: dict, t_end: float, events: list[Event]) -> float | None:
        s = self.s
        horizons = tuple(float(h) for h in vad.get("horizons_seconds") or ())
        eot = tuple(float(p) for p in vad.get("eot_probabilities") or ())
        if not horizons or len(eot) != len(horizons):
            return None
        events.append(VadProbabilities(t_end, horizons, eot))
        if s._vad_index is None:
            try:
                s._vad_index = horizon_index(horizons, s.config.vad_horizon_s)
            except ValueError as exc:
                s._report_once("vad", Notice(f"{exc}; turn ends use the server's selected horizon.",
                                             "warning", "remote_vad"), events)
        p = eot[s._vad_index] if s._vad_index is not None else float(vad.get("selected_eot_probability") or 0)
        return p if s._vad.update(p) else None

    def flush(self) -> None:
        """Deliver text held back for the second half of a character (the generation ends)."""
        if self.held:
            t = self.time_at(self.audio_end(self.deltas))
            self.s._emit(TextDelta(_clean(self.held), self.time_at(self.audio_end(self.held_from)), t, True))
            self.held = ""


def words(text: str) -> list[str]:
    """Words of ``text`` for comparing a seam: case-folded, punctuation stripped."""
    out = []
    for w in text.split():
        w = "".join(ch for ch in w if not unicodedata.category(ch).startswith("P")).casefold()
        if w:
            out.append(w)
    return out


def _clean(text: str) -> str:
    """Text with any lone surrogate (a character the server split badly) replaced by U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
