"""Voice embeddings: Resemblyzer's GE2E encoder on onnxruntime (issue 38; graph from
:mod:`captioner.speakers.prepare`).

:class:`VoiceEncoder` turns stretches of 16 kHz speech into 256-dim L2-normalised
embeddings whose cosine similarity is high for one voice and lower for two. Front end
as Resemblyzer's ``audio.py``: volume raised to -30 dBFS (never lowered:
``normalize_volume(..., increase_only=True)``), then the power spectrogram of 25 ms Hann
windows every 10 ms (:func:`power_frames`, numpy's FFT; the mel filterbank is inside the
graph). Resemblyzer embeds an utterance as the mean of 1.6 s "partials" (160 frames);
:meth:`VoiceEncoder.embed` does the same for stretches longer than that and embeds a
shorter one whole (the LSTM's last state over its own length).

Measured on the 2-core development machine (onnxruntime 1.32, one thread): about 3-4 ms
per second of speech, ~0.25 s to load from the cache, ~10 MB resident.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from captioner.speakers.graph_cache import open_session
from captioner.speakers.prepare import HOP, N_FFT, SpeakerModelError, prepared_model

#: 1.6 s partial windows (Resemblyzer's ``partials_n_frames``), hop of half a window.
PARTIAL_FRAMES = 160
PARTIAL_HOP = 80
#: Resemblyzer's ``audio_norm_target_dBFS``.
TARGET_DBFS = -30.0
#: Periodic Hann window (librosa's ``get_window("hann", 400, fftbins=True)``).
_WINDOW = np.hanning(N_FFT + 1)[:-1].astype(np.float32)


def normalize_volume(wav: np.ndarray) -> np.ndarray:
    """``wav`` raised to :data:`TARGET_DBFS` RMS when it is quieter (Resemblyzer's rule; never
    lowered). ``[n] float32`` in and out; silence stays silence."""
    rms2 = float(np.mean(np.square(wav, dtype=np.float64))) if wav.size else 0.0
    if rms2 <= 1e-12:
        return wav
    gain_db = TARGET_DBFS - 10.0 * np.log10(rms2)
    return wav if gain_db <= 0 else (wav * np.float32(10.0 ** (gain_db / 20.0))).astype(np.float32)


def power_frames(wav: np.ndarray) -> np.ndarray:
    """Power spectrogram ``[1 + n // 160, 201] float32`` of ``wav`` (``[n] float32``, 16 kHz):
    |rfft|^2 of Hann-windowed 400-sample frames every 160 samples, centred (zero-padded by
    200 samples at both ends), as ``librosa.stft(center=True)`` frames them."""
    padded = np.pad(np.asarray(wav, np.float32), (N_FFT // 2, N_FFT // 2))
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    spec = np.fft.rfft(frames * _WINDOW, axis=1)
    return (spec.real ** 2 + spec.imag ** 2).astype(np.float32)


class VoiceEncoder:
    """The GE2E speaker encoder on onnxruntime.

    Args:
        model: a prepared graph (path or bytes); default :func:`prepared_model`.

    Raises:
        SpeakerModelError: the model cannot be found, built or loaded.
    """

    dim = 256
    #: which thresholds fit its similarities (:data:`captioner.speakers.clustering.THRESHOLDS`)
    kind = "ge2e"

    def __init__(self, model: str | bytes | None = None) -> None:
        self._session = open_session(model if model is not None else prepared_model(), "the speaker model")

    def embed_frames(self, windows: Sequence[np.ndarray]) -> np.ndarray:
        """Embeddings of power-spectrogram windows (each ``[t_i, 201]``, ``t_i >= 1``), one batch.

        Returns:
            ``[len(windows), 256] float32``, L2-normalised.
        """
        if not windows:
            return np.zeros((0, self.dim), np.float32)
        lengths = np.array([len(w) for w in windows], np.int32)
        batch = np.zeros((len(windows), int(lengths.max()), windows[0].shape[1]), np.float32)
        for i, w in enumerate(windows):
            batch[i, : len(w)] = w
        return self._session.run(["embedding"], {"power": batch, "lengths": lengths})[0]

    def embed(self, stretches: Sequence[np.ndarray]) -> np.ndarray:
        """One embedding per stretch of speech (``[n_i] float32``, 16 kHz), in one model call.

        A stretch longer than 1.6 s is the normalised mean of its 1.6 s partials (hop 0.8 s;
        a last partial shorter than 0.75 of a window is dropped, as Resemblyzer does);
        a shorter one is embedded whole.

        Returns:
            ``[len(stretches), 256] float32``, L2-normalised; a row of zeros for an empty stretch.
        """
        windows: list[np.ndarray] = []
        owner: list[int] = []
        for i, wav in enumerate(stretches):
            if len(wav) < HOP:
                continue
            frames = power_frames(normalize_volume(np.asarray(wav, np.float32)))
            n = len(frames)
            if n <= PARTIAL_FRAMES:
                starts = [0]
            else:
                starts = list(range(0, n - PARTIAL_FRAMES + 1, PARTIAL_HOP))
                if n - (starts[-1] + PARTIAL_HOP) >= 0.75 * PARTIAL_FRAMES:
                    starts.append(n - PARTIAL_FRAMES)
            for s in starts:
                windows.append(frames[s: s + PARTIAL_FRAMES])
                owner.append(i)
        out = np.zeros((len(stretches), self.dim), np.float32)
        if windows:
            emb = self.embed_frames(windows)
            np.add.at(out, np.array(owner), emb)
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = np.where(norms > 0, out / np.maximum(norms, 1e-12), 0.0).astype(np.float32)
        return out


__all__ = ["SpeakerModelError", "VoiceEncoder", "normalize_volume", "power_frames"]
