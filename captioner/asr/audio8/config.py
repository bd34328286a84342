"""Audio8 ASR Infinite checkpoint configuration and the user's clock/delay operating point.

``config.json`` is written by the reference ``save_pretrained`` (DESIGN section 2):
``model_type`` ``audio8_asr_infinite``, ``weight_format_version`` 2, a
``voxtral_realtime_encoder`` ``audio_config``, a ``qwen2`` ``text_config`` and the
streaming fields (``supported_frame_lens``, ``audio_tower_frame_ms``, ...). Anything
else is refused with a message naming the field, so a wrong or converted directory
never loads half-way.

No torch import here beyond the transformers config classes, so validation is cheap.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

from captioner.asr.base import BackendError
from captioner.asr.geometry import AUDIO8_OPERATING_POINTS, ChunkGeometry, GeometryError

#: ``model_type`` of an Audio8 ASR Infinite ``config.json`` (reference configuration class).
MODEL_TYPE = "audio8_asr_infinite"
#: The only weight layout this loader understands (reference ``AUDIO8_ASR_INFINITE_WEIGHT_FORMAT_VERSION``).
WEIGHT_FORMAT_VERSION = 2
#: Language code -> prompt token (reference tokenizer contract; model card: Chinese and English).
LANGUAGE_TOKENS = {"en": "[LANGUAGE_EN]", "zh": "[LANGUAGE_ZH]"}
#: Streaming special tokens (DESIGN section 2).
STREAMING_PAD_TOKEN = "[STREAMING_PAD]"
STREAMING_WORD_TOKEN = "[STREAMING_WORD]"
#: Silence clock steps the reference appends after the audio (``right_pad_text_tokens``).
RIGHT_PAD_TEXT_TOKENS = 10
#: Real-time windowing of the front end (reference ``streaming_look_back_ms`` / ``streaming_look_ahead_ms``).
LOOK_BACK_MS = 52.5
LOOK_AHEAD_MS = 2.5
#: Rolling window defaults (model card: "rolling KV window is 30 s"; reference scheduler:
#: trims every 3000 ms, keeps a 16-token stable prefix = BOS + language + 14 pads).
ROLLING_WINDOW_S = 30.0
ROLLING_TRIM_INTERVAL_MS = 3000
STABLE_PREFIX_TOKENS = 16


class CheckpointError(BackendError):
    """The checkpoint directory is incomplete or not in the Audio8 ASR Infinite format.

    The message names the file, key or field and says how to fix it.
    """


@dataclass(frozen=True)
class Audio8Config:
    """Parsed, validated ``config.json`` of an Audio8 ASR Infinite checkpoint.

    Attributes:
        audio: ``VoxtralRealtimeEncoderConfig`` of the causal audio tower.
        text: ``Qwen2Config`` of the decoder (its layers get the delay conditioning).
        supported_frame_lens: 20 ms tower frames per text token the projector knows, e.g. (4, 6, 8).
        max_frame_len: projector group width in frames (``max(supported_frame_lens)``).
        audio_tower_frame_ms: ms per tower frame (20).
        projection_size: projector input width = ``audio.hidden_size * max_frame_len``.
        projector_hidden_act: activation between the projector's linears ("gelu").
        use_frame_len_embedding: whether ``frame_len_embedding`` is part of ``t_cond``.
        vad_horizons_s: semantic-VAD horizons in s, () when the checkpoint has no VAD heads.
        vad_num_classes: classes per VAD head (8; class 0 = end of turn).
        tie_word_embeddings: LM head shares the token embedding (its key may be absent).
    """

    audio: Any
    text: Any
    supported_frame_lens: tuple[int, ...]
    max_frame_len: int
    audio_tower_frame_ms: int
    projection_size: int
    projector_hidden_act: str
    use_frame_len_embedding: bool
    vad_horizons_s: tuple[float, ...]
    vad_num_classes: int
    tie_word_embeddings: bool
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)


def _need(cfg: Mapping[str, Any], key: str, where: str = "config.json") -> Any:
    if key not in cfg:
        raise CheckpointError(f"{where} has no '{key}'; this is not an Audio8 ASR Infinite checkpoint directory")
    return cfg[key]


def parse_config(cfg: Mapping[str, Any]) -> Audio8Config:
    """Validate a ``config.json`` mapping and build the transformers sub-configs.

    Args:
        cfg: the decoded JSON object.

    Returns:
        The parsed :class:`Audio8Config`.

    Raises:
        CheckpointError: wrong ``model_type``, unknown ``weight_format_version``, a missing
            or inconsistent field; the message names it.
    """
    from transformers import Qwen2Config
    from transformers.models.voxtral_realtime.configuration_voxtral_realtime import VoxtralRealtimeEncoderConfig

    model_type = cfg.get("model_type")
    if model_type != MODEL_TYPE:
        raise CheckpointError(
            f"config.json has model_type={model_type!r}, expected {MODEL_TYPE!r}: point --model at an "
            "Audio8 ASR Infinite checkpoint directory"
        )
    version = _need(cfg, "weight_format_version")
    if version != WEIGHT_FORMAT_VERSION:
        raise CheckpointError(
            f"config.json weight_format_version={version!r} is not supported (this app reads version "
            f"{WEIGHT_FORMAT_VERSION}); download the current checkpoint or convert it with the reference tools"
        )
    audio_raw = dict(_need(cfg, "audio_config"))
    text_raw = dict(_need(cfg, "text_config"))
    if audio_raw.get("model_type", "voxtral_realtime_encoder") != "voxtral_realtime_encoder":
        raise CheckpointError(
            f"config.json audio_config.model_type={audio_raw.get('model_type')!r}, expected 'voxtral_realtime_encoder'"
        )
    if text_raw.get("model_type") != "qwen2":
        raise CheckpointError(
            f"config.json text_config.model_type={text_raw.get('model_type')!r}; this app supports the Qwen2 "
            "decoder of Audio8 ASR Infinite only"
        )
    audio_raw.pop("model_type", None)
    text_raw.pop("model_type", None)
    try:
        audio = VoxtralRealtimeEncoderConfig(**audio_raw)
        text = Qwen2Config(**text_raw)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"config.json has an invalid audio_config/text_config: {exc}") from exc
    # Our modules call attention through transformers' SDPA integration with explicit masks.
    audio._attn_implementation = "sdpa"
    text._attn_implementation = "sdpa"
    if getattr(text, "use_sliding_window", False):
        raise CheckpointError("config.json text_config.use_sliding_window=true is not an Audio8 ASR Infinite decoder")

    frame_lens = tuple(int(v) for v in cfg.get("supported_frame_lens", (4, 6, 8)))
    if not frame_lens or len(set(frame_lens)) != len(frame_lens) or min(frame_lens) <= 0:
        raise CheckpointError(f"config.json supported_frame_lens={list(frame_lens)} must be unique positive integers")
    max_frame_len = max(frame_lens)
    if "max_frame_len" in cfg and int(cfg["max_frame_len"]) != max_frame_len:
        raise CheckpointError(
            f"config.json max_frame_len={cfg['max_frame_len']} disagrees with supported_frame_lens {list(frame_lens)}"
        )
    projection_size = int(audio.hidden_size) * max_frame_len
    if "projection_size" in cfg and int(cfg["projection_size"]) != projection_size:
        raise CheckpointError(
            f"config.json projection_size={cfg['projection_size']} != audio hidden_size {audio.hidden_size} x "
            f"max_frame_len {max_frame_len} = {projection_size}"
        )
    frame_ms = int(cfg.get("audio_tower_frame_ms", 20))
    if frame_ms <= 0:
        raise CheckpointError(f"config.json audio_tower_frame_ms={frame_ms} must be positive")
    horizons = cfg.get("semantic_vad_horizons_seconds")
    vad_horizons = tuple(float(h) for h in horizons) if horizons else ()
    if any(h <= 0 for h in vad_horizons):
        raise CheckpointError(f"config.json semantic_vad_horizons_seconds={horizons} must be positive")
    vad_classes = int(cfg.get("semantic_vad_num_classes", 8))
    if vad_horizons and vad_classes < 2:
        raise CheckpointError(f"config.json semantic_vad_num_classes={vad_classes} must be at least 2")
    tie = bool(cfg.get("tie_word_embeddings", getattr(text, "tie_word_embeddings", False)))
    return Audio8Config(
        audio=audio,
        text=text,
        supported_frame_lens=frame_lens,
        max_frame_len=max_frame_len,
        audio_tower_frame_ms=frame_ms,
        projection_size=projection_size,
        projector_hidden_act=str(cfg.get("projector_hidden_act", "gelu")),
        # Reference: the embedding only exists when more than one frame length is supported.
        use_frame_len_embedding=bool(cfg.get("use_frame_len_embedding", False)) and len(frame_lens) > 1,
        vad_horizons_s=vad_horizons,
        vad_num_classes=vad_classes,
        tie_word_embeddings=tie,
        raw=dict(cfg),
    )


def load_config(model_dir: str | os.PathLike) -> Audio8Config:
    """Read and validate ``model_dir/config.json``.

    Raises:
        CheckpointError: the directory or file is missing, not JSON, or not the Audio8 format.
    """
    path = os.path.join(os.fspath(model_dir), "config.json")
    if not os.path.isdir(os.fspath(model_dir)):
        raise CheckpointError(f"model directory not found: {os.fspath(model_dir)}")
    if not os.path.isfile(path):
        raise CheckpointError(
            f"{path} is missing: download the whole Audio8 ASR Infinite checkpoint directory "
            "(config.json, model.safetensors, semantic_vad_heads.safetensors, tokenizer and preprocessor files)"
        )
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read {path}: {exc}") from exc
    if not isinstance(cfg, dict):
        raise CheckpointError(f"{path} must hold a JSON object")
    return parse_config(cfg)


@dataclass(frozen=True)
class OperatingPoint:
    """The user's clock and delay mapped onto the model's streaming geometry.

    Attributes:
        clock_ms: audio clock (ms per text token): 80, 120 or 160.
        delay_ms: transcription delay in ms, a whole multiple of the clock.
        frame_len: 20 ms tower frames per token (clock / ``audio_tower_frame_ms``).
        frame_len_index: index of ``frame_len`` in ``supported_frame_lens`` (frame-length embedding row).
        left_pad_tokens: ``streaming_n_left_pad_tokens`` of the clock (model card table).
        num_delay_tokens: delay / clock.
        samples_per_token: 16 kHz samples per clock step.
        post_trained: whether the model card lists this clock/delay pair as post-trained.
        sample_rate: Hz (16000).
    """

    clock_ms: int
    delay_ms: int
    frame_len: int
    frame_len_index: int
    left_pad_tokens: int
    num_delay_tokens: int
    samples_per_token: int
    post_trained: bool
    sample_rate: int = 16000

    @property
    def prefill_tokens(self) -> int:
        """Prompt length: BOS + language + pads = left pad + delay tokens + 1 (reference prompt)."""
        return self.left_pad_tokens + self.num_delay_tokens + 1

    @property
    def geometry(self) -> ChunkGeometry:
        """One chunk == one clock step, no overlap."""
        return ChunkGeometry(self.sample_rate, self.samples_per_token, self.samples_per_token, self.clock_ms, self.delay_ms)

    @property
    def look_back_samples(self) -> int:
        """Front-end look-back before the new clock step (52.5 ms = 840 samples)."""
        return int(round(self.sample_rate * LOOK_BACK_MS / 1000.0))

    @property
    def look_ahead_samples(self) -> int:
        """Front-end look-ahead after the clock step (2.5 ms = 40 samples)."""
        return int(round(self.sample_rate * LOOK_AHEAD_MS / 1000.0))

    def default_window_tokens(self) -> int:
        """Rolling decoder window: 30 s of tokens at this clock (375 at 80 ms)."""
        return int(ROLLING_WINDOW_S * 1000) // self.clock_ms

    def default_trim_interval_tokens(self) -> int:
        """Tokens trimmed past the window bound at once (3000 ms worth, 38 at 80 ms)."""
        return max(1, math.ceil(ROLLING_TRIM_INTERVAL_MS / self.clock_ms))


def operating_point(config: Audio8Config | None, clock_ms: int, delay_ms: int, sample_rate: int = 16000) -> OperatingPoint:
    """Validate the user's clock/delay and map them to the model's streaming parameters.

    Args:
        config: the checkpoint configuration (``None`` checks only the model-card table).
        clock_ms: 80, 120 or 160 (model card, "Optimized operation points").
        delay_ms: a positive whole multiple of ``clock_ms`` (model card); pairs outside the
            post-trained table are accepted with a ``PostTrainedWarning``.
        sample_rate: Hz of the model input (16000).

    Raises:
        GeometryError: unknown clock or invalid delay (message lists the allowed values).
        CheckpointError: the checkpoint does not support the clock's frame length.
    """
    geometry = ChunkGeometry.from_clock(clock_ms, delay_ms, sample_rate)  # validates + warns
    clock_ms, delay_ms = int(clock_ms), int(delay_ms)
    frame_len, left_pad, trained = AUDIO8_OPERATING_POINTS[clock_ms]
    frame_ms = config.audio_tower_frame_ms if config is not None else 20
    if clock_ms % frame_ms:
        raise GeometryError(f"clock {clock_ms} ms is not a whole number of {frame_ms} ms tower frames")
    frame_len = clock_ms // frame_ms
    supported = config.supported_frame_lens if config is not None else (4, 6, 8)
    if frame_len not in supported:
        raise CheckpointError(
            f"the checkpoint supports frame lengths {list(supported)} (clocks "
            f"{', '.join(str(f * frame_ms) for f in supported)} ms), not {frame_len} for the {clock_ms} ms clock"
        )
    return OperatingPoint(
        clock_ms=clock_ms,
        delay_ms=delay_ms,
        frame_len=frame_len,
        frame_len_index=supported.index(frame_len),
        left_pad_tokens=left_pad,
        num_delay_tokens=delay_ms // clock_ms,
        samples_per_token=geometry.chunk_size,
        post_trained=delay_ms in trained,
        sample_rate=sample_rate,
    )
