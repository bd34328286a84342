"""The Audio8 ASR Infinite :class:`~captioner.asr.base.Backend`: load a checkpoint, step sessions.

Contract (``captioner/asr/base.py``): one chunk == one clock step of 16 kHz samples, no
overlap; ``flush_chunks = 10`` (reference ``right_pad_text_tokens``), so a stream of N
samples yields ``ceil(N / samples_per_token) + 10 + 1`` tokens, as the reference batch decoder
does (its schedule has ``left_pad + delay + real tokens + 1 + right_pad`` positions and the first
token comes from the last prompt position; the final row decodes the ``+ 1``). Every session's state (caches, positions, prompt progress, front-end look-back,
detokeniser bytes, VAD hysteresis) travels in ``StepRow.state``.

Events per decoded clock step ``k`` (covering real audio ``[k, k + 1) * clock``):
``VadProbabilities`` (with VAD heads), ``TextDelta(final=True)`` when visible text is ready,
``TurnBoundary(kind="semantic_vad")`` when the selected horizon's end-of-turn probability
crosses the threshold (with hysteresis).
"""

from __future__ import annotations

import os
import statistics
import time
import warnings
from typing import Any, Sequence

import numpy as np

from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.events import Event, Notice, TextDelta, TurnBoundary, VadProbabilities

#: Above this many parameters the CPU cannot keep up with any clock (DESIGN: ~5 s/step on 2 cores).
CPU_PARAMETER_LIMIT = 300_000_000
INSTALL_HINT = "pip install 'captioner[audio8]'"


class SlowDeviceWarning(UserWarning):
    """The measured step time is longer than the clock: captions will fall behind."""


def _import_torch() -> Any:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise BackendError(
            f"the Audio8 backend needs torch, transformers, safetensors and tokenizers ({exc.name} is missing): "
            f"{INSTALL_HINT}"
        ) from exc
    import torch

    return torch


def pick_device(device: str | None = None) -> Any:
    """The device to run on: ``device`` if given, else cuda, then mps, then cpu.

    Raises:
        BackendError: the requested device is not available.
    """
    torch = _import_torch()
    if device:
        dev = torch.device(device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise BackendError(f"device {device!r} requested but CUDA is not available; use --device cpu or omit it")
        if dev.type == "mps" and not torch.backends.mps.is_available():
            raise BackendError(f"device {device!r} requested but Apple MPS is not available")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


_DTYPES = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
           "fp32": "float32", "float32": "float32"}


def pick_dtype(device: Any, dtype: str | None = None) -> Any:
    """Compute dtype: ``dtype`` ("bf16"/"fp16"/"fp32") if given, else bf16 on CUDA with bf16
    support (fp16 without), fp16 on MPS, fp32 on CPU (the reference computes in fp32 on CPU).

    Raises:
        BackendError: unknown dtype name.
    """
    torch = _import_torch()
    if dtype:
        name = _DTYPES.get(str(dtype).lower())
        if name is None:
            raise BackendError(f"unknown dtype {dtype!r}; choose bf16, fp16 or fp32")
        return getattr(torch, name)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


class Audio8Backend(Backend):
    """Audio8 ASR Infinite streaming backend (torch + transformers).

    Build it with :func:`load_audio8_backend`.

    Attributes:
        point: the clock/delay operating point.
        language: "en" or "zh".
        vad_horizon_s, vad_threshold: turn-boundary settings.
        speed_notice: a :class:`~captioner.events.Notice` when the device measured slower than
            the clock, else None.
    """

    name = "audio8"
    flush_chunks = 10

    def __init__(self, checkpoint: Any, point: Any, language: str, batch_size: int, vad_horizon_s: float,
                 vad_threshold: float, vad_hysteresis: float, window_tokens: int | None,
                 trim_interval_tokens: int | None, tower_capacity: int | None = None,
                 kv_cache: str = "static", fixed_shapes: bool = False) -> None:
        from captioner.asr.audio8.config import RIGHT_PAD_TEXT_TOKENS
        from captioner.asr.audio8.streaming import StreamingDecoder
        from captioner.asr.audio8.vad import horizon_index

        self.checkpoint = checkpoint
        self.point = point
        self.geometry = point.geometry
        self.flush_chunks = RIGHT_PAD_TEXT_TOKENS
        if batch_size < 1:
            raise BackendError(f"batch size must be at least 1, got {batch_size}")
        self.batch_size = int(batch_size)
        lang = str(language).strip().lower()
        if lang not in checkpoint.special.languages:
            raise BackendError(f"language {language!r} is not supported by Audio8 ASR Infinite; choose en or zh")
        self.language = lang
        sp = checkpoint.special
        prompt = [sp.bos, sp.languages[lang]] + [sp.streaming_pad] * (point.prefill_tokens - 2)
        horizons = checkpoint.config.vad_horizons_s
        self.vad_horizons = tuple(horizons)
        self.vad_index = None
        if horizons:
            try:
                self.vad_index = horizon_index(horizons, vad_horizon_s)
            except ValueError as exc:
                raise BackendError(str(exc)) from exc
        if not 0.0 < float(vad_threshold) <= 1.0:
            raise BackendError(f"VAD threshold must be in (0, 1], got {vad_threshold}")
        self.turn_source = "model" if self.vad_index is not None else "audio"  # its VAD heads decide turns
        self.vad_horizon_s = float(vad_horizon_s)
        self.vad_threshold = float(vad_threshold)
        self.vad_hysteresis = float(vad_hysteresis)
        try:
            self.decoder = StreamingDecoder(
                checkpoint.model,
                checkpoint.feature_extractor,
                point,
                prompt,
                sp.eos,
                window_tokens or point.default_window_tokens(),
                trim_interval_tokens or point.default_trim_interval_tokens(),
                tower_capacity=tower_capacity,
                cache=kv_cache,
                slots=self.batch_size,
                fixed_shapes=fixed_shapes,
            )
        except ValueError as exc:
            raise BackendError(str(exc)) from exc
        self._hidden = sp.hidden
        self.speed_notice: Notice | None = None

    # -- Backend API ------------------------------------------------------------------------
    def new_state(self) -> Any:
        """A fresh session state (what a row with ``state=None`` starts from)."""
        return self.decoder.new_state(self.vad_threshold, self.vad_hysteresis)

    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Decode one clock step for each of up to ``batch_size`` sessions in one model call.

        A row's first chunks only fill the delay (no token yet); the final row decodes every
        remaining step over synthesised silence and releases held text.

        Raises:
            BackendError: more rows than ``batch_size`` or a chunk of the wrong length.
        """
        if len(rows) > self.batch_size:
            raise BackendError(f"{len(rows)} rows for a batch of {self.batch_size}")
        spt = self.point.samples_per_token
        states = []
        for row in rows:
            if row.state is None and row.audio is None:
                states.append(None)  # finish-only row of a session that never decoded
                continue
            state = row.state if row.state is not None else self.new_state()
            if row.audio is not None and np.asarray(row.audio).shape != (spt,):
                raise BackendError(f"Audio8 takes chunks of {spt} samples, got shape {np.shape(row.audio)}")
            self.decoder.push_audio(state, row.audio, row.last)
            if row.audio is not None and row.end > row.start:  # flush rows carry no real audio
                state.real_end_s = max(state.real_end_s, float(row.end))
            states.append(state)
        live = [s for s in states if s is not None]
        tokens = self.decoder.run(live) if live else []
        by_id = {id(s): t for s, t in zip(live, tokens)}
        results = []
        for row, state in zip(rows, states):
            if state is None:
                results.append(StepResult(None, []))
                continue
            events = self._events(state, by_id[id(state)])
            if row.last:
                events += self._flush(state)
            results.append(StepResult(state, events))
        return results

    def describe(self) -> str:
        """Backend, model, device and geometry in one line."""
        ck = self.checkpoint
        return (
            f"{super().describe()}, {ck.device.type}/{str(ck.dtype).replace('torch.', '')}, "
            f"language {self.language}, frame_len {self.point.frame_len}, delay tokens {self.point.num_delay_tokens}"
        )

    def close(self) -> None:
        """Drop the model (GPU memory is freed once nothing else holds it). Idempotent."""
        self.decoder = None  # type: ignore[assignment]
        self.checkpoint = None

    # -- events -----------------------------------------------------------------------------
    def _time(self, state: Any, step: int) -> float:
        return min(step * self.point.clock_ms / 1000.0, state.real_end_s)

    def _events(self, state: Any, tokens: list[Any]) -> list[Event]:
        tok = self.checkpoint.tokenizer
        events: list[Event] = []
        for t in tokens:
            step_end = self._time(state, t.step + 1)
            fired = False
            if t.eot:
                events.append(VadProbabilities(step_end, self.vad_horizons, t.eot))
                fired = state.vad.update(t.eot[self.vad_index])
            if t.token not in self._hidden:
                ready = state.detok.push(tok, t.token, t.step)
                if ready is not None and ready[0]:
                    events.append(TextDelta(ready[0], self._time(state, ready[1]), step_end, True))
            if fired:
                events.append(TurnBoundary(step_end, "semantic_vad", t.eot[self.vad_index]))
        return events

    def _flush(self, state: Any) -> list[Event]:
        ready = state.detok.flush(self.checkpoint.tokenizer)
        if ready is None or not ready[0]:
            return []
        return [TextDelta(ready[0], self._time(state, ready[1]), state.real_end_s, True)]

    # -- speed check --------------------------------------------------------------------------
    def measure_step_ms(self, steps: int = 8) -> float:
        """Median wall-clock ms of one steady-state step with ``batch_size`` sessions (all B
        sources live at once is the case that must keep up) over ``steps`` steps of low noise."""
        spt = self.point.samples_per_token
        states: list[Any] = [None] * self.batch_size
        times = []
        rng = np.random.default_rng(0)
        warm = self.point.num_delay_tokens + 2
        for i in range(warm + steps):
            chunk = (0.01 * rng.standard_normal(spt)).astype(np.float32)
            rows = [StepRow(chunk, st, i * spt / 16000, (i + 1) * spt / 16000) for st in states]
            t0 = time.perf_counter()
            states = [r.state for r in self.step(rows)]
            if i >= warm:
                times.append((time.perf_counter() - t0) * 1000.0)
        return statistics.median(times)


def load_audio8_backend(
    model_dir: str | os.PathLike,
    clock_ms: int = 80,
    delay_ms: int = 480,
    language: str = "en",
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int = 2,
    vad_horizon_s: float = 1.0,
    vad_threshold: float = 0.5,
    vad_hysteresis: float = 0.2,
    window_tokens: int | None = None,
    trim_interval_tokens: int | None = None,
    allow_slow: bool = False,
    check_speed: bool = True,
    kv_cache: str = "static",
    fixed_shapes: bool = False,
) -> Audio8Backend:
    """Load an Audio8 ASR Infinite checkpoint directory as a streaming backend.

    Args:
        model_dir: directory with config.json, model.safetensors, semantic_vad_heads.safetensors,
            tokenizer and preprocessor files.
        clock_ms: 80, 120 or 160 ms per text token (model card).
        delay_ms: transcription delay, a multiple of the clock (240-2400 ms; post-trained pairs
            in the model card; others warn).
        language: "en" or "zh".
        device: "cuda", "cuda:1", "mps", "cpu" or None (automatic).
        dtype: "bf16", "fp16", "fp32" or None (bf16 on CUDA, fp16 on MPS, fp32 on CPU).
        batch_size: ``B``, the most sessions per model call (microphone + system audio = 2).
        vad_horizon_s: the VAD horizon that decides turns (0.5/1/2/3 s; 1 s in the reference client).
        vad_threshold: end-of-turn probability that fires a turn boundary.
        vad_hysteresis: the probability must fall this far below the threshold to re-arm.
        window_tokens: rolling decoder window in tokens (default 30 s of tokens: 375 at 80 ms).
        trim_interval_tokens: tokens trimmed beyond the bound at once (default 3 s worth).
        allow_slow: load a full-size model on the CPU anyway (tests, benchmarks).
        check_speed: time a few steps after loading and warn (``SlowDeviceWarning``, and
            ``backend.speed_notice``) when a step takes longer than the clock.
        kv_cache: ``"static"`` (default: one pre-allocated KV pool per attention stack, a row per
            session, trimmed in place) or ``"per_session"`` (private buffers stacked per call;
            the same tokens).
        fixed_shapes: steady steps attend over the whole static cache under a mask, so their
            shapes depend on the batch size alone (groundwork for CUDA graphs; off by default).

    Returns:
        The backend; share it between sessions through ``BatchEngine.shared``.

    Raises:
        BackendError: torch/transformers missing ("pip install 'captioner[audio8]'"), a bad
            checkpoint (``CheckpointError``), an invalid clock/delay/language/VAD setting, or a
            real-size model on the CPU.
    """
    _import_torch()
    from captioner.asr.audio8.checkpoint import load_checkpoint
    from captioner.asr.audio8.config import load_config, operating_point
    from captioner.asr.geometry import GeometryError

    config = load_config(model_dir)
    try:
        point = operating_point(config, clock_ms, delay_ms)
    except GeometryError as exc:
        raise BackendError(str(exc)) from exc
    dev = pick_device(device)
    dt = pick_dtype(dev, dtype)
    n_params = _count_parameters(config)
    if dev.type == "cpu" and n_params > CPU_PARAMETER_LIMIT and not allow_slow:
        raise BackendError(
            f"Audio8 ASR Infinite ({n_params / 1e9:.2f} B parameters) is far too slow on CPU: use the remote "
            f"backend or the default model, or run it on a GPU (a CPU needs seconds per {clock_ms} ms step)"
        )
    checkpoint = load_checkpoint(model_dir, dev, dt)
    backend = Audio8Backend(checkpoint, point, language, batch_size, vad_horizon_s, vad_threshold, vad_hysteresis,
                            window_tokens, trim_interval_tokens, kv_cache=kv_cache, fixed_shapes=fixed_shapes)
    if check_speed:
        ms = backend.measure_step_ms()
        if ms > clock_ms:
            msg = (
                f"Audio8 takes {ms:.0f} ms per {clock_ms} ms step on {dev.type}: captions will fall behind. "
                "Use a longer clock (120/160 ms), a faster GPU, the remote backend or the default model."
            )
            backend.speed_notice = Notice(msg, "warning", "backend_slow")
            warnings.warn(msg, SlowDeviceWarning, stacklevel=2)
    return backend


def _count_parameters(config: Any) -> int:
    """Parameter count from the config alone (meta device, no memory)."""
    import torch

    from captioner.asr.audio8.modeling import Audio8Model

    with torch.device("meta"):
        model = Audio8Model(config)
    return sum(p.numel() for p in model.parameters())
