"""The Audio8 streaming step: per-session state, batched model call, rolling window, re-basing.

One clock step of one session (DESIGN section 2, reference ``simulated_streaming_greedy_decode``):

1. windowed log-mel + causal convs over the step's window (:mod:`.frontend`), keep the last
   ``frame_len`` conv frames (the whole prompt's frames on the first step);
2. audio tower over those frames with the session's KV cache (sliding window 750);
3. projector over the ``frame_len`` group -> one audio embedding per text position;
4. additive fusion ``embed(previous token) + audio embedding``; the first step feeds the
   prompt ``BOS, language, [STREAMING_PAD] ...`` (``left_pad + delay + 1`` positions);
5. decoder with the session's KV cache, greedy argmax with EOS set to -inf; VAD heads on
   the final-norm state.

Caches (``StreamingDecoder(cache=...)``; the cache classes are :mod:`captioner.asr.audio8.kv_caches`):

* ``"static"`` (default): one pre-allocated :class:`KVPool` per attention stack, ``[layers,
  slots, kv_heads, capacity, head_dim]``; a session owns one row (slot) from ``new_state`` until
  its stream is decoded to its end or its state is dropped. The rows of a call are taken in
  slot order, so consecutive rows attend straight from a view of the pool; new keys go in with
  one indexed write per layer; the rolling trim and the tower re-base move a row's entries in
  place. The tensors (and their addresses) stay the same for the life of the decoder while at
  most ``slots`` sessions exist -- the precondition for capturing the step in a CUDA graph;
* ``"per_session"``: private :class:`KVStore` buffers per session that each call stacks (the
  earlier path, kept for comparison: same tokens).

One call serves every ready session: their prompt prefills share one batch, their steady
steps share one batch with a per-row mask, and trims of the same kept length re-prefill
together.

Unlimited length:

* decoder: the *ledger* (fused inputs of the positions in the KV cache) is bounded by
  ``window_tokens``. When a step would exceed it, positions after the 16-token stable prefix
  are dropped (``overflow + interval - 1`` of them, whole clock steps) and the cache is rebuilt
  by re-prefilling the kept inputs at positions ``0..`` -- exactly a fresh decode of the kept
  context (reference rolling scheduler semantics);
* tower: cache positions equal buffer indices and stay below ``max_position_embeddings``
  (1500). Before they would pass the buffer capacity, the oldest keys that no query can see
  any more (beyond the sliding window) are dropped and the kept keys are re-rotated by the
  shift, which leaves every attention score unchanged (RoPE is relative).

Memory per session is therefore constant, and so is the step time.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from captioner.asr.audio8.config import STABLE_PREFIX_TOKENS, OperatingPoint
from captioner.asr.audio8.detok import IncrementalDetokenizer
from captioner.asr.audio8.frontend import log_mel, window_bounds
from captioner.asr.audio8.kv_caches import KVPool, KVSlot, KVStore, kv_cache, move_front
from captioner.asr.audio8.modeling import Audio8Model
from captioner.asr.audio8.vad import TurnHysteresis


def _slot(state: Any) -> int:
    return int(getattr(state.decoder, "slot", -1))


@dataclass
class Audio8State:
    """One session's streaming state (travels in ``StepRow.state``).

    Attributes:
        audio: ``[n] float32`` stream samples from ``audio_base`` on (left pad included).
        audio_base: stream index of ``audio[0]``.
        chunks: audio chunks (clock steps of real audio or flush silence) received.
        windows_done: clock-step windows decoded = text tokens generated.
        tower, decoder: KV caches of the audio tower and the decoder: :class:`KVSlot` rows of the
            decoder's shared static pools (``cache="static"``) or private :class:`KVStore`
            buffers (``cache="per_session"``).
        ledger: ``[window_tokens, H]`` fused decoder inputs of the cached positions.
        last_token: the previous generated token (next input).
        detok: byte-safe detokeniser.
        vad: end-of-turn hysteresis.
        real_end_s: stream time (s) after the last real sample.
        ending: the final row arrived: decode every remaining window over silence.
        trims, tower_rebases: how often the rolling window / tower re-basing ran.
    """

    audio: np.ndarray
    audio_base: int
    tower: Any
    decoder: Any
    ledger: torch.Tensor
    detok: IncrementalDetokenizer = field(default_factory=IncrementalDetokenizer)
    vad: TurnHysteresis = field(default_factory=TurnHysteresis)
    chunks: int = 0
    windows_done: int = 0
    last_token: int = -1
    real_end_s: float = 0.0
    ending: bool = False
    trims: int = 0
    tower_rebases: int = 0
    release: Any = None  # returns the pool slots (weakref.finalize: also when the state is dropped)

    def window_target(self, point: OperatingPoint) -> int:
        """Windows decodable now: each needs the look-ahead of the chunk ``delay + 1`` later.

        After the final row the stream is complete: ``chunks`` received chunks (real audio plus
        the session's ``right_pad`` flush chunks) give ``chunks + 1`` tokens, the reference
        schedule (``left_pad + delay + chunks + 1`` positions; the first token comes from the
        last prompt position, so the ``+ 1`` position also yields one). Silence is synthesised
        for the look-ahead the last windows need."""
        if self.ending:
            return self.chunks + 1 if self.chunks else 0
        return max(0, self.chunks - point.num_delay_tokens - 1)


def _release_slots(tower_pool: KVPool, tower_slot: int, decoder_pool: KVPool, decoder_slot: int) -> None:
    tower_pool.release(tower_slot)
    decoder_pool.release(decoder_slot)


@dataclass
class TokenOut:
    """What one decoded clock step gave.

    Attributes:
        step: clock-step index of the token (0 = first real chunk).
        token: generated id.
        eot: end-of-turn probability per VAD horizon, () without heads.
    """

    step: int
    token: int
    eot: tuple[float, ...]


class StreamingDecoder:
    """Runs the Audio8 streaming step for a batch of sessions.

    Args:
        model: the loaded network (eval mode).
        feature_extractor: ``VoxtralRealtimeFeatureExtractor``.
        point: clock/delay operating point.
        prompt_ids: the ``prefill_tokens`` prompt ids (BOS, language, pads).
        eos_id: EOS id (its logit is set to -inf: the clock bounds generation).
        window_tokens: rolling decoder window (ledger bound) in tokens.
        trim_interval_tokens: extra tokens trimmed at once so trims happen every ~3 s.
        stable_prefix_tokens: ledger positions never trimmed (BOS + language + pads).
        tower_capacity: tower KV positions per session (<= ``max_position_embeddings``).
        cache: ``"static"`` (default): every session is a row of two pre-allocated
            :class:`KVPool` (tower, decoder), trimmed and re-based in place, and the rows of a
            call attend straight from the pool; ``"per_session"``: each session owns private
            :class:`KVStore` buffers that each call stacks (the earlier path; same tokens).
        slots: sessions the static pools hold before they grow (the backend's ``B``).
        fixed_shapes: with the static cache, steady steps attend over the whole pool capacity
            under a mask, so their tensor shapes depend on the batch size alone (what CUDA-graph
            capture or ``torch.compile`` without recompiles needs; extra attention work over
            masked keys). Off by default until a GPU measurement shows it pays; same tokens.

    Attributes:
        profile: None, or a dict that :meth:`run` adds seconds to per stage (``frontend``,
            ``tower``, ``decoder``; the device is synchronised at each boundary, so set it only
            to measure).

    Raises:
        ValueError: a window or capacity too small for the prompt, an unknown ``cache``, or
            ``fixed_shapes`` without the static cache.
    """

    def __init__(
        self,
        model: Audio8Model,
        feature_extractor: Any,
        point: OperatingPoint,
        prompt_ids: Sequence[int],
        eos_id: int,
        window_tokens: int,
        trim_interval_tokens: int,
        stable_prefix_tokens: int = STABLE_PREFIX_TOKENS,
        tower_capacity: int | None = None,
        cache: str = "static",
        slots: int = 1,
        fixed_shapes: bool = False,
    ) -> None:
        if cache not in ("static", "per_session"):
            raise ValueError(f"unknown KV cache kind {cache!r}; choose 'static' or 'per_session'")
        if fixed_shapes and cache != "static":
            raise ValueError("fixed_shapes needs the static cache")
        self.cache = cache
        self.fixed_shapes = bool(fixed_shapes)
        self.model = model
        self.fe = feature_extractor
        self.point = point
        self.prompt_ids = [int(i) for i in prompt_ids]
        if len(self.prompt_ids) != point.prefill_tokens:
            raise ValueError(f"prompt has {len(self.prompt_ids)} ids, the operating point needs {point.prefill_tokens}")
        self.eos_id = int(eos_id)
        param = model.language_model.model.embed_tokens.weight
        self.device, self.dtype = param.device, param.dtype
        self.stable = min(int(stable_prefix_tokens), point.prefill_tokens)
        self.window = int(window_tokens)
        self.interval = max(1, int(trim_interval_tokens))
        if self.window < point.prefill_tokens + 1:
            raise ValueError(
                f"rolling window of {self.window} tokens cannot hold the {point.prefill_tokens}-token prompt plus one step"
            )
        if self.interval > self.window - self.stable - 1:
            self.interval = max(1, self.window - self.stable - 1)
        acfg = model.config.audio
        self.sliding = int(acfg.sliding_window)
        prefill_frames = point.prefill_tokens * point.frame_len
        cap = tower_capacity or min(int(acfg.max_position_embeddings), self.sliding - 1 + max(256, prefill_frames))
        if cap < prefill_frames or cap < self.sliding - 1 + point.frame_len:
            raise ValueError(
                f"audio-tower cache of {cap} positions is too small for the prompt ({prefill_frames} frames) "
                f"and the sliding window ({self.sliding})"
            )
        self.tower_capacity = int(cap)
        self.t_cond = model.t_cond(point.num_delay_tokens, point.frame_len_index)
        self.profile: dict[str, float] | None = None
        tcfg = model.config.text
        self._tower_shape = (int(acfg.num_hidden_layers), int(acfg.num_attention_heads), int(acfg.head_dim))
        head_dim = int(getattr(tcfg, "head_dim", None) or tcfg.hidden_size // tcfg.num_attention_heads)
        self._decoder_shape = (int(tcfg.num_hidden_layers), int(tcfg.num_key_value_heads), head_dim)
        self.tower_pool: KVPool | None = None
        self.decoder_pool: KVPool | None = None
        if cache == "static":
            self.tower_pool = KVPool(*self._tower_shape, self.tower_capacity, slots, self.device, self.dtype)
            self.decoder_pool = KVPool(*self._decoder_shape, self.window, slots, self.device, self.dtype)

    # -- state ---------------------------------------------------------------------------------
    def new_state(self, vad_threshold: float, vad_hysteresis: float) -> Audio8State:
        """A fresh session: the left pad of zeros queued, empty caches (a free row of each static
        pool, given back when the stream is decoded to its end or the state is dropped)."""
        tower: Any
        decoder: Any
        if self.tower_pool is not None and self.decoder_pool is not None:
            tower = KVSlot(self.tower_pool, self.tower_pool.acquire())
            decoder = KVSlot(self.decoder_pool, self.decoder_pool.acquire())
        else:
            tower = KVStore(*self._tower_shape, self.tower_capacity, self.device, self.dtype)
            decoder = KVStore(*self._decoder_shape, self.window, self.device, self.dtype)
        hidden = int(self.model.config.text.hidden_size)
        ledger = torch.zeros(self.window, hidden, device=self.device, dtype=self.dtype)
        pad = np.zeros(self.point.left_pad_tokens * self.point.samples_per_token, dtype=np.float32)
        state = Audio8State(audio=pad, audio_base=0, tower=tower, decoder=decoder, ledger=ledger,
                            vad=TurnHysteresis(vad_threshold, vad_hysteresis))
        if isinstance(tower, KVSlot):
            state.release = weakref.finalize(state, _release_slots, tower.pool, tower.slot, decoder.pool,
                                             decoder.slot)
        return state

    def push_audio(self, state: Audio8State, chunk: np.ndarray | None, last: bool) -> None:
        """Queue one chunk (``[samples_per_token] float32``) and, on the final row, the silence
        the remaining windows need (up to window ``chunks``: delay + 2 clock steps and the
        look-ahead)."""
        if chunk is not None:
            state.audio = np.concatenate([state.audio, np.asarray(chunk, dtype=np.float32)])
            state.chunks += 1
        if last and not state.ending:
            state.ending = True
            if state.chunks:
                _, end, _ = window_bounds(self.point, state.chunks)  # the last window
                missing = end - (state.audio_base + len(state.audio))
                if missing > 0:
                    state.audio = np.concatenate([state.audio, np.zeros(missing, dtype=np.float32)])

    # -- the step -------------------------------------------------------------------------------
    @torch.inference_mode()
    def run(self, states: Sequence[Audio8State]) -> list[list[TokenOut]]:
        """Decode every window that is ready in each session, batching rows per clock step.

        Returns:
            Per state, the tokens decoded in this call, in order.
        """
        outs: list[list[TokenOut]] = [[] for _ in states]
        for s in states:
            if s.release is not None and not s.release.alive:
                raise RuntimeError("this Audio8 stream was decoded to its end; start a new state")
        while True:
            ready = [i for i, s in enumerate(states) if s.windows_done < s.window_target(self.point)]
            if not ready:
                break
            first = sorted((i for i in ready if states[i].windows_done == 0), key=lambda i: _slot(states[i]))
            # rows in slot order: consecutive static-pool rows attend from a view, no gather
            rest = sorted((i for i in ready if states[i].windows_done > 0), key=lambda i: _slot(states[i]))
            if first:  # prompt prefills share their own width: one call for all of them
                for i, tok in zip(first, self._advance([states[i] for i in first])):
                    outs[i].append(tok)
            if rest:
                for i, tok in zip(rest, self._advance([states[i] for i in rest])):
                    outs[i].append(tok)
        for s in states:  # decoded to its end: the pool rows are free for the next stream
            if s.ending and s.release is not None and s.windows_done >= s.window_target(self.point):
                s.release()
        return outs

    def _lap(self, name: str, t0: float) -> float:
        """Add the time since ``t0`` to ``profile[name]`` (device synchronised); returns now."""
        if self.profile is None:
            return t0
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        self.profile[name] = self.profile.get(name, 0.0) + now - t0
        return now

    def _advance(self, states: list[Audio8State]) -> list[TokenOut]:
        """One window for each of ``states`` (all at k == 0 alone, or all at k >= 1)."""
        p = self.point
        k0 = states[0].windows_done
        n_tok = p.prefill_tokens if k0 == 0 else 1
        t0 = time.perf_counter() if self.profile is not None else 0.0
        windows = []
        for s in states:
            start, end, n = window_bounds(p, s.windows_done)
            if n != n_tok:
                raise RuntimeError("prompt and steady windows cannot share one call")
            a, b = start - s.audio_base, end - s.audio_base
            if a < 0 or b > len(s.audio):
                raise RuntimeError(f"audio window [{start}, {end}) is not buffered (have {s.audio_base}+{len(s.audio)})")
            windows.append(s.audio[a:b])
        mel = log_mel(self.fe, windows).to(self.device, self.dtype)
        n_frames = n_tok * p.frame_len
        frames = self.model.conv_frames(mel)
        if frames.shape[1] < n_frames:
            raise RuntimeError(f"front end gave {frames.shape[1]} frames, the step needs {n_frames}")
        frames = frames[:, -n_frames:]
        t0 = self._lap("frontend", t0)

        # audio tower with each session's cache (re-based before positions leave the buffer)
        for s in states:
            if s.tower.length + n_frames > s.tower.capacity:
                keep = min(s.tower.length, self.sliding - 1)
                shift = s.tower.length - keep
                s.tower.drop_front(shift)
                s.tower.rotate(shift, self.model.audio_tower.rotary_emb)
                s.tower_rebases += 1
        full = self.fixed_shapes and k0 > 0
        tcache = kv_cache([s.tower for s in states], n_frames, full)
        hidden = self.model.tower(frames, tcache.positions(self.device), tcache.mask(self.device, self.sliding), tcache)
        tcache.commit()
        audio_embeds = self.model.multi_modal_projector(hidden, p.frame_len)  # [B, n_tok, H]
        t0 = self._lap("tower", t0)

        if k0 == 0:
            ids = torch.tensor([self.prompt_ids] * len(states), device=self.device)
        else:
            ids = torch.tensor([[s.last_token] for s in states], device=self.device)
        fused = self.model.embed_tokens(ids) + audio_embeds.to(self.dtype)

        # decoder: rows that overflow the rolling window are trimmed and re-prefilled (together)
        last_hidden: list[torch.Tensor | None] = [None] * len(states)
        plain = []
        trim = []
        for b, s in enumerate(states):
            (trim if s.decoder.length + n_tok > self.window else plain).append(b)
        if trim:
            for b, h_last in zip(trim, self._trim_and_prefill([states[b] for b in trim], fused[trim])):
                last_hidden[b] = h_last
        if plain:
            stores = [states[b].decoder for b in plain]
            dcache = kv_cache(stores, n_tok, full)
            for b in plain:
                s = states[b]
                s.ledger[s.decoder.length : s.decoder.length + n_tok] = fused[b]
            mask = None if (len(plain) == 1 and n_tok == 1 and not full) else dcache.mask(self.device)
            rows = fused if len(plain) == len(states) else fused[plain]
            h = self.model.decoder(rows, dcache.positions(self.device), mask, dcache, self.t_cond)
            dcache.commit()
            for j, b in enumerate(plain):
                last_hidden[b] = h[j, -1]
        hl = torch.stack([h for h in last_hidden if h is not None])  # [B, H]
        logits = self.model.logits(hl)
        logits[:, self.eos_id] = float("-inf")
        tokens = logits.argmax(dim=-1).tolist()
        vad = self.model.vad_probabilities(hl)
        eot = vad[..., 0].tolist() if vad is not None else [[] for _ in states]
        self._lap("decoder", t0)

        out = []
        for b, s in enumerate(states):
            step = s.windows_done
            s.windows_done += 1
            s.last_token = int(tokens[b])
            out.append(TokenOut(step, int(tokens[b]), tuple(float(e) for e in eot[b])))
            # the next window starts 52.5 ms before its clock step: drop older samples
            nxt, _, _ = window_bounds(p, s.windows_done)
            cut = nxt - s.audio_base
            if cut > 0:
                s.audio = s.audio[cut:].copy()
                s.audio_base = nxt
        return out

    def _trim_and_prefill(self, states: list[Audio8State], new: torch.Tensor) -> list[torch.Tensor]:
        """Drop whole clock steps after the stable prefix and rebuild each session's decoder cache
        from its kept fused inputs plus ``new`` (``[B, T, H]``) at positions ``0..``.

        In place: the kept ledger rows move down over the dropped ones (no temporary), and the
        re-prefill writes the sessions' caches from position 0 (pool rows or private buffers).
        Sessions whose kept context has the same length share one call (sessions in lock step
        overflow on the same step with the same length).

        Returns:
            Per session, the last position's ``[H]`` hidden state.
        """
        lengths = []
        for s, row in zip(states, new):
            length = s.decoder.length
            overflow = length + row.shape[0] - self.window
            count = min(overflow + self.interval - 1, length - self.stable)
            move_front(s.ledger[self.stable :], 0, count, length - self.stable)
            n = length - count
            s.ledger[n : n + row.shape[0]] = row
            lengths.append(n + row.shape[0])
            s.decoder.length = 0
            s.trims += 1
        out: list[torch.Tensor | None] = [None] * len(states)
        for n in sorted(set(lengths)):
            group = sorted((b for b, m in enumerate(lengths) if m == n), key=lambda b: _slot(states[b]))
            rows = [states[b] for b in group]
            cache = kv_cache([s.decoder for s in rows], n)
            inputs = rows[0].ledger[None, :n] if len(rows) == 1 else torch.stack([s.ledger[:n] for s in rows])
            h = self.model.decoder(inputs, cache.positions(self.device), None, cache, self.t_cond)  # causal
            cache.commit()
            for j, b in enumerate(group):
                out[b] = h[j, -1]
        return out  # type: ignore[return-value]
