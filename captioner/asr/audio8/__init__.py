"""Audio8 ASR Infinite backend (torch + transformers; install with ``pip install 'captioner[audio8]'``).

Modules: ``config`` (config.json, operating points), ``checkpoint`` (safetensors + tokenizer +
feature extractor loading with exact checks), ``modeling`` (composition of transformers
classes), ``frontend`` (windowed log-mel), ``kv_caches`` (the attention stacks' KV caches:
per-session buffers, static pools), ``streaming`` (per-session state, batched step, rolling
window), ``detok`` (byte-safe text), ``vad`` (turn hysteresis), ``backend`` (the
:class:`~captioner.asr.base.Backend`), ``tiny`` (tiny random checkpoints for tests/benchmarks).

Importing this package does not import torch; :func:`load_audio8_backend` does.
"""

from __future__ import annotations

from typing import Any


def load_audio8_backend(*args: Any, **kwargs: Any) -> Any:
    """Load a checkpoint directory as an Audio8 backend; see :func:`captioner.asr.audio8.backend.load_audio8_backend`."""
    from captioner.asr.audio8.backend import load_audio8_backend as _load

    return _load(*args, **kwargs)


__all__ = ["load_audio8_backend"]
