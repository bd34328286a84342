"""Semantic end-of-turn detection for any backend (DESIGN section 4, "Semantic end-of-turn on a CPU").

One :class:`TurnDetector` per session (Qt-free, no threads of its own) watches the
session's audio and the text its backend decodes:

1. a voice-activity detector (Silero VAD, 32 ms windows at 16 kHz) finds each pause
   (the session's one VAD pass, shared with the default model's line cutter, or the
   detector's own :class:`~captioner.asr.vad_stream.SpeechWindows`);
2. after ``pause_s`` of silence an end-of-turn classifier (smart-turn v3.2, an
   audio-only model over the last <= 8 s of the turn) gives the probability that the
   speaker has finished;
3. once the backend's text of the pause has settled, that probability is combined with
   what the text says (:func:`combine`: an unfinished clause -- a trailing conjunction,
   article, preposition, modal or comma -- halves it, a finished-looking one raises it a
   little; on espeak-ng speech the classifier calls a clause cut by an SSML ``<break>``
   complete, because TTS intonation falls there), and the turn ends
   (``TurnBoundary(kind="semantic")`` at the end of the speech, ``probability`` = the
   combined score) when the score reaches ``threshold``;
4. otherwise a long silence (``silence_s``, 3 s by default) ends it anyway
   (``kind="silence"``).

A turn needs text: a stretch of sound the backend never turned into words (noise,
a cough, music without lyrics) ends no turn. The decision waits (at most
``settle_s``, or until speech resumes) for the backend's text of the pause; the
session then holds the boundary back until that text is final, so it always comes
after the last words of its turn.

The detector also reports :class:`~captioner.events.VoiceActivity` (speaking /
pause / turn over, with the VAD speech probability) when the state changes or the
probability moves, for the overlay's indicator dot.

Models and dependency choice (measured on the 2-core development machine, 2026-12-01):
both ONNX files ship inside the ``pipecat-ai`` wheel (BSD-2):
``pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx`` (8.7 MB) and
``pipecat/audio/vad/data/silero_vad.onnx`` (2.3 MB). The classifier is pipecat's own
maintained ``LocalSmartTurnAnalyzerV3`` (its Whisper features and ONNX call, one
intra-op thread): 26 ms per decision on an idle core, 64 ms median / 103 ms p95 with
both cores busy (``bench/turns.py``; 35-160 ms inside a session while the default
model decodes), import 0.15-0.3 s, load 0.03-0.24 s. It is called through its
``_predict_endpoint`` method, so the version is pinned to 1.14.x. Its turn
buffering is not used: it stamps audio with the wall clock, so a file decoded faster
than real time would be cut at the wrong places; the buffering here runs on stream
time. pipecat's Silero wrapper module imports its volume tracker (``loudness``), so
the VAD network is run here directly with onnxruntime from the wheel's file (about
0.1 ms per 32 ms window).

A plain ``pip install pipecat-ai`` pulls 498 MB into a fresh folder (llvmlite 173 MB,
onnxruntime, numpy, numba, openai, aiohttp, Pillow, ...; 19 s from a warm cache) that
this mostly does not use, so captioner depends on ``onnxruntime``, ``loguru``, ``pydantic``
and ``wait_for2`` (what these two modules import) and installs ``pipecat-ai`` itself
with ``--no-deps`` (``scripts/_common.sh``): 113 MB on disk in all (onnxruntime 78 MB,
pipecat 34 MB) and ~3 s to install (``pip check`` then lists pipecat-ai's unused
requirements as missing). Importing ``pipecat`` on Python < 3.12 replaces
``asyncio.wait_for`` with ``wait_for2.wait_for`` (a drop-in fix); its start-up log
line is silenced. When any of it is missing or fails to load, the detector says so
once (``Notice`` code ``turn_detector_unavailable``) and falls back to
silence-based turns (an energy VAD if Silero is missing too); it never raises.
Nothing is downloaded.
"""

from __future__ import annotations

import collections
import logging
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from captioner.asr.vad import MODEL_RATE, VAD_WINDOW, EnergyVad, SileroVad
from captioner.asr.vad_stream import SpeechWindows
from captioner.engine.head_activity import ACTIVITY_INTERVAL_S, SPEECH_ON, HeadActivity
from captioner.engine.turn_models import SmartTurn, TurnModels, load_models, unavailable_message
from captioner.engine.turn_text import UNFINISHED_WORDS, combine, text_unfinished
from captioner.events import Event, Notice, TextDelta, TurnBoundary, VoiceActivity

log = logging.getLogger(__name__)

#: VAD speech probability that ends speech (hysteresis below ``SPEECH_ON``, which starts it).
SPEECH_OFF = 0.35
#: Consecutive speech windows (x 32 ms) before sound counts as speech (ignores clicks).
MIN_SPEECH_WINDOWS = 3
#: Audio (s) before the first speech window that the classifier also sees.
PRE_SPEECH_S = 0.5
#: Silence (s) after the speech end that the classifier also sees.
POST_SPEECH_S = 0.2
#: The classifier sees at most this much audio (s) (smart-turn v3 input: 8 s).
MAX_TURN_AUDIO_S = 8.0
#: Classifier calls :attr:`TurnDetector.decisions` keeps (the newest; one per pause, ~1 MB a day unbounded).
DECISIONS_KEPT = 1000


@dataclass(frozen=True)
class TurnSettings:
    """How turns end; one value per user setting.

    Attributes:
        threshold: end-of-turn probability (0..1, exclusive) a pause needs to end a
            turn. Smart-turn decides with it, and the Audio8 VAD heads use it as their
            threshold. Lower = turns end sooner ("Turn sensitivity" = 1 - threshold).
        silence_s: seconds of silence after which a turn ends whatever the classifier
            said (the long-silence limit).
        pause_s: seconds of silence after speech before the classifier is asked
            (longer than the gap between two sentences of one speaker, ~0.3 s).
        settle_s: most seconds after that to wait for the backend's text of the pause.
        semantic: use the end-of-turn classifier; False = silence-based turns only.
    """

    threshold: float = 0.5
    silence_s: float = 3.0
    pause_s: float = 0.5
    settle_s: float = 1.5
    semantic: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"turn threshold must be between 0 and 1, got {self.threshold}")
        if not self.silence_s > 0:
            raise ValueError(f"the long-silence limit must be > 0 s, got {self.silence_s}")
        if not 0 < self.pause_s:
            raise ValueError(f"pause_s must be > 0, got {self.pause_s}")



# -- the detector ---------------------------------------------------------------------------------------
class TurnDetector:
    """Per-session end-of-turn state machine on stream time (see module docstring).

    Args:
        settings: thresholds and limits.
        sample_rate: rate (Hz) of the audio passed to :meth:`feed`; resampled to 16 kHz.
        models: loaded models; default :func:`load_models` (cached per process).
        source: label stamped on events.

    Attributes:
        time: stream seconds of audio consumed.
        decisions: the latest :data:`DECISIONS_KEPT` classifier calls as ``(stream time s,
            probability, ms)`` (bounded: an all-day session makes one per pause).
    """

    def __init__(
        self,
        settings: TurnSettings | None = None,
        sample_rate: int = MODEL_RATE,
        models: TurnModels | None = None,
        source: str = "",
    ) -> None:
        self.settings = settings or TurnSettings()
        self.models = models or load_models(self.settings.semantic)
        self.sample_rate = int(sample_rate)
        self.source = source
        self._resampler = None
        if self.sample_rate != MODEL_RATE:
            import soxr

            self._resampler = soxr.ResampleStream(self.sample_rate, MODEL_RATE, 1, dtype="float32")
        self._notice_pending = bool(self.models.problem) and self.settings.semantic
        self.decisions: collections.deque[tuple[float, float, float]] = collections.deque(maxlen=DECISIONS_KEPT)
        self.reset()

    def reset(self) -> None:
        """Back to stream time 0, no turn in progress."""
        self._speech = SpeechWindows(self.models.vad)  # used when the session brings no probabilities
        self._n = 0  # 16 kHz samples consumed by the VAD
        self._history = np.zeros(0, np.float32)  # recent audio for the classifier
        self._history_start = 0  # sample index of _history[0]
        self._speaking = False
        self._speech_run = 0
        self._silence_run = 0
        self._in_turn = False
        self._turn_start = 0
        self._speech_end = 0
        self._asked = False
        self._candidate: float | None = None
        self._last_p = 0.0
        self._text = ""  # final text of the current turn
        self._boundary_t = 0.0  # stream time (s) of the last boundary: older text belongs to that turn
        self._text_end = 0.0
        self._partial = ""
        self._activity = "idle"
        self._after = "idle"  # state shown when no turn is in progress
        self._activity_t = -1.0
        self._peak = 0.0

    @property
    def time(self) -> float:
        """Stream seconds consumed."""
        return self._n / MODEL_RATE

    @property
    def semantic(self) -> bool:
        """True when the classifier is loaded and enabled."""
        return self.settings.semantic and self.models.classifier is not None

    # -- input ------------------------------------------------------------------------------------
    def note_text(self, events: Iterable[Event]) -> None:
        """Tell the detector what the backend decoded (call before :meth:`feed` of the same audio)."""
        for ev in events:
            if not isinstance(ev, TextDelta):
                continue
            if ev.final:
                if ev.text.strip() and (ev.start >= self._boundary_t or not self._boundary_t):
                    self._text += ev.text
                    self._text_end = max(self._text_end, float(ev.end))
                    self._partial = ""
            else:
                self._partial = ev.text

    def feed(self, samples: np.ndarray, speech: Sequence[float] | None = None) -> list[Event]:
        """Consume ``[n] float32`` samples at ``sample_rate``; returns boundaries and activity events.

        Args:
            samples: the stream's next samples.
            speech: the speech probability of each 512-sample window these samples complete,
                from the session's one VAD pass (``StepResult.speech``; 16 kHz streams only);
                None: the detector runs its own pass.
        """
        out: list[Event] = []
        if self._notice_pending:
            self._notice_pending = False
            out.append(Notice(unavailable_message(self.models.problem, self.settings.silence_s), "warning",
                              "turn_detector_unavailable", self.source))
        x = np.asarray(samples, dtype=np.float32)
        if self._resampler is not None:
            x = self._resampler.resample_chunk(x)
        if not len(x):
            return out
        self._push_history(x)
        if speech is None or self._resampler is not None:
            speech = self._speech.feed(x)[:, 0]
        for p in speech:
            out += self._window(float(p))
        return out

    def finish(self) -> list[Event]:
        """End of stream: forget the open turn (the session sends ``end_of_stream``)."""
        out = []
        if self._activity != "idle":
            out.append(VoiceActivity(self.time, 0.0, "turn_over", self.source))
        self.reset()
        return out

    # -- internals ----------------------------------------------------------------------------------
    def _push_history(self, x: np.ndarray) -> None:
        keep = int((MAX_TURN_AUDIO_S + PRE_SPEECH_S + self.settings.silence_s + 1.0) * MODEL_RATE)
        self._history = np.concatenate([self._history, x]) if len(self._history) else x.copy()
        if len(self._history) > keep:
            drop = len(self._history) - keep
            self._history = self._history[drop:]
            self._history_start += drop

    def _audio(self, start: int, end: int) -> np.ndarray:
        start = max(start, end - int(MAX_TURN_AUDIO_S * MODEL_RATE), self._history_start)
        a, b = start - self._history_start, end - self._history_start
        return self._history[max(0, a) : max(0, b)]

    def _window(self, p: float) -> list[Event]:
        self._n += VAD_WINDOW
        self._peak = max(self._peak, p)
        out: list[Event] = []
        s = self.settings
        w_s = VAD_WINDOW / MODEL_RATE
        if p >= SPEECH_ON or (self._speaking and p >= SPEECH_OFF):
            self._speech_run += 1
            if self._speaking or self._speech_run >= MIN_SPEECH_WINDOWS:
                if not self._speaking and self._candidate is not None:
                    # speech resumed before the text of the pause settled: decide with the words so far
                    score = combine(self._candidate, self._turn_text())
                    self._candidate = None
                    self._last_p = score
                    if score >= s.threshold:
                        out += self._end_turn("semantic", score)
                if not self._in_turn:
                    self._in_turn = True
                    self._turn_start = self._n - self._speech_run * VAD_WINDOW
                self._speaking = True
                self._silence_run = 0
                self._asked = False
        else:
            self._speech_run = 0
            if self._speaking:
                self._speaking = False
                self._speech_end = self._n - VAD_WINDOW
            if self._in_turn:
                self._silence_run += 1
                silence = self._silence_run * w_s
                if not self._asked and silence >= s.pause_s:
                    self._asked = True
                    self._ask()
                if self._candidate is not None and (self._settled() or silence >= s.pause_s + s.settle_s):
                    score = combine(self._candidate, self._turn_text())
                    self._candidate = None
                    self._last_p = score
                    if score >= s.threshold:
                        out += self._end_turn("semantic", score)
                if self._in_turn and silence >= s.silence_s:
                    out += self._end_turn("silence", self._last_p if self.semantic else 1.0)
        out += self._report_activity(p)
        return out

    def _ask(self) -> None:
        if not self.semantic:
            return
        end = self._speech_end + int(POST_SPEECH_S * MODEL_RATE)
        audio = self._audio(self._turn_start - int(PRE_SPEECH_S * MODEL_RATE), min(end, self._n))
        try:
            t0 = time.perf_counter()
            p = float(self.models.classifier(audio))
            ms = 1000.0 * (time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - a failing model must not stop captioning
            log.warning("end-of-turn model failed: %s", exc)
            self.models.classifier = None
            self.models.problem = f"end-of-turn model failed: {exc}"
            self._notice_pending = True
            return
        self.decisions.append((self.time, p, ms))
        self._last_p = p
        self._candidate = p  # decided once the text of the pause has settled

    def _turn_text(self) -> str:
        return (self._text + " " + self._partial) if self._partial.strip() else self._text

    def _settled(self) -> bool:
        """The backend has finished the text up to the pause (no open partial, final text reaches it)."""
        speech_end_s = self._speech_end / MODEL_RATE
        return not self._partial.strip() and bool(self._text.strip()) and self._text_end >= speech_end_s - 0.5

    def _end_turn(self, kind: str, probability: float) -> list[Event]:
        had_text = bool(self._turn_text().strip())
        self._in_turn = False
        self._candidate = None
        self._asked = False
        self._silence_run = 0
        self._text = ""
        self._partial = ""
        if not had_text:  # noise, a cough, music: no words, no turn
            self._after = "idle"
            return []
        self._after = "turn_over"
        self._boundary_t = self._speech_end / MODEL_RATE
        return [TurnBoundary(self._speech_end / MODEL_RATE, kind, float(probability), self.source)]

    def _report_activity(self, p: float) -> list[Event]:
        if self._speaking:
            state = "speaking"
        elif self._in_turn:
            state = "pause"
        else:
            state = self._after
        t = self.time
        if state == self._activity and (state in ("idle", "turn_over") or t - self._activity_t < ACTIVITY_INTERVAL_S):
            return []
        peak, self._peak = self._peak, 0.0
        self._activity, self._activity_t = state, t
        return [VoiceActivity(t, float(peak if state == "speaking" else p), state, self.source)]


__all__ = [
    "combine",
    "EnergyVad",
    "SileroVad",
    "SmartTurn",
    "TurnDetector",
    "TurnModels",
    "TurnSettings",
    "UNFINISHED_WORDS",
    "HeadActivity",
    "load_models",
    "text_unfinished",
    "unavailable_message",
]

