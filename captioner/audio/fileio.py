"""Reading audio files into model-ready mono float32 at the model's sample rate.

Decoding is soundfile's (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, MP3 where the
library supports it); resampling is soxr's (high quality, VHQ). Nothing here is
hand-written DSP beyond the channel average.
"""

from __future__ import annotations

import os

import numpy as np
import soundfile as sf
import soxr


class AudioFileError(RuntimeError):
    """An audio file is missing, unreadable or not audio. The message names the file and the fix."""


def downmix(frames: np.ndarray) -> np.ndarray:
    """Average every channel into mono.

    Args:
        frames: ``[n]`` or ``[n, channels]`` samples (any float/int dtype).

    Returns:
        ``[n] float32``. All channels count equally, centre and surround included,
        so dialogue in the centre channel of a 5.1 mix survives.
    """
    arr = np.asarray(frames)
    if arr.ndim == 1:
        return arr.astype(np.float32, copy=False)
    if arr.ndim != 2:
        raise ValueError(f"expected [frames, channels], got shape {arr.shape}")
    return arr.mean(axis=1, dtype=np.float64).astype(np.float32)


def resample(mono: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Resample a whole mono signal with soxr (VHQ).

    Args:
        mono: ``[n] float32``.
        rate_in, rate_out: sample rates in Hz.

    Returns:
        ``[round(n * rate_out / rate_in)] float32``.
    """
    if rate_in == rate_out:
        return np.asarray(mono, dtype=np.float32)
    return soxr.resample(np.asarray(mono, dtype=np.float32), rate_in, rate_out, quality="VHQ").astype(
        np.float32, copy=False
    )


def peak(samples: np.ndarray) -> float:
    """Largest ``|sample|`` of the finite samples of ``[n] float32`` (0.0 for none), without
    copying the signal (a 20-minute 48 kHz file is 230 MB of float32)."""
    finite = np.isfinite(samples)
    return max(float(np.fmax.reduce(samples, where=finite, initial=0.0)),
               -float(np.fmin.reduce(samples, where=finite, initial=0.0)))


def load_audio(path: str | os.PathLike, sample_rate: int = 16000) -> np.ndarray:
    """Read any file soundfile can decode as mono float32 at ``sample_rate``.

    Args:
        path: audio file (any rate, any channel count).
        sample_rate: target rate in Hz (the backend's ``sample_rate``).

    Returns:
        ``[n] float32``; empty for an empty file. Within [-1, 1] for an integer (PCM) file; a
        float file keeps its own peak (it may exceed full scale). A resampler's overshoot
        past the source's peak (a clipped recording rings above 1.0) is clipped to that peak,
        so a clipped 16-bit file is never reported as over full scale.

    Raises:
        AudioFileError: the file does not exist or cannot be decoded.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise AudioFileError(f"audio file not found: {path}")
    try:
        data, rate = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise AudioFileError(
            f"cannot read {path} as audio ({exc}); use WAV, FLAC or OGG, or convert it with ffmpeg/sox"
        ) from exc
    mono = downmix(data)
    out = resample(mono, rate, sample_rate)
    if out.size:
        limit = max(1.0, peak(mono))
        np.clip(out, -limit, limit, out=out)  # NaN stays NaN (counted and silenced later)
    return out
