"""Events that flow up from the decoders to the transcript and the UI.

Every layer speaks these plain, immutable dataclasses: backends return them from a
step, the engine stamps them with the session's source label, the transcript
stores them and the UI renders them. None of them imports Qt or a framework.

Times are *stream time* in seconds: 0.0 is the first sample fed to the session
after ``start()``. They are never wall-clock times, so SRT/VTT cue times derived
from them are monotonic and independent of how fast the machine decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Union


@dataclass(frozen=True)
class TextDelta:
    """New text from one session.

    Attributes:
        text: UTF-8 text, never containing half a multi-byte character.
            For a *final* delta the text is appended verbatim to the committed
            transcript (token-by-token models include their own leading spaces).
            For a *partial* delta the text is the whole current unstable tail that
            follows the committed text: it replaces the previous partial of the
            same source, and an empty string clears it.
        start: stream time (s) where the audio behind ``text`` begins.
        end: stream time (s) where it ends; ``end >= start``.
        final: True for a final hypothesis (never changes once emitted),
            False for a partial hypothesis.
        source: label of the session that produced it ("You", "Meeting", a file
            name). Backends leave it empty; the session fills it in.
        heard: stream time (s) of the end of the audio the hypothesis was decoded from,
            when the backend knows it and it can differ from ``end``: a partial of the
            default model is a re-decode of the open line up to ``heard`` that shows only
            its steady words (:mod:`captioner.asr.moonshine.steady_tail`), so its text can stop at
            ``end < heard``. When the event reaches the screen, the audio at ``heard`` is
            as old as the newest sound behind that screen update (``bench/latency.py``'s
            partial update latency). None: not given (read it as ``end``).
        speaker: for a *final* delta, the voice that said it, as a stable id: ``"Speaker 1"``,
            ``"Speaker 2"``, ... numbered in order of first appearance and never reused within
            one run (:mod:`captioner.speakers`, issue 38). ``""`` when the source is not
            attributed (the microphone, which is always its own label "You"; attribution
            off; or the speaker model failed to load). Partials leave it ``""``. A name the
            user gave a speaker is not here: the transcript maps ids to names
            (:meth:`captioner.transcript.model.Transcript.rename_speaker`).
    """

    text: str
    start: float
    end: float
    final: bool = True
    source: str = ""
    heard: float | None = None
    speaker: str = ""


@dataclass(frozen=True)
class TurnBoundary:
    """The speaker's turn ended (end-of-turn) at ``time`` seconds of stream time.

    Attributes:
        time: stream time (s) of the boundary.
        kind: what decided it: ``"semantic"`` (the engine's end-of-turn classifier,
            smart-turn, at a pause), ``"semantic_vad"`` (Audio8's VAD heads),
            ``"silence"`` (the long-silence limit passed), ``"end_of_stream"``
            (``end()`` was called). A backend may also emit ``"line"`` (the default
            model closed a line after a pause); sessions drop it, since a line end is
            not a turn end.
        probability: end-of-turn probability in [0, 1] when a model gave one,
            else 1.0.
        source: session label, filled in by the session.
    """

    time: float
    kind: str = "semantic_vad"
    probability: float = 1.0
    source: str = ""


@dataclass(frozen=True)
class VadProbabilities:
    """Per-step semantic-VAD output (Audio8): end-of-turn probability per horizon.

    Attributes:
        time: stream time (s) of the step.
        horizons: horizons in seconds, e.g. (0.5, 1.0, 2.0, 3.0) (model card).
        eot: probability of class 0 ("no speech within the horizon") per horizon.
        source: session label.
    """

    time: float
    horizons: tuple[float, ...]
    eot: tuple[float, ...]
    source: str = ""


@dataclass(frozen=True)
class VoiceActivity:
    """What the speaker of one source is doing, for a live indicator (any backend).

    Emitted by the session when the state changes (and about twice a second while
    someone speaks or pauses), never per audio window.

    Attributes:
        time: stream time (s).
        speech: speech probability 0..1 from the voice-activity detector (Silero, or
            1 - Audio8's shortest-horizon end-of-turn probability).
        state: ``"speaking"``, ``"pause"`` (silence inside a turn), ``"turn_over"``
            (a turn boundary fired; until speech resumes) or ``"idle"`` (no turn yet).
        source: session label.
    """

    time: float
    speech: float
    state: str
    source: str = ""


@dataclass(frozen=True)
class Stats:
    """Health of one session or of the engine, emitted about once a second.

    Attributes:
        step_ms: mean wall-clock milliseconds of one model call over the window.
        rtf: real-time factor = processing seconds / audio seconds (< 1 keeps up).
        backlog_s: seconds of captured audio waiting to be decoded.
        audio_s: total stream seconds decoded so far.
        dropped_s: seconds of audio dropped (queue overflow), never silently.
        overflows: count of device/queue overflow reports.
        nonfinite_samples: NaN/inf samples replaced by silence.
        source: session label ("" for the whole engine).
        gpu_memory_used_bytes, gpu_memory_total_bytes: a remote server's GPU memory (0 = unknown).
        client_latency_ms: remote backend: median ms from handing a step to the client until
            its delta was back (network + server + client; 0 = unknown).
        reconnects: remote backend: new server sessions opened after a fault.
        load: busy seconds per wall second of the model's required work (0..1+;
            above ~0.9 the model is too slow here), 0.0 when the backend does not say.
        partials_shed: optional partial re-decodes skipped so far to keep up.
    """

    step_ms: float = 0.0
    rtf: float = 0.0
    backlog_s: float = 0.0
    audio_s: float = 0.0
    dropped_s: float = 0.0
    overflows: int = 0
    nonfinite_samples: int = 0
    source: str = ""
    gpu_memory_used_bytes: int = 0
    gpu_memory_total_bytes: int = 0
    client_latency_ms: float = 0.0
    reconnects: int = 0
    load: float = 0.0
    partials_shed: int = 0


@dataclass(frozen=True)
class Level:
    """Input level of one source, about 20 per second, for a level meter.

    Attributes:
        rms_dbfs: RMS level in dBFS (-inf..0; silence is clamped to -120).
        peak_dbfs: peak level in dBFS.
        source: source label.
    """

    rms_dbfs: float
    peak_dbfs: float
    source: str = ""


@dataclass(frozen=True)
class Notice:
    """Something the user must be told (device lost, backend too slow, ...).

    Attributes:
        message: one or two sentences: what happened and what to do.
        severity: "info", "warning" or "error".
        code: stable machine-readable key, e.g. "device_lost", "backlog".
        source: source label or "".
    """

    message: str
    severity: str = "warning"
    code: str = ""
    source: str = ""


@dataclass(frozen=True)
class SpeakerFix:
    """A later look at the voices corrects a label already given (issue 51): the final text of
    ``source`` from ``start`` to ``end`` (stream seconds, the times of the final it labelled) was
    said by ``speaker``. Sent at most once for a stretch of text, by the speakers' second pass
    (:meth:`captioner.speakers.registry.SpeakerRegistry.corrections`); the transcript, the pane,
    Save and the journal follow it as they follow a rename.

    Attributes:
        start, end: stream seconds of the text relabelled.
        speaker: its speaker id now ("Speaker 2").
        source: session label.
    """

    start: float
    end: float
    speaker: str
    source: str = ""


@dataclass(frozen=True)
class SoundEvent:
    """A sound that is not speech started (issue 49): YAMNet heard ``label`` ("music",
    "phone ringing", ...) in ``source`` from ``start`` (stream seconds, the start of the first of
    the two patches in a row that crossed its threshold). Sent once when the sound starts, and
    again only after it stopped and started anew (:mod:`captioner.sounds.detector`). Shown as a
    bracketed caption ("[music]"), styled apart from speech; written as its own segment with a
    ``"sound"`` field in JSON and as a bracketed cue in SRT/WebVTT.

    Attributes:
        start: stream seconds the sound started.
        end: stream seconds of the end of the patches that detected it (``start`` + 1.44 s for
            two 0.96 s patches 0.48 s apart); the caption's cue lasts from ``start`` to ``end``.
        label: the caption word without brackets ("phone ringing").
        score: the class probability that crossed the threshold, 0-1.
        source: session label.
    """

    start: float
    end: float
    label: str
    score: float = 1.0
    source: str = ""

    @property
    def caption(self) -> str:
        """The bracketed caption text, e.g. ``"[music]"``."""
        return f"[{self.label}]"


Event = Union[
    TextDelta, TurnBoundary, VadProbabilities, VoiceActivity, Stats, Level, Notice, SpeakerFix, SoundEvent
]


def with_source(event: Event, source: str) -> Event:
    """Return ``event`` labelled with ``source`` (events are immutable)."""
    return replace(event, source=source)


__all__ = [
    "SoundEvent",
    "SpeakerFix",
    "Event",
    "Level",
    "Notice",
    "Stats",
    "TextDelta",
    "TurnBoundary",
    "VadProbabilities",
    "VoiceActivity",
    "with_source",
]
