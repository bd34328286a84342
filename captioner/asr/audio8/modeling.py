"""Audio8 ASR Infinite composed from transformers classes plus three small modules of ours.

Architecture (DESIGN section 2, model card "Checkpoint specification"):

* audio tower: transformers ``VoxtralRealtimeEncoder`` (causal convs + sliding-window
  RoPE attention, 20 ms frames);
* projector (ours): ``frame_len`` consecutive tower frames per text token, zero-padded to
  ``max_frame_len`` slots, ``linear_1`` -> act -> ``linear_2``, no biases;
* decoder: transformers ``Qwen2DecoderLayer`` whose MLP input is scaled by Voxtral's
  delay conditioning ``post_attention_layernorm(h) * (1 + ada_rms_norm(t_cond))``
  (``VoxtralRealtimeTextAdaRmsNorm``); ``t_cond`` = ``VoxtralRealtimeTimeEmbedding``
  of ``num_delay_tokens`` plus ``frame_len_embedding[frame_len index]`` (ours);
* semantic-VAD heads (ours): one ``Linear(hidden, classes)`` per horizon on the
  decoder's final-norm output.

Parameter names equal the checkpoint keys (``audio_tower.*``, ``multi_modal_projector.*``,
``frame_len_embedding.weight``, ``language_model.model.*``, ``language_model.lm_head.weight``,
``semantic_vad_heads.N.*``). The forward passes here are the building blocks of the
streaming step: they take explicit positions, masks and a cache object so one call can
serve several sessions with different histories.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers.activations import ACT2FN
from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer, Qwen2RMSNorm, Qwen2RotaryEmbedding
from transformers.models.voxtral_realtime.modeling_voxtral_realtime import (
    VoxtralRealtimeEncoder,
    VoxtralRealtimeTextAdaRmsNorm,
    VoxtralRealtimeTimeEmbedding,
)

from captioner.asr.audio8.config import Audio8Config


class DelayConditionedQwen2DecoderLayer(Qwen2DecoderLayer):
    """A Qwen2 decoder layer whose MLP input is modulated by the delay conditioning.

    ``h = h + attn(input_layernorm(h)); h = h + mlp(post_attention_layernorm(h) * (1 + ada_rms_norm(t_cond)))``
    (Voxtral Realtime text layer, applied to Qwen2 as in the Audio8 reference).
    """

    def __init__(self, config: Any, layer_idx: int) -> None:
        super().__init__(config, layer_idx)
        self.ada_rms_norm = VoxtralRealtimeTextAdaRmsNorm(config)

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        cache: Any | None = None,
        t_cond: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> torch.Tensor:
        """Args: ``hidden_states [B, T, H]``, bool ``attention_mask [B, 1, T, S]`` (True = attend)
        or None (causal), ``position_embeddings`` (cos, sin ``[B, T, head_dim]``), a cache with
        ``update(k, v, layer_idx)``, ``t_cond [1 or B, 1, H]``. Returns ``[B, T, H]``."""
        if t_cond is None:
            raise ValueError("the Audio8 decoder layer needs t_cond (delay conditioning)")
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(
            hidden_states=hidden_states,
            attention_mask=attention_mask,
            position_embeddings=position_embeddings,
            cache=cache,
        )
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = hidden_states * (1 + self.ada_rms_norm(t_cond).to(hidden_states.dtype))
        hidden_states = self.mlp(hidden_states)
        return residual + hidden_states


class Audio8TextModel(nn.Module):
    """Qwen2 backbone (``language_model.model``): embeddings, delay-conditioned layers, final norm."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(
            [DelayConditionedQwen2DecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        self.norm = Qwen2RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = Qwen2RotaryEmbedding(config=config)


class Audio8LanguageModel(nn.Module):
    """``language_model``: the backbone plus the LM head (tied to the embeddings when configured)."""

    def __init__(self, config: Any, tie_word_embeddings: bool) -> None:
        super().__init__()
        self.model = Audio8TextModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight


class FrameGroupProjector(nn.Module):
    """``multi_modal_projector``: groups of ``frame_len`` tower frames -> one text-token embedding.

    Each group is zero-padded to ``max_frame_len`` frame slots so every clock shares one
    projector: ``[B, T * frame_len, D] -> [B, T, max_frame_len * D] -> linear_1 -> act -> linear_2``.
    """

    def __init__(self, config: Audio8Config) -> None:
        super().__init__()
        self.audio_hidden = int(config.audio.hidden_size)
        self.max_frame_len = int(config.max_frame_len)
        hidden = int(config.text.hidden_size)
        self.linear_1 = nn.Linear(config.projection_size, hidden, bias=False)
        self.act = ACT2FN[config.projector_hidden_act]
        self.linear_2 = nn.Linear(hidden, hidden, bias=False)

    def forward(self, frames: torch.Tensor, frame_len: int) -> torch.Tensor:
        """Args: ``frames [B, T * frame_len, D]``. Returns ``[B, T, H]``.

        Raises:
            ValueError: the frame count is not a whole number of groups.
        """
        b, n, d = frames.shape
        if n % frame_len:
            raise ValueError(f"{n} tower frames are not a whole number of {frame_len}-frame groups")
        grouped = frames.reshape(b, n // frame_len, frame_len, d)
        if frame_len < self.max_frame_len:
            grouped = nn.functional.pad(grouped, (0, 0, 0, self.max_frame_len - frame_len))
        return self.linear_2(self.act(self.linear_1(grouped.reshape(b, n // frame_len, self.max_frame_len * d))))


class Audio8Model(nn.Module):
    """The whole Audio8 ASR Infinite network; parameter names are the checkpoint keys.

    Args:
        config: parsed checkpoint configuration.
    """

    def __init__(self, config: Audio8Config) -> None:
        super().__init__()
        self.config = config
        self.audio_tower = VoxtralRealtimeEncoder(config.audio)
        self.language_model = Audio8LanguageModel(config.text, config.tie_word_embeddings)
        self.multi_modal_projector = FrameGroupProjector(config)
        # Sinusoidal, theta 1e4, not stored in the checkpoint (non-persistent buffer).
        self.time_embedding = VoxtralRealtimeTimeEmbedding(config.text.hidden_size)
        self.frame_len_embedding = (
            nn.Embedding(len(config.supported_frame_lens), config.text.hidden_size)
            if config.use_frame_len_embedding
            else None
        )
        self.semantic_vad_heads = (
            nn.ModuleList(
                [nn.Linear(config.text.hidden_size, config.vad_num_classes) for _ in config.vad_horizons_s]
            )
            if config.vad_horizons_s
            else None
        )

    # -- small pieces ----------------------------------------------------------------------
    def rebuild_buffers(self) -> None:
        """Recreate the non-persistent buffers (RoPE and time-embedding frequencies) on the
        parameters' device; needed after loading weights into a model built on ``meta``."""
        device = self.language_model.model.embed_tokens.weight.device
        self.audio_tower.rotary_emb = type(self.audio_tower.rotary_emb)(config=self.config.audio).to(device)
        self.language_model.model.rotary_emb = Qwen2RotaryEmbedding(config=self.config.text).to(device)
        self.time_embedding = VoxtralRealtimeTimeEmbedding(self.config.text.hidden_size).to(device)

    def t_cond(self, num_delay_tokens: int, frame_len_index: int) -> torch.Tensor:
        """Delay conditioning ``[1, 1, H]`` in the model dtype.

        ``time_embedding(num_delay_tokens)`` (computed in the model dtype, as the reference does)
        plus ``frame_len_embedding[frame_len_index]`` when the checkpoint has one.
        """
        weight = self.language_model.model.embed_tokens.weight
        t = torch.full((1,), float(num_delay_tokens), device=weight.device, dtype=weight.dtype)
        cond = self.time_embedding(t)
        if self.frame_len_embedding is not None:
            idx = torch.tensor([frame_len_index], device=weight.device)
            cond = cond + self.frame_len_embedding(idx)[0].to(cond.dtype)
        return cond.view(1, 1, -1)

    def conv_frames(self, mel: torch.Tensor) -> torch.Tensor:
        """Causal conv front end on a window: ``mel [B, n_mels, F]`` -> ``[B, ceil(F/2), D]``.

        The convolutions see zeros before the window (no padding cache): the window's own
        52.5 ms look-back supplies the context (reference windowed front end).
        """
        return self.audio_tower.embedder(mel)

    def tower(
        self,
        frames: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor | None,
        cache: Any | None,
    ) -> torch.Tensor:
        """Audio-tower transformer over conv frames.

        Args:
            frames: ``[B, T, D]`` conv frames.
            positions: ``[B, T]`` int64 RoPE positions.
            mask: bool ``[B, 1, T, S]`` (True = attend) or None for plain causal.
            cache: object with ``update(k, v, layer_idx)`` or None.

        Returns:
            ``[B, T, D]`` normalised tower states.
        """
        tower = self.audio_tower
        pe = tower.rotary_emb(frames, position_ids=positions)
        h = frames
        for layer in tower.layers:
            h = layer(h, attention_mask=mask, position_embeddings=pe, cache=cache)
        return tower.norm(h)

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """Token embeddings ``[B, T] int64 -> [B, T, H]``."""
        return self.language_model.model.embed_tokens(ids)

    def decoder(
        self,
        inputs_embeds: torch.Tensor,
        positions: torch.Tensor,
        mask: torch.Tensor | None,
        cache: Any | None,
        t_cond: torch.Tensor,
    ) -> torch.Tensor:
        """Delay-conditioned Qwen2 decoder.

        Args:
            inputs_embeds: ``[B, T, H]`` fused inputs (token embedding + audio embedding).
            positions: ``[B, T]`` int64 RoPE positions.
            mask: bool ``[B, 1, T, S]`` or None for plain causal.
            cache: object with ``update(k, v, layer_idx)`` or None.
            t_cond: ``[1, 1, H]`` delay conditioning.

        Returns:
            ``[B, T, H]`` final-norm hidden states (the VAD heads read these).
        """
        lm = self.language_model.model
        pe = lm.rotary_emb(inputs_embeds, position_ids=positions)
        h = inputs_embeds
        for layer in lm.layers:
            h = layer(h, attention_mask=mask, position_embeddings=pe, cache=cache, t_cond=t_cond)
        return lm.norm(h)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """LM head: ``[..., H] -> [..., vocab]`` in float32."""
        return self.language_model.lm_head(hidden).float()

    def vad_probabilities(self, hidden: torch.Tensor) -> torch.Tensor | None:
        """Semantic-VAD class probabilities ``[..., horizons, classes]`` float32, or None without heads."""
        if self.semantic_vad_heads is None:
            return None
        logits = torch.stack([head(hidden) for head in self.semantic_vad_heads], dim=-2)
        return torch.softmax(logits.float(), dim=-1)


def expected_keys(model: Audio8Model) -> dict[str, tuple[int, ...]]:
    """Checkpoint key -> shape for every persistent tensor of ``model`` (tied head excluded).

    Returns:
        Mapping of key names to shapes; ``language_model.lm_head.weight`` is left out when the
        head is tied (the reference checkpoint may omit it).
    """
    keys = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        keys.pop("language_model.lm_head.weight", None)
    return keys
