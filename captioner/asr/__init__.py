"""ASR backends: model loading, chunk geometry and one batched streaming step (no Qt).

:func:`load_backend` is the one entry point the CLI, the engine and the UI use. Heavy
frameworks (torch, TensorFlow/LiteRT) are imported only when their backend is chosen,
so the default model starts without them.
"""

from __future__ import annotations

import os
from typing import Any

from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.geometry import ChunkGeometry, GeometryError

#: Backend names accepted by :func:`load_backend` (and ``--backend``).
BACKENDS = ("default", "audio8", "tflite", "remote")


def load_backend(
    kind: str = "default",
    model: str | os.PathLike | None = None,
    *,
    clock_ms: int = 80,
    delay_ms: int = 480,
    language: str = "en",
    batch_size: int | None = None,
    **options: Any,
) -> Backend:
    """Load a streaming backend.

    Args:
        kind: one of :data:`BACKENDS`.
        model: model location: none for "default" (embedded model), a checkpoint
            directory for "audio8", a ``.tflite`` file for "tflite", a ``ws://`` URL for
            "remote".
        clock_ms, delay_ms: audio clock and transcription delay in ms (Audio8/remote only;
            validated by :meth:`ChunkGeometry.from_clock`; the remote server runs the 80 ms
            clock only).
        language: "en" or "zh" (the default model is English-only).
        batch_size: sessions per model call; ``None`` = the backend's default (TFLite:
            fixed by the export).
        **options: backend-specific options passed through (e.g. ``partials`` for the
            default model; ``device``, ``dtype``, ``vad_threshold`` for Audio8; ``token``, ``ca_file``, ``model_name``, ``hotwords``
            for remote).

    Raises:
        BackendError: unknown kind, missing model, missing optional dependency (the
            message names the extra to install), or a model that fails to load.
        GeometryError: an invalid clock/delay pair (message lists allowed values).
    """
    kind = (kind or "default").lower()
    if kind not in BACKENDS:
        raise BackendError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
    problem = model_problem(kind, model)
    if problem:
        raise BackendError(problem)
    if kind == "default":
        from captioner.asr.moonshine.backend import MoonshineBackend

        return MoonshineBackend(model, **({"batch_size": batch_size} if batch_size else {}), language=language,
                                **options)
    if kind == "tflite":
        try:
            from captioner.asr.tflite.backend import load_tflite_backend
        except ImportError as exc:  # pragma: no cover - module always ships
            raise BackendError(f"the tflite backend is unavailable: {exc}") from exc
        return load_tflite_backend(model, **options)
    if kind == "audio8":
        ChunkGeometry.from_clock(clock_ms, delay_ms)  # validate before importing torch
        try:
            from captioner.asr.audio8 import load_audio8_backend
        except ImportError as exc:
            raise BackendError(
                f"the audio8 backend needs torch and transformers ({exc}); install them with: "
                "pip install 'captioner[audio8]'"
            ) from exc
        kw = dict(options)
        if batch_size:
            kw["batch_size"] = batch_size
        return load_audio8_backend(model, clock_ms=clock_ms, delay_ms=delay_ms, language=language, **kw)
    if int(clock_ms) != 80:
        raise BackendError(f"the remote server runs the 80 ms clock only, not {clock_ms} ms; use --clock 80")
    from captioner.asr.remote import load_remote_backend

    kw = dict(options)
    if batch_size:
        kw["batch_size"] = batch_size
    return load_remote_backend(str(model), delay_ms=delay_ms, language=language, **kw)


def model_problem(kind: str, model: str | os.PathLike | None) -> str | None:
    """Why ``model`` cannot serve backend ``kind`` (missing or nonexistent path), or None.

    Cheap (no import, no file read): the CLI calls it to report a usage error before
    anything loads; :func:`load_backend` raises it as a :class:`BackendError`.
    """
    if kind == "remote":
        from captioner.asr.remote import url_problem

        return url_problem(str(model) if model else None)
    if kind not in _MODEL_HINT:
        return None
    if not model:
        return f"the {kind} backend needs --model (a {_MODEL_HINT[kind]})"
    if not os.path.exists(model):
        return f"model not found: {model} (expected a {_MODEL_HINT[kind]})"
    return None


_MODEL_HINT = {
    "audio8": "checkpoint directory with config.json and model.safetensors",
    "tflite": ".tflite file exported with `tensorflow_asr tflite`",
}

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "ChunkGeometry",
    "GeometryError",
    "StepResult",
    "StepRow",
    "load_backend",
    "model_problem",
]
