"""Audio8 checkpoint loading: round trip, every bad-checkpoint case, clock/delay validation."""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from safetensors.torch import load_file, save_file  # noqa: E402

from audio8_helpers import one_torch_thread, tiny_dir  # noqa: E402,F401
from captioner.asr.audio8 import load_audio8_backend  # noqa: E402
from captioner.asr.audio8 import backend as backend_mod  # noqa: E402
from captioner.asr.audio8.checkpoint import load_checkpoint  # noqa: E402
from captioner.asr.audio8.config import CheckpointError, load_config, operating_point  # noqa: E402
from captioner.asr.audio8.tiny import build_tiny_checkpoint  # noqa: E402
from captioner.asr.base import BackendError  # noqa: E402
from captioner.asr.geometry import GeometryError, PostTrainedWarning  # noqa: E402

CPU = torch.device("cpu")


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def broken(tiny_dir, tmp_path):
    """A fresh copy of the tiny checkpoint to damage."""
    dst = tmp_path / "ckpt"
    shutil.copytree(tiny_dir, dst)
    return str(dst)


def test_layout_matches_the_release(tiny_dir):
    names = set(os.listdir(tiny_dir))
    assert {"config.json", "model.safetensors", "semantic_vad_heads.safetensors", "tokenizer.json",
            "tokenizer_config.json", "vocab.json", "merges.txt", "preprocessor_config.json"} <= names
    main = load_file(os.path.join(tiny_dir, "model.safetensors"))
    vad = load_file(os.path.join(tiny_dir, "semantic_vad_heads.safetensors"))
    assert "language_model.model.layers.1.ada_rms_norm.linear2.weight" in main
    assert "multi_modal_projector.linear_1.weight" in main and "frame_len_embedding.weight" in main
    assert "audio_tower.embedder.conv1.weight" in main
    assert "language_model.lm_head.weight" not in main  # tied head omitted
    assert sorted(vad) == sorted(f"semantic_vad_heads.{i}.{p}" for i in range(4) for p in ("weight", "bias"))
    assert vad["semantic_vad_heads.0.weight"].shape == (8, 64)
    assert all(t.dtype == torch.bfloat16 for t in main.values())


def test_loading_round_trips_every_tensor(tiny_dir):
    ck = load_checkpoint(tiny_dir, CPU, torch.float32)
    state = ck.model.state_dict()
    files = load_file(os.path.join(tiny_dir, "model.safetensors")) | load_file(
        os.path.join(tiny_dir, "semantic_vad_heads.safetensors"))
    for key, value in files.items():
        assert torch.equal(state[key], value.float()), key
    lm = ck.model.language_model
    assert lm.lm_head.weight.data_ptr() == lm.model.embed_tokens.weight.data_ptr()  # tied
    assert ck.model.semantic_vad_heads is not None and len(ck.model.semantic_vad_heads) == 4
    # non-persistent buffers were rebuilt on a real device (the model was built on meta)
    assert ck.model.time_embedding.inv_freq.device.type == "cpu"
    assert torch.isfinite(ck.model.audio_tower.rotary_emb.inv_freq).all()
    sp = ck.special
    tok = ck.tokenizer
    assert sp.bos == tok.token_to_id("<|im_start|>") and sp.eos == tok.token_to_id("<|im_end|>")
    assert sp.languages == {"en": tok.token_to_id("[LANGUAGE_EN]"), "zh": tok.token_to_id("[LANGUAGE_ZH]")}
    assert sp.streaming_pad == tok.token_to_id("[STREAMING_PAD]")


def _rewrite(path, fn):
    tensors = load_file(path)
    fn(tensors)
    save_file(tensors, path)


def _edit_config(path, fn):
    p = os.path.join(path, "config.json")
    with open(p, encoding="utf-8") as fh:
        cfg = json.load(fh)
    fn(cfg)
    with open(p, "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)


def test_missing_key_is_named(broken):
    key = "language_model.model.layers.0.ada_rms_norm.linear1.weight"
    _rewrite(os.path.join(broken, "model.safetensors"), lambda t: t.pop(key))
    with pytest.raises(CheckpointError, match=f"missing key '{key}'"):
        load_checkpoint(broken, CPU, torch.float32)


def test_unexpected_key_is_named(broken):
    _rewrite(os.path.join(broken, "model.safetensors"),
             lambda t: t.__setitem__("language_model.model.delay_embedding.weight", torch.zeros(2, 2)))
    with pytest.raises(CheckpointError, match="unexpected key 'language_model.model.delay_embedding.weight'"):
        load_checkpoint(broken, CPU, torch.float32)


def test_wrong_shape_is_named(broken):
    key = "multi_modal_projector.linear_1.weight"
    _rewrite(os.path.join(broken, "model.safetensors"), lambda t: t.__setitem__(key, torch.zeros(64, 128)))
    with pytest.raises(CheckpointError, match=rf"'{key}' has shape \[64, 128\]"):
        load_checkpoint(broken, CPU, torch.float32)


def test_missing_vad_file_is_an_error(broken):
    os.remove(os.path.join(broken, "semantic_vad_heads.safetensors"))
    with pytest.raises(CheckpointError, match="semantic_vad_heads.safetensors is missing"):
        load_checkpoint(broken, CPU, torch.float32)


def test_vad_key_in_wrong_place_is_named(broken):
    _rewrite(os.path.join(broken, "semantic_vad_heads.safetensors"),
             lambda t: t.pop("semantic_vad_heads.3.bias"))
    with pytest.raises(CheckpointError, match="missing key 'semantic_vad_heads.3.bias'"):
        load_checkpoint(broken, CPU, torch.float32)


def test_unknown_version_and_model_type(broken):
    _edit_config(broken, lambda c: c.__setitem__("weight_format_version", 1))
    with pytest.raises(CheckpointError, match="weight_format_version=1 is not supported"):
        load_config(broken)
    _edit_config(broken, lambda c: c.__setitem__("model_type", "voxtral_realtime"))
    with pytest.raises(CheckpointError, match="model_type='voxtral_realtime'"):
        load_config(broken)
    _edit_config(broken, lambda c: c.pop("model_type"))
    with pytest.raises(CheckpointError, match="model_type=None"):
        load_config(broken)


def test_config_without_version_is_refused(broken):
    _edit_config(broken, lambda c: c.pop("weight_format_version"))
    with pytest.raises(CheckpointError, match="no 'weight_format_version'"):
        load_config(broken)


def test_pickle_weights_are_never_read(broken):
    os.rename(os.path.join(broken, "model.safetensors"), os.path.join(broken, "pytorch_model.bin"))
    with pytest.raises(CheckpointError, match="model.safetensors is missing"):
        load_checkpoint(broken, CPU, torch.float32)


def test_corrupt_safetensors(broken):
    with open(os.path.join(broken, "model.safetensors"), "wb") as fh:
        fh.write(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="not a readable safetensors file"):
        load_checkpoint(broken, CPU, torch.float32)


def test_tokenizer_without_streaming_tokens(broken):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"a": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<|endoftext|>": 3}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel()
    tok.save(os.path.join(broken, "tokenizer.json"))
    with pytest.raises(CheckpointError, match=r"no '\[STREAMING_PAD\]' token"):
        load_checkpoint(broken, CPU, torch.float32)


def test_missing_directory_and_files(tmp_path, broken):
    with pytest.raises(CheckpointError, match="model directory not found"):
        load_config(tmp_path / "nope")
    os.remove(os.path.join(broken, "preprocessor_config.json"))
    with pytest.raises(CheckpointError, match="preprocessor_config.json is missing"):
        load_checkpoint(broken, CPU, torch.float32)


def test_clock_delay_validation(tiny_dir):
    cfg = load_config(tiny_dir)
    p = operating_point(cfg, 80, 480)
    assert (p.frame_len, p.left_pad_tokens, p.num_delay_tokens, p.samples_per_token, p.prefill_tokens) == (
        4, 18, 6, 1280, 25)
    assert p.post_trained
    p = operating_point(cfg, 120, 240)
    assert (p.frame_len, p.frame_len_index, p.left_pad_tokens, p.num_delay_tokens, p.samples_per_token) == (
        6, 1, 12, 2, 1920)
    p = operating_point(cfg, 160, 480)
    assert (p.frame_len, p.left_pad_tokens, p.num_delay_tokens, p.samples_per_token) == (8, 9, 3, 2560)
    with pytest.warns(PostTrainedWarning):
        p = operating_point(cfg, 80, 400)
    assert not p.post_trained and p.num_delay_tokens == 5
    with pytest.raises(GeometryError, match="multiple of 80 ms"):
        operating_point(cfg, 80, 500)
    with pytest.raises(GeometryError, match="choose one of: 80, 120, 160"):
        operating_point(cfg, 100, 500)
    cfg2 = load_config(tiny_dir)
    object.__setattr__(cfg2, "supported_frame_lens", (4,))
    with pytest.raises(CheckpointError, match="frame lengths \\[4\\]"):
        operating_point(cfg2, 160, 480)


def test_backend_settings_are_validated(tiny_dir):
    with pytest.raises(BackendError, match="multiple of"):
        load_audio8_backend(tiny_dir, clock_ms=80, delay_ms=500, check_speed=False)
    with pytest.raises(BackendError, match="choose en or zh"):
        load_audio8_backend(tiny_dir, language="fr", check_speed=False)
    with pytest.raises(BackendError, match="horizons: 0.5, 1, 2, 3 s"):
        load_audio8_backend(tiny_dir, vad_horizon_s=1.5, check_speed=False)
    with pytest.raises(BackendError, match="unknown dtype"):
        load_audio8_backend(tiny_dir, dtype="int8", check_speed=False)
    b = load_audio8_backend(tiny_dir, clock_ms=160, delay_ms=320, language="zh", dtype="bf16", check_speed=False)
    assert b.geometry.chunk_size == b.geometry.chunk_step == 2560 and b.flush_chunks == 10
    assert b.checkpoint.model.language_model.model.embed_tokens.weight.dtype == torch.bfloat16
    assert b.decoder.prompt_ids[:2] == [b.checkpoint.special.bos, b.checkpoint.special.languages["zh"]]
    assert len(b.decoder.prompt_ids) == 9 + 2 + 1


def test_missing_torch_says_how_to_install(monkeypatch, tiny_dir):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(BackendError, match=r"pip install 'captioner\[audio8\]'"):
        load_audio8_backend(tiny_dir)


def test_real_size_model_on_cpu_is_refused(monkeypatch, tiny_dir):
    monkeypatch.setattr(backend_mod, "CPU_PARAMETER_LIMIT", 1000)
    with pytest.raises(BackendError, match="far too slow on CPU: use the remote backend or the default model"):
        load_audio8_backend(tiny_dir, device="cpu")


def test_slow_device_warns(monkeypatch, tiny_dir):
    monkeypatch.setattr(backend_mod.Audio8Backend, "measure_step_ms", lambda self, steps=8: 250.0)
    with pytest.warns(backend_mod.SlowDeviceWarning, match="250 ms per 80 ms step"):
        b = load_audio8_backend(tiny_dir)
    assert b.speed_notice is not None and b.speed_notice.code == "backend_slow"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        monkeypatch.setattr(backend_mod.Audio8Backend, "measure_step_ms", lambda self, steps=8: 3.0)
        assert load_audio8_backend(tiny_dir).speed_notice is None


def test_device_and_dtype_choice(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    dev = backend_mod.pick_device(None)
    assert dev.type == "cpu" and backend_mod.pick_dtype(dev) == torch.float32  # reference: fp32 on CPU
    assert backend_mod.pick_dtype(dev, "bf16") == torch.bfloat16
    assert backend_mod.pick_dtype(torch.device("mps")) == torch.float16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert backend_mod.pick_dtype(torch.device("cuda")) == torch.bfloat16
    with pytest.raises(BackendError, match="CUDA is not available"):
        backend_mod.pick_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert backend_mod.pick_device(None).type == "cuda"
