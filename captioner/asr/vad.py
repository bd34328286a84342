"""Voice-activity models on onnxruntime: Silero VAD (from the pipecat-ai wheel) and an energy fallback.

Shared by the turn detector (:mod:`captioner.engine.turns`) and the default model's line
segmenter (:mod:`captioner.asr.moonshine.lines`). One loaded :class:`SileroVad` serves
every stream; each stream keeps its own recurrent state (passed in and returned), so two
sources never move each other's speech boundaries. Silero's network is run here directly
with onnxruntime from the wheel's file (about 0.1 ms per 32 ms window): pipecat's own
wrapper module imports its volume tracker (``loudness``). No Qt.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

#: Rate the VAD takes (Hz).
MODEL_RATE = 16000
#: Samples per Silero window at 16 kHz (32 ms) and the context it prepends.
VAD_WINDOW = 512
VAD_CONTEXT = 64


class SpeechProbability(Protocol):
    """A streaming VAD: ``window`` ([512] float32 at 16 kHz) -> speech probability 0..1."""

    def __call__(self, window: np.ndarray, state: Any) -> tuple[float, Any]: ...



def pipecat_file(*parts: str) -> str:
    """Path of a data file inside the installed ``pipecat-ai`` wheel (nothing is imported).

    Raises:
        ImportError: pipecat-ai is not installed.
        FileNotFoundError: the file is missing from it.
    """
    import importlib.util
    import os

    spec = importlib.util.find_spec("pipecat")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pipecat-ai is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} is missing; reinstall pipecat-ai")
    return path


def silero_model_path() -> str:
    """``pipecat/audio/vad/data/silero_vad.onnx`` (2.3 MB) in the pipecat-ai wheel."""
    return pipecat_file("audio", "vad", "data", "silero_vad.onnx")



def small_session(path: str | bytes):
    """An ONNX Runtime session of the small model at ``path``, a file or its bytes (Silero VAD,
    smart-turn, the speaker encoders): one intra-op thread, no inter-op pool, the arena off
    (activations back to ``malloc`` after each run, which :mod:`captioner.heap` makes give big
    ones back).

    Raises:
        Exception: ONNX Runtime's own, when the file is missing or corrupt.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    opts.enable_cpu_mem_arena = False
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


class SileroVad:
    """Silero VAD (the ``pipecat-ai`` wheel's ONNX file) on onnxruntime, one thread.

    The ONNX session is shared; each stream keeps its own recurrent state, passed in
    and returned by :meth:`__call__`.

    Args:
        path: the ONNX file; default :func:`silero_model_path`.
    """

    def __init__(self, path: str | None = None) -> None:
        self.session = small_session(path or silero_model_path())
        self._sr = np.array(MODEL_RATE, dtype=np.int64)

    @staticmethod
    def initial_state() -> tuple[np.ndarray, np.ndarray]:
        """Fresh ``(rnn state [2, 1, 128], context [1, 64])`` float32 arrays."""
        return np.zeros((2, 1, 128), np.float32), np.zeros((1, VAD_CONTEXT), np.float32)

    def __call__(self, window: np.ndarray, state: Any) -> tuple[float, Any]:
        """Speech probability of one ``[512]`` float32 window; returns ``(p, new state)``."""
        p, state = self.batch(window, state if state is not None else self.initial_state())
        return float(p[0]), state

    def batch(self, window: np.ndarray, state: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, Any]:
        """One ``[512]`` float32 window through ``B`` recurrent states in one network call.

        Args:
            window: ``[512] float32`` at 16 kHz.
            state: ``(rnn [2, B, 128], context [B, 64])`` float32 (``B`` stacked
                :meth:`initial_state` values).

        Returns:
            ``(p [B] float32, new state)``; row ``b`` equals a ``B = 1`` call with state
            ``b`` (bit for bit, checked on the 2-minute meeting, onnxruntime 1.32 CPU).
        """
        rnn, ctx = state
        x = np.concatenate([ctx, np.broadcast_to(window.astype(np.float32, copy=False), (len(ctx), len(window)))],
                           axis=1)
        out, rnn = self.session.run(None, {"input": x, "state": rnn, "sr": self._sr})
        return out[:, 0], (rnn, x[:, -VAD_CONTEXT:])


class EnergyVad:
    """Fallback VAD when Silero is unavailable: RMS level above ``on_dbfs`` counts as speech.

    Args:
        on_dbfs: RMS level (dBFS) mapped to probability 0.5; 10 dB above it -> ~1.
    """

    def __init__(self, on_dbfs: float = -42.0) -> None:
        self.on_dbfs = float(on_dbfs)

    @staticmethod
    def initial_state() -> None:
        return None

    def __call__(self, window: np.ndarray, state: Any) -> tuple[float, Any]:
        rms = float(np.sqrt(np.mean(np.square(window, dtype=np.float64)))) if len(window) else 0.0
        db = 20.0 * np.log10(max(rms, 1e-9))
        return float(1.0 / (1.0 + np.exp(-(db - self.on_dbfs) / 2.5))), None



_shared: list = []


def silero_vad() -> SileroVad:
    """The process's one loaded :class:`SileroVad` (loaded on first use; each stream keeps
    its own state).

    Raises:
        ImportError, FileNotFoundError: pipecat-ai or its model file is missing.
        Exception: onnxruntime cannot load the file.
    """
    if not _shared:
        _shared.append(SileroVad())
    return _shared[0]
