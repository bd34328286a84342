"""Shared helpers for the Audio8 tests: tiny checkpoint, test audio, an independent reference decode."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from captioner.asr.audio8.config import RIGHT_PAD_TEXT_TOKENS, OperatingPoint
from captioner.asr.audio8.tiny import build_tiny_checkpoint


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a module's torch work on one thread (2-core CI), restoring the count after."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A tiny random Audio8 checkpoint directory in the real layout, built once per module."""
    return build_tiny_checkpoint(tmp_path_factory.mktemp("a8") / "ckpt")


def make_audio(seconds: float, seed: int = 0, sr: int = 16000) -> np.ndarray:
    """Bursts of tones and noise with pauses: ``[round(seconds * sr)] float32``."""
    rng = np.random.default_rng(seed)
    n = int(round(seconds * sr))
    t = np.arange(n) / sr
    freq = 200 + 150 * np.sin(2 * np.pi * 0.7 * t + seed)
    gate = (np.sin(2 * np.pi * 0.9 * t + seed) > -0.2).astype(np.float32)
    x = 0.4 * np.sin(2 * np.pi * freq * t) * gate + 0.05 * rng.standard_normal(n)
    return x.astype(np.float32)


def reference_tokens(ck, point: OperatingPoint, prompt: list[int], audio: np.ndarray) -> list[int]:
    """Greedy decode of the same causal model over the same audio, computed in one pass per
    stage and without any cache: the reference windows are rebuilt here from the reference
    definition, the tower runs once over all frames with transformers' own sliding-window
    mask, and every decoder step recomputes the whole prefix from scratch.

    Schedule (reference ``simulated_streaming_greedy_decode_batch``): ``left + delay + n + 1 +
    right_pad`` text positions for ``n = ceil(len(audio) / spt)``; the first token comes from
    the last prompt position (``left + delay``) and every later position gives one more, so
    ``n + right_pad + 1`` tokens. Position ``p`` carries the audio of clock step ``p`` of the
    left-padded stream (silence after the audio), its window reaching 2.5 ms beyond it.

    Returns:
        The generated ids, ``n + RIGHT_PAD_TEXT_TOKENS + 1`` of them.
    """
    model, fe = ck.model, ck.feature_extractor
    spt, left, delay = point.samples_per_token, point.left_pad_tokens, point.num_delay_tokens
    n = max(1, math.ceil(len(audio) / spt))
    prefill = left + delay + 1
    positions = left + delay + n + 1 + RIGHT_PAD_TEXT_TOKENS
    stream = np.zeros((positions + 1) * spt, np.float32)  # one step more: the last look-ahead
    stream[left * spt : left * spt + len(audio)] = audio
    frames = []
    start, end = 0, prefill * spt
    while end <= positions * spt:
        window = stream[max(start - 840, 0) : end + 40]
        mel = fe(window[None], sampling_rate=16000, return_tensors="pt")["input_features"]
        conv = model.conv_frames(mel.to(ck.dtype))
        frames.append(conv[:, -((end - start) // spt) * point.frame_len :])
        start, end = end, end + spt
    k = positions - prefill + 1  # tokens: from position prefill - 1 through positions - 1
    assert len(frames) == k == n + RIGHT_PAD_TEXT_TOKENS + 1
    with torch.inference_mode():
        all_frames = torch.cat(frames, dim=1)
        pos = torch.arange(all_frames.shape[1])[None]
        tower = model.audio_tower(inputs_embeds=all_frames, position_ids=pos, use_cache=False).last_hidden_state
        audio_embeds = model.multi_modal_projector(tower, point.frame_len)[0]  # [positions, H]
        assert audio_embeds.shape[0] == positions
        t_cond = model.t_cond(delay, point.frame_len_index)
        ids = list(prompt)
        out = []
        for step in range(k):
            length = prefill + step
            fused = model.embed_tokens(torch.tensor([ids[:length]])) + audio_embeds[None, :length]
            h = model.decoder(fused, torch.arange(length)[None], None, None, t_cond)
            logits = model.logits(h[0, -1])
            logits[ck.special.eos] = float("-inf")
            tok = int(logits.argmax())
            out.append(tok)
            ids.append(tok)
    return out


def decode_stream(decoder, state, audio: np.ndarray, spt: int):
    """Feed ``audio`` (padded to whole chunks) plus 10 flush chunks through a StreamingDecoder,
    the last one as the final row: ``ceil(len(audio) / spt) + 10 + 1`` tokens."""
    n = max(1, math.ceil(len(audio) / spt))
    padded = np.zeros((n + RIGHT_PAD_TEXT_TOKENS) * spt, np.float32)
    padded[: len(audio)] = audio
    toks = []
    total = n + RIGHT_PAD_TEXT_TOKENS
    for i in range(total):
        decoder.push_audio(state, padded[i * spt : (i + 1) * spt], i == total - 1)
        toks += decoder.run([state])[0]
    return toks


def interleaved_sessions(decoder, steps: int = 120, seed: int = 0) -> tuple[dict[str, list], dict[str, int]]:
    """Four sessions through one StreamingDecoder, stepped together in one ``run`` per clock
    step, at different phases: ``a`` from step 0, ``b`` from 5 (its final row at 30), ``c`` from
    12, ``d`` from 35 (after ``b`` ended: it reuses ``b``'s pool row), rows passed out of slot
    order. Prompt prefills, steady rows, final rows, trims and tower re-bases share calls.

    Returns:
        Per session name, ``[(step, token, eot), ...]`` in decode order, and the counters
        ``{"trims": ..., "tower_rebases": ...}`` summed over the sessions.
    """
    rng = np.random.default_rng(seed)
    spt = decoder.point.samples_per_token
    starts, finals = {"a": 0, "b": 5, "c": 12, "d": 35}, {"b": 30}
    states: dict[str, object] = {}
    out: dict[str, list] = {name: [] for name in starts}
    for i in range(steps):
        for name, start in starts.items():
            if i == start:
                states[name] = decoder.new_state(0.5, 0.2)
        live = [n for n in ("c", "a", "d", "b") if n in states and not states[n].ending]
        for n in live:
            decoder.push_audio(states[n], (0.1 * rng.standard_normal(spt)).astype(np.float32), finals.get(n) == i)
        for n, toks in zip(live, decoder.run([states[n] for n in live])):
            out[n] += [(t.step, t.token, t.eot) for t in toks]
    counters = {k: sum(getattr(st, k) for st in states.values()) for k in ("trims", "tower_rebases")}
    return out, counters


def lockstep_sessions(decoder, sessions: int = 3, steps: int = 100, seed: int = 0) -> tuple[list[list], list]:
    """``sessions`` streams of different noise started together and stepped in one ``run`` per
    clock step: their prompt prefills share a call, and they overflow the rolling window on the
    same steps, so their trims re-prefill in one call.

    Returns:
        Per session ``[(step, token, eot), ...]``, and the states.
    """
    rng = np.random.default_rng(seed)
    spt = decoder.point.samples_per_token
    states = [decoder.new_state(0.5, 0.2) for _ in range(sessions)]
    out: list[list] = [[] for _ in states]
    for _ in range(steps):
        for s in states:
            decoder.push_audio(s, (0.1 * rng.standard_normal(spt)).astype(np.float32), False)
        for o, toks in zip(out, decoder.run(states)):
            o += [(t.step, t.token, t.eot) for t in toks]
    return out, states
