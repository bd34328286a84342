"""Loading an Audio8 ASR Infinite checkpoint directory: weights, tokenizer, feature extractor.

Files (DESIGN section 2): ``config.json``, ``model.safetensors`` (bf16), ``semantic_vad_heads.safetensors``
(the reference loader forgets this file; we do not), ``tokenizer.json`` (+ ``tokenizer_config.json``),
``preprocessor_config.json``. Weights are read with ``safetensors`` only -- never pickle, never
remote code -- and checked key by key against the composed model: a missing or unexpected key
or a wrong shape is a :class:`CheckpointError` naming the key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import torch

from captioner.asr.audio8.config import (
    LANGUAGE_TOKENS,
    STREAMING_PAD_TOKEN,
    STREAMING_WORD_TOKEN,
    Audio8Config,
    CheckpointError,
    load_config,
)
from captioner.asr.audio8.modeling import Audio8Model, expected_keys

MODEL_FILE = "model.safetensors"
VAD_FILE = "semantic_vad_heads.safetensors"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
PREPROCESSOR_FILE = "preprocessor_config.json"
#: Qwen2.5 defaults when ``tokenizer_config.json`` leaves a role unset (reference resolver).
DEFAULT_BOS = "<|im_start|>"
DEFAULT_EOS = "<|im_end|>"
DEFAULT_PAD = "<|endoftext|>"


@dataclass(frozen=True)
class SpecialIds:
    """Token ids the streaming decoder needs, all resolved from the tokenizer.

    Attributes:
        bos, eos, pad: ``<|im_start|>``, ``<|im_end|>``, ``<|endoftext|>`` (or what
            ``tokenizer_config.json`` names).
        streaming_pad, streaming_word: ``[STREAMING_PAD]``, ``[STREAMING_WORD]``.
        languages: language code -> ``[LANGUAGE_EN]`` / ``[LANGUAGE_ZH]`` id.
    """

    bos: int
    eos: int
    pad: int
    streaming_pad: int
    streaming_word: int
    languages: dict[str, int]

    @property
    def hidden(self) -> frozenset[int]:
        """Ids never shown as text (reference ``decode_visible_text``): pad, word, bos, pad, eos."""
        return frozenset({self.streaming_pad, self.streaming_word, self.bos, self.pad, self.eos})


@dataclass
class LoadedCheckpoint:
    """Everything read from a checkpoint directory.

    Attributes:
        config: parsed ``config.json``.
        model: the network on ``device`` in ``dtype``, in eval mode.
        tokenizer: ``tokenizers.Tokenizer``.
        special: resolved special ids.
        feature_extractor: transformers ``VoxtralRealtimeFeatureExtractor``.
        device, dtype: where and how the model computes.
    """

    config: Audio8Config
    model: Audio8Model
    tokenizer: Any
    special: SpecialIds
    feature_extractor: Any
    device: torch.device
    dtype: torch.dtype


def _file(model_dir: str, name: str) -> str:
    path = os.path.join(model_dir, name)
    if not os.path.isfile(path):
        raise CheckpointError(
            f"{path} is missing: the Audio8 checkpoint directory needs config.json, {MODEL_FILE}, {VAD_FILE}, "
            f"{TOKENIZER_FILE}, {TOKENIZER_CONFIG_FILE} and {PREPROCESSOR_FILE}; download it again completely"
        )
    return path


def _read_header(path: str) -> dict[str, tuple[tuple[int, ...], str]]:
    """key -> (shape, dtype string) of a safetensors file, without reading the tensors."""
    from safetensors import safe_open

    out: dict[str, tuple[tuple[int, ...], str]] = {}
    try:
        with safe_open(path, framework="pt", device="cpu") as fh:
            for key in fh.keys():
                sl = fh.get_slice(key)
                out[key] = (tuple(int(d) for d in sl.get_shape()), str(sl.get_dtype()))
    except Exception as exc:  # safetensors raises its own error types
        raise CheckpointError(f"{path} is not a readable safetensors file ({exc}); download it again") from exc
    return out


def check_keys(
    file_name: str, found: dict[str, tuple[tuple[int, ...], str]], expected: dict[str, tuple[int, ...]],
    optional: frozenset[str] = frozenset(),
) -> None:
    """Compare a file's tensors with the model's.

    Args:
        file_name: file name for the message.
        found: key -> (shape, dtype) read from the file.
        expected: key -> shape the model needs from this file.
        optional: keys that may be absent (the tied LM head).

    Raises:
        CheckpointError: names the first missing key, unexpected key, wrong shape or
            non-float tensor (and how many more there are).
    """
    missing = sorted(k for k in expected if k not in found and k not in optional)
    unexpected = sorted(k for k in found if k not in expected and k not in optional)
    hint = "the checkpoint does not match the Audio8 ASR Infinite weight format version 2; download the original files"
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise CheckpointError(f"{file_name} is missing key '{missing[0]}'{more}: {hint}")
    if unexpected:
        more = f" (and {len(unexpected) - 1} more)" if len(unexpected) > 1 else ""
        raise CheckpointError(f"{file_name} has unexpected key '{unexpected[0]}'{more}: {hint}")
    for key, (shape, dtype) in found.items():
        want = expected.get(key)
        if want is not None and tuple(shape) != tuple(want):
            raise CheckpointError(
                f"{file_name} key '{key}' has shape {list(shape)}, the config needs {list(want)}: {hint}"
            )
        if dtype not in ("BF16", "F16", "F32", "F64"):
            raise CheckpointError(f"{file_name} key '{key}' has dtype {dtype}, expected a float tensor: {hint}")


def load_weights(model_dir: str, config: Audio8Config, device: torch.device, dtype: torch.dtype) -> Audio8Model:
    """Build the model on ``meta``, check both safetensors files key by key, then load them.

    Raises:
        CheckpointError: a file is missing or unreadable, or keys/shapes do not match.
    """
    from safetensors import safe_open

    with torch.device("meta"):
        model = Audio8Model(config)
    want = expected_keys(model)
    vad_want = {k: v for k, v in want.items() if k.startswith("semantic_vad_heads.")}
    main_want = {k: v for k, v in want.items() if k not in vad_want}
    head_key = "language_model.lm_head.weight"
    optional = frozenset({head_key}) if config.tie_word_embeddings else frozenset()

    main_path = _file(model_dir, MODEL_FILE)
    if config.tie_word_embeddings:  # a stored copy of the tied head is allowed, with the right shape
        main_want[head_key] = tuple(model.language_model.lm_head.weight.shape)
    check_keys(MODEL_FILE, _read_header(main_path), main_want, optional)
    vad_path = os.path.join(model_dir, VAD_FILE)
    if vad_want or os.path.isfile(vad_path):
        if vad_want:
            vad_path = _file(model_dir, VAD_FILE)
        check_keys(VAD_FILE, _read_header(vad_path), vad_want)

    state: dict[str, torch.Tensor] = {}
    files = [main_path] + ([vad_path] if vad_want else [])
    load_device = "cpu" if device.type == "mps" else str(device)
    for path in files:
        with safe_open(path, framework="pt", device=load_device) as fh:
            for key in fh.keys():
                state[key] = fh.get_tensor(key).to(device=device, dtype=dtype)
    tied_head = state.pop(head_key, None) if config.tie_word_embeddings else None
    if config.tie_word_embeddings:
        # assign=True breaks parameter sharing: load without the head, then re-tie.
        model.language_model.lm_head.weight = model.language_model.model.embed_tokens.weight
    result = model.load_state_dict(state, strict=False, assign=True)
    leftover = [k for k in result.missing_keys if k != head_key]
    if leftover or result.unexpected_keys:  # defensive: check_keys already guarantees this
        raise CheckpointError(f"weights did not load: missing {leftover[:3]}, unexpected {result.unexpected_keys[:3]}")
    if config.tie_word_embeddings:
        model.language_model.lm_head.weight = model.language_model.model.embed_tokens.weight
        del tied_head  # the stored copy of a tied head equals the embedding; the embedding wins
    model.rebuild_buffers()
    model.to(device)
    return model.eval()


def load_tokenizer(model_dir: str, vocab_size: int) -> tuple[Any, SpecialIds]:
    """Load ``tokenizer.json`` with the ``tokenizers`` library and resolve every special id.

    Args:
        model_dir: checkpoint directory.
        vocab_size: decoder vocabulary; every special id must be below it.

    Raises:
        CheckpointError: a file is missing or a required special token is unknown.
    """
    from tokenizers import Tokenizer

    path = _file(model_dir, TOKENIZER_FILE)
    try:
        tok = Tokenizer.from_file(path)
    except Exception as exc:
        raise CheckpointError(f"cannot read {path} ({exc}); download the tokenizer files again") from exc
    tcfg: dict[str, Any] = {}
    cfg_path = os.path.join(model_dir, TOKENIZER_CONFIG_FILE)
    if os.path.isfile(cfg_path):
        try:
            with open(cfg_path, encoding="utf-8") as fh:
                tcfg = json.load(fh)
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"cannot read {cfg_path}: {exc}") from exc

    def role(name: str, default: str) -> str:
        value = tcfg.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        return value or default

    def ident(token: str) -> int:
        tid = tok.token_to_id(token)
        if tid is None:
            raise CheckpointError(
                f"the tokenizer in {path} has no '{token}' token; this is not the Audio8 ASR Infinite tokenizer"
            )
        if tid >= vocab_size:
            raise CheckpointError(f"tokenizer id {tid} of '{token}' is outside the model vocabulary ({vocab_size})")
        return int(tid)

    special = SpecialIds(
        bos=ident(role("bos_token", DEFAULT_BOS)),
        eos=ident(role("eos_token", DEFAULT_EOS)),
        pad=ident(role("pad_token", DEFAULT_PAD)),
        streaming_pad=ident(STREAMING_PAD_TOKEN),
        streaming_word=ident(STREAMING_WORD_TOKEN),
        languages={code: ident(token) for code, token in LANGUAGE_TOKENS.items()},
    )
    return tok, special


def load_feature_extractor(model_dir: str, config: Audio8Config) -> Any:
    """Build transformers' ``VoxtralRealtimeFeatureExtractor`` from ``preprocessor_config.json``.

    Raises:
        CheckpointError: missing file, or mel bins / rate disagree with the audio tower.
    """
    from transformers.models.voxtral_realtime.feature_extraction_voxtral_realtime import (
        VoxtralRealtimeFeatureExtractor,
    )

    path = _file(model_dir, PREPROCESSOR_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
    kwargs = {
        k: cfg[k]
        for k in ("feature_size", "sampling_rate", "hop_length", "n_fft", "win_length", "padding_value", "global_log_mel_max")
        if k in cfg
    }
    fe = VoxtralRealtimeFeatureExtractor(**kwargs)
    if int(fe.feature_size) != int(config.audio.num_mel_bins):
        raise CheckpointError(
            f"{path} gives {fe.feature_size} mel bins but the audio tower takes {config.audio.num_mel_bins}"
        )
    if int(fe.sampling_rate) != 16000:
        raise CheckpointError(f"{path} has sampling_rate {fe.sampling_rate}; Audio8 ASR Infinite runs at 16000 Hz")
    return fe


def load_checkpoint(model_dir: str | os.PathLike, device: torch.device, dtype: torch.dtype) -> LoadedCheckpoint:
    """Load and check a whole checkpoint directory.

    Args:
        model_dir: the directory the user downloaded.
        device: where to run (see :func:`captioner.asr.audio8.backend.pick_device`).
        dtype: compute dtype (bf16/fp16/fp32); bf16 weights are converted on load.

    Raises:
        CheckpointError: anything missing or inconsistent, with the file/key named.
    """
    model_dir = os.fspath(model_dir)
    config = load_config(model_dir)
    tokenizer, special = load_tokenizer(model_dir, int(config.text.vocab_size))
    feature_extractor = load_feature_extractor(model_dir, config)
    model = load_weights(model_dir, config, device, dtype)
    return LoadedCheckpoint(config, model, tokenizer, special, feature_extractor, device, dtype)
