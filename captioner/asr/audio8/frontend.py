"""Real-time windowed front end of Audio8 ASR Infinite: which samples each clock step sees.

Stream coordinates include the left pad: the model's stream is ``left_pad_tokens *
samples_per_token`` zeros, then the user's audio, then silence (reference
``iter_realtime_audio_windows``). Window ``k`` of a session:

* ``k == 0`` (the prompt prefill): samples ``[0, prefill * spt + look_ahead)``, covering
  ``prefill = left_pad + delay + 1`` clock steps;
* ``k >= 1``: one clock step ``[(prefill + k - 1) * spt, (prefill + k) * spt)`` with 52.5 ms
  look-back and 2.5 ms look-ahead: ``[(prefill + k - 1) * spt - 840, (prefill + k) * spt + 40)``.

Each window goes through transformers' ``VoxtralRealtimeFeatureExtractor`` (centred STFT,
n_fft 400, hop 160, 128 slaney mel bins, log10 with the global floor) and the causal convs;
the last ``num_tokens * frame_len`` conv frames are the step's new tower frames.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from captioner.asr.audio8.config import OperatingPoint


def window_bounds(point: OperatingPoint, k: int) -> tuple[int, int, int]:
    """Sample range of window ``k`` in stream coordinates (left pad included).

    Returns:
        ``(frame_start, frame_end, num_tokens)``: samples ``[frame_start, frame_end)`` and the
        number of clock steps (text positions) the window advances.
    """
    spt = point.samples_per_token
    if k == 0:
        end = point.prefill_tokens * spt
        return 0, end + point.look_ahead_samples, point.prefill_tokens
    start = (point.prefill_tokens + k - 1) * spt
    return max(start - point.look_back_samples, 0), start + spt + point.look_ahead_samples, 1


def log_mel(feature_extractor: Any, windows: Sequence[np.ndarray]) -> torch.Tensor:
    """Log-mel features of equal-length windows with the Voxtral Realtime feature extractor.

    Args:
        feature_extractor: ``VoxtralRealtimeFeatureExtractor``.
        windows: ``B`` arrays ``[L] float32`` of the same length ``L`` (samples, 16 kHz).

    Returns:
        ``[B, n_mels, L // hop] float32`` on the CPU (centred STFT, last frame dropped as the
        extractor does).

    Raises:
        ValueError: the windows differ in length.
    """
    lengths = {int(w.shape[0]) for w in windows}
    if len(lengths) != 1:
        raise ValueError(f"front-end windows must share one length, got {sorted(lengths)}")
    batch = np.stack([np.asarray(w, dtype=np.float32) for w in windows])
    out = feature_extractor(batch, sampling_rate=int(feature_extractor.sampling_rate), return_tensors="pt", center=True)
    return out["input_features"]
