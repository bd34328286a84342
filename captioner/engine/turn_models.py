"""The models a turn detector uses, loaded once per process: Silero VAD and smart-turn v3.2.

See :mod:`captioner.engine.turns` for the dependency choice (both ship inside the
``pipecat-ai`` wheel) and the measured costs. :func:`load_models` never raises: a missing
model falls back (energy VAD, silence-based turns) with the reason in
:attr:`TurnModels.problem`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from captioner.asr.vad import MODEL_RATE, EnergyVad, pipecat_file, silero_vad, small_session

log = logging.getLogger(__name__)


class EndOfTurnModel(Protocol):
    """An end-of-turn classifier: ``audio`` ([n] float32, 16 kHz, <= 8 s) -> P(turn complete)."""

    def __call__(self, audio: np.ndarray) -> float: ...



def _quiet_pipecat() -> None:
    try:
        from loguru import logger

        logger.disable("pipecat")  # pipecat logs a banner and every load at import/construct time
    except ImportError:
        pass



def smart_turn_model_path() -> str:
    """``pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx`` (8.7 MB) in the pipecat-ai wheel."""
    return pipecat_file("audio", "turn", "smart_turn", "data", "smart-turn-v3.2-cpu.onnx")



class SmartTurn:
    """smart-turn v3.2 through pipecat's ``LocalSmartTurnAnalyzerV3`` (bundled CPU model, one thread).

    Only its feature extraction and ONNX call (``_predict_endpoint``) are used; see the
    module docstring for why its wall-clock buffering is not.

    The ONNX call runs on captioner's own session (:func:`~captioner.asr.vad.small_session`,
    the arena off): pipecat's keeps ONNX Runtime's arena, which holds the largest activations
    ever needed (an 8 s window) for the life of the process. Measured 2026-12-06 (issue
    40.3): the process after loading and four runs 128 MB resident with pipecat's session,
    113 MB with this one (the whole app: 26 MB less); a run takes 100-105 ms instead of
    75-80 ms on a quiet machine (fresh buffers are mapped each run), ~50 ms more beside two
    busy decode threads (``captioner transcribe`` of a 20-minute meeting: its main thread 24
    -> 35 CPU s for 201 runs, wall time unchanged). It runs once per pause that might end a
    turn. The probabilities are the same.
    """

    def __init__(self) -> None:
        _quiet_pipecat()
        from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3

        path = smart_turn_model_path()
        self.analyzer = LocalSmartTurnAnalyzerV3(smart_turn_model_path=path, cpu_count=1, sample_rate=MODEL_RATE)
        self.analyzer._session = small_session(path)  # pipecat's own keeps its arena (above)
        self._lock = threading.Lock()  # one call at a time per loaded model (sessions share it)
        self.last_ms = 0.0

    def __call__(self, audio: np.ndarray) -> float:
        """P(turn complete) for ``audio`` ([n] float32 in [-1, 1] at 16 kHz, the last <= 8 s count)."""
        with self._lock:
            t0 = time.perf_counter()
            result = self.analyzer._predict_endpoint(np.ascontiguousarray(audio, dtype=np.float32))
            self.last_ms = 1000.0 * (time.perf_counter() - t0)
        return float(result["probability"])


@dataclass
class TurnModels:
    """The loaded models a detector uses (shared by every session of a process).

    Attributes:
        vad: a :class:`SpeechProbability` (Silero, or the energy fallback).
        classifier: an :class:`EndOfTurnModel`, or ``None`` (silence-based turns).
        problem: why a model is missing ("" when both loaded): told to the user once.
    """

    vad: Any
    classifier: Any
    problem: str = ""


_models: dict[bool, TurnModels] = {}
_models_lock = threading.Lock()


def load_models(semantic: bool = True) -> TurnModels:
    """Load (once per process) Silero VAD and, with ``semantic``, smart-turn; never raises.

    Returns:
        The models; on a failure the fallback (energy VAD and/or no classifier) with
        the reason in :attr:`TurnModels.problem`.
    """
    with _models_lock:
        if semantic in _models:
            return _models[semantic]
        problems = []
        try:
            vad: Any = silero_vad()  # the one loaded copy the default model's line cutter also uses
        except Exception as exc:  # noqa: BLE001 - missing package, corrupt file, old onnxruntime
            log.warning("Silero VAD unavailable: %s", exc)
            problems.append(f"voice detector: {exc}")
            vad = EnergyVad()
        classifier = None
        if semantic:
            try:
                classifier = SmartTurn()
            except Exception as exc:  # noqa: BLE001
                log.warning("smart-turn unavailable: %s", exc)
                problems.append(f"end-of-turn model: {exc}")
        _models[semantic] = TurnModels(vad, classifier, "; ".join(problems))
        return _models[semantic]


def preload(semantic: bool = True) -> threading.Thread:
    """Start :func:`load_models` on a thread and return it: the models load while the caller
    loads its backend (measured 2026-12-02 on 2 busy cores: pipecat's import and smart-turn's
    load take 1.7 s of wall time, 0.2 s of CPU). A later :func:`load_models` waits for this
    one (one lock) instead of loading twice. The load counts as a model call
    (:func:`captioner.native_calls.model_call`): an early exit of a command (Ctrl-C while the
    backend loads) ends the process around it at once (``exit_process``) instead of waiting
    for it, where a second Ctrl-C printed "Exception ignored ... KeyboardInterrupt". Not a
    daemon, so a library caller's interpreter still waits for it instead of finalising under
    ONNX Runtime's feet."""
    thread = threading.Thread(target=_preload, args=(semantic,), name="captioner-turn-models")
    thread.start()
    return thread


def _preload(semantic: bool) -> None:
    from captioner.native_calls import ProcessExiting, model_call

    try:
        with model_call():
            load_models(semantic)
    except ProcessExiting:  # the process is ending: nobody needs the models
        pass


def unavailable_message(problem: str, silence_s: float) -> str:
    """What to tell the user when the turn models could not load."""
    return (
        f"Semantic end-of-turn detection is unavailable ({problem}); turns end after {silence_s:g} s of "
        "silence instead. Reinstall captioner's dependencies (pip install --no-deps pipecat-ai onnxruntime "
        "loguru pydantic) to get it back."
    )

