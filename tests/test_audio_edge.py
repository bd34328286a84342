"""Streaming downmix + resample at the edge: exact stream time, no drift, 5.1 centre survives."""

import numpy as np
import pytest

from captioner.audio.edge import EdgeConverter
from tests.audio_fakes import tone


def _run(conv: EdgeConverter, frames: np.ndarray, rng: np.random.Generator, max_block: int = 2000) -> np.ndarray:
    out, pos = [], 0
    while pos < len(frames):
        k = int(rng.integers(1, max_block))
        out.append(conv.process(frames[pos : pos + k]))
        pos += k
    out.append(conv.flush())
    return np.concatenate(out)


@pytest.mark.parametrize("rate", [44100, 48000, 22050, 8000, 96000])
def test_one_second_is_exactly_16000_samples(rate):
    rng = np.random.default_rng(rate)
    frames = np.repeat(tone(1.0, rate)[:, None], 2, axis=1)
    out = _run(EdgeConverter(rate, 2, 16000), frames, rng)
    assert len(out) == 16000
    assert out.dtype == np.float32


def test_block_split_does_not_change_output():
    x = tone(0.7, 44100, 300.0)[:, None]
    a = _run(EdgeConverter(44100, 1, 16000), x, np.random.default_rng(1), 50)
    b = _run(EdgeConverter(44100, 1, 16000), x, np.random.default_rng(2), 4000)
    np.testing.assert_allclose(a, b, atol=1e-5)
    # and it is the tone, not noise: 300 Hz keeps its amplitude through the resampler
    assert np.max(np.abs(a[2000:-2000])) == pytest.approx(0.5, abs=0.01)


def test_no_drift_over_ten_minutes_in_odd_blocks():
    rate = 44100
    conv = EdgeConverter(rate, 1, 16000)
    rng = np.random.default_rng(0)
    zeros = np.zeros(4096, np.float32)
    total = 0
    while total < 600 * rate:
        k = int(rng.integers(1, 4096))
        conv.process(zeros[:k])
        total += k
    # between flushes the output trails by the resampler delay only (< 50 ms) ...
    assert 0 <= conv.expected_samples - conv.samples_out < 0.05 * 16000
    conv.flush()
    # ... and after the flush it is exact: round(frames * 16000 / 44100)
    assert conv.samples_out == round(total * 16000 / rate)


def test_centre_channel_of_51_survives_downmix():
    rate = 48000
    x = np.zeros((rate, 6), np.float32)
    x[:, 2] = tone(1.0, rate, 250.0, 0.6)  # FL FR C LFE SL SR: speech in C only
    out = _run(EdgeConverter(rate, 6, 16000), x, np.random.default_rng(3))
    assert len(out) == 16000
    assert np.max(np.abs(out[1000:-1000])) == pytest.approx(0.6 / 6, rel=0.02)


def test_passthrough_at_model_rate_is_identity():
    x = tone(0.25, 16000)
    conv = EdgeConverter(16000, 1, 16000)
    np.testing.assert_array_equal(conv.process(x), x)
    assert conv.flush().size == 0


def test_bad_arguments():
    with pytest.raises(ValueError):
        EdgeConverter(0, 1, 16000)
    with pytest.raises(ValueError):
        EdgeConverter(48000, 0, 16000)
    conv = EdgeConverter(48000, 2, 16000)
    with pytest.raises(ValueError, match="2 channels"):
        conv.process(np.zeros((10, 3), np.float32))


def test_a_clipped_16_bit_file_loads_within_full_scale_and_a_loud_float_file_keeps_its_peak(tmp_path):
    """soxr rings above 1.0 around a clipped recording's flat tops: ``captioner transcribe``
    then warned that a 16-bit file (which cannot exceed full scale) "exceeds full scale (peak
    1.78)" (2026-12-06, a newcomer's check)."""
    import soundfile as sf
    import soxr

    from captioner.audio.fileio import load_audio

    t = np.arange(48000 * 2) / 48000
    loud = np.clip(30 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 3 * t), -1, 1).astype(np.float32)
    sf.write(tmp_path / "clipped.wav", np.stack([loud, loud], 1), 48000, subtype="PCM_16")
    assert np.max(np.abs(soxr.resample(loud, 48000, 16000, quality="VHQ"))) > 1.05  # the overshoot is real
    pcm = load_audio(tmp_path / "clipped.wav", 16000)
    assert len(pcm) == 32000 and np.max(np.abs(pcm)) <= 1.0 and np.max(np.abs(pcm)) > 0.99
    sf.write(tmp_path / "loud.wav", 3.0 * np.sin(2 * np.pi * 220 * t).astype(np.float32), 48000, subtype="FLOAT")
    flt = load_audio(tmp_path / "loud.wav", 16000)
    assert 2.9 < np.max(np.abs(flt)) <= 3.0  # a float file over full scale is still seen as such
