"""Tiny random Audio8 ASR Infinite checkpoints in the real directory layout (tests, benchmarks).

Same file split and key names as the released checkpoint (DESIGN section 2): ``config.json``
(``model_type`` audio8_asr_infinite, ``weight_format_version`` 2), ``model.safetensors`` (bf16,
tied head omitted), ``semantic_vad_heads.safetensors``, a small Qwen2-style byte-level BPE
tokenizer trained with the ``tokenizers`` library (with the Qwen/streaming special tokens),
``tokenizer_config.json``, ``preprocessor_config.json`` and ``generation_config.json``.

Random decoders tend to repeat one token forever; the builder scales the token embeddings
down and the audio path up (DESIGN section 2) so the emitted tokens follow the audio.
"""

from __future__ import annotations

import json
import os
from typing import Any

#: Special tokens of the Audio8 tokenizer (Qwen2.5 chat tokens + streaming/language tokens).
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "[STREAMING_PAD]",
    "[STREAMING_WORD]",
    "[LANGUAGE_ZH]",
    "[LANGUAGE_EN]",
]

_CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "live captions for meetings lectures and calls",
    "one text token per audio clock step with a selectable delay",
    "hello world this is a streaming speech recognition test",
    "semantic voice activity detection tells a pause from the end of a turn",
    "你好世界 这是一个流式语音识别测试",
    "今天天气很好 我们开会吧",
]


def build_tokenizer(out_dir: str, vocab_size: int = 400) -> Any:
    """Train a small byte-level BPE (Qwen2 style) and save ``tokenizer.json``, ``vocab.json``,
    ``merges.txt`` and ``tokenizer_config.json`` into ``out_dir``.

    Returns:
        The ``tokenizers.Tokenizer``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4, trainer=trainer)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    tok.model.save(out_dir)  # vocab.json + merges.txt
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "tokenizer_class": "Qwen2Tokenizer",
                "bos_token": None,
                "eos_token": "<|im_end|>",
                "pad_token": "<|endoftext|>",
                "additional_special_tokens": SPECIAL_TOKENS[3:],
                "model_max_length": 131072,
            },
            fh,
            indent=2,
        )
    return tok


def tiny_config_dict(
    vocab_size: int,
    audio_hidden: int = 32,
    audio_layers: int = 2,
    audio_heads: int = 4,
    sliding_window: int = 24,
    max_positions: int = 160,
    text_hidden: int = 64,
    text_layers: int = 2,
    text_heads: int = 4,
    text_kv_heads: int = 2,
    vad: bool = True,
) -> dict[str, Any]:
    """``config.json`` contents of a tiny checkpoint (real field names, small sizes).

    The full-size values are ``tiny_config_dict(151936, 1280, 32, 32, 750, 1500, 2048, 36, 16, 2)``
    with intermediate sizes 5120 / 11008 (see :func:`full_config_dict`).
    """
    return {
        "architectures": ["Audio8ASRInfiniteForConditionalGeneration"],
        "model_type": "audio8_asr_infinite",
        "weight_format_version": 2,
        "audio_config": {
            "model_type": "voxtral_realtime_encoder",
            "hidden_size": audio_hidden,
            "intermediate_size": audio_hidden * 2,
            "num_hidden_layers": audio_layers,
            "num_attention_heads": audio_heads,
            "head_dim": audio_hidden // audio_heads,
            "num_mel_bins": 128,
            "sliding_window": sliding_window,
            "max_position_embeddings": max_positions,
            "rms_norm_eps": 1e-5,
            "activation_function": "gelu",
            "hidden_act": "silu",
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
        "text_config": {
            "model_type": "qwen2",
            "vocab_size": vocab_size,
            "hidden_size": text_hidden,
            "intermediate_size": text_hidden * 2,
            "num_hidden_layers": text_layers,
            "num_attention_heads": text_heads,
            "num_key_value_heads": text_kv_heads,
            "max_position_embeddings": 32768,
            "rms_norm_eps": 1e-6,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
            "tie_word_embeddings": True,
            "use_sliding_window": False,
            "hidden_act": "silu",
        },
        "audio_length_per_tok": 8,
        "audio_tower_frame_ms": 20,
        "supported_frame_lens": [4, 6, 8],
        "max_frame_len": 8,
        "projection_size": audio_hidden * 8,
        "projector_hidden_act": "gelu",
        "use_frame_len_embedding": True,
        "semantic_vad_horizons_seconds": [0.5, 1.0, 2.0, 3.0] if vad else None,
        "semantic_vad_num_classes": 8,
        "tie_word_embeddings": True,
        "default_num_delay_tokens": None,
    }


def full_config_dict(vocab_size: int = 151936) -> dict[str, Any]:
    """``config.json`` of the full-size architecture (model card "Checkpoint specification")."""
    cfg = tiny_config_dict(vocab_size, 1280, 32, 32, 750, 1500, 2048, 36, 16, 2)
    cfg["audio_config"]["intermediate_size"] = 5120
    cfg["text_config"]["intermediate_size"] = 11008
    return cfg


def write_preprocessor(out_dir: str) -> None:
    """``preprocessor_config.json`` of the Voxtral Realtime feature extractor (DESIGN section 2)."""
    with open(os.path.join(out_dir, "preprocessor_config.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "feature_extractor_type": "VoxtralRealtimeFeatureExtractor",
                "feature_size": 128,
                "sampling_rate": 16000,
                "hop_length": 160,
                "n_fft": 400,
                "win_length": 400,
                "padding_value": 0.0,
                "global_log_mel_max": 1.5,
                "return_attention_mask": False,
            },
            fh,
            indent=2,
        )


def build_tiny_checkpoint(out_dir: str | os.PathLike, seed: int = 0, vad: bool = True, **sizes: Any) -> str:
    """Write a tiny random checkpoint directory in the real layout.

    Args:
        out_dir: directory to create/fill.
        seed: torch seed for the weights.
        vad: include the semantic-VAD heads (config horizons + ``semantic_vad_heads.safetensors``).
        **sizes: overrides for :func:`tiny_config_dict` (e.g. ``sliding_window``).

    Returns:
        ``out_dir`` as a string.
    """
    import torch
    from safetensors.torch import save_file

    from captioner.asr.audio8.config import parse_config
    from captioner.asr.audio8.modeling import Audio8Model

    out = os.fspath(out_dir)
    os.makedirs(out, exist_ok=True)
    tok = build_tokenizer(out)
    vocab = -(-tok.get_vocab_size() // 64) * 64
    cfg = tiny_config_dict(vocab, vad=vad, **sizes)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(cfg, fh, indent=2)
    with open(os.path.join(out, "generation_config.json"), "w", encoding="utf-8") as fh:
        json.dump({"eos_token_id": tok.token_to_id("<|im_end|>"), "do_sample": False}, fh, indent=2)
    write_preprocessor(out)

    torch.manual_seed(seed)
    model = Audio8Model(parse_config(cfg))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layer_norm.weight"):
                continue
            torch.nn.init.normal_(p, std=0.2 if p.dim() > 1 else 0.02)
        model.language_model.model.embed_tokens.weight.mul_(0.1)
        model.multi_modal_projector.linear_2.weight.mul_(4.0)
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    state.pop("language_model.lm_head.weight", None)  # tied head: absent, as in the release
    vad_state = {k: state.pop(k) for k in list(state) if k.startswith("semantic_vad_heads.")}
    save_file(state, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    if vad_state:
        save_file(vad_state, os.path.join(out, "semantic_vad_heads.safetensors"), metadata={"format": "pt"})
    return out
