"""TFLite backend for TensorFlowASR streaming exports (``tensorflow_asr tflite``).

The file describes itself (DESIGN section 3): chunk geometry, sample rate, blank id and beam
width come from its ``TFASR_METADATA`` entry, and the batch capacity ``B`` from the signal input's
first dimension (``--bs`` at export). One interpreter call takes ``[B, signal_chunk_size]`` samples
plus every row's carried state and returns, per row, the transcript text of this call only and the
next state.

* :class:`TFLiteBackend` is the streaming :class:`~captioner.asr.base.Backend`: a
  :class:`~captioner.engine.session.StreamingSession` cuts overlapping chunks (advancing by
  ``signal_chunk_step``) and flushes at ``end()``; the backend runs up to ``B`` rows per call and pads
  missing rows with silence from the initial state.
* :class:`TFLiteOnePass` decodes whole signals in one call each from the initial state (rows padded
  to the longest, each with its real length), on its own interpreter, so padding never reaches a
  streaming state (TensorFlowASR inference page, sections 3 and 5.1).

A row's state is a tuple of numpy arrays, one per state input (``inputs[2:]``): that row's slice of
each batch state (``[k, ...]``, k = 1, or the beam width for beam states).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from captioner.asr.base import Backend, BackendError, StepResult, StepRow
from captioner.asr.tflite.errors import TFLiteModelError
from captioner.asr.tflite.meta import TFLiteModelInfo, read_tflite_info
from captioner.asr.tflite.signature import beam_score_inputs, order_tensors, pair_states
from captioner.asr.tflite.runtime import make_interpreter
from captioner.events import TextDelta

#: Score of a dead beam hypothesis in the initial state (tensorflowasr ``get_initial_beam_state``).
DEAD_BEAM_SCORE = -1e9

RowState = tuple  # tuple[np.ndarray, ...]: one row's slice of every state input


class TFLiteProgram:
    """One interpreter for one export, with the signature sorted and the states paired.

    Args:
        info: the inspected file (:func:`read_tflite_info`).
        runtime: ``"auto"``, ``"litert"`` or ``"tensorflow"``.
        num_threads: interpreter CPU threads (None: runtime default).

    Attributes:
        batch_size: ``B``.
        runtime: the runtime actually used.
        initial_states: ``[B * k, ...]`` arrays, one per state input: zeros, blank tokens, beam
            scores 0 for hypothesis 0 and -1e9 for the others.

    Raises:
        TFLiteModelError, TFLiteRuntimeMissing: see :func:`make_interpreter`; also when the runtime's
            view of the signature disagrees with the file's.
    """

    def __init__(self, info: TFLiteModelInfo, runtime: str = "auto", num_threads: int | None = None) -> None:
        self.info = info
        self.batch_size = info.batch_size
        self.interpreter, self.runtime = make_interpreter(info, runtime, num_threads)
        self._width: int | None = None
        self._locate()
        self.initial_states = self._initial_states()
        self._rows_per_state = [int(s.shape[0]) // self.batch_size for s in self.initial_states]
        self._join_buffers = [s.copy() for s in self.initial_states]
        self._fed_back = {slot for slot, _ in self._feedback}

    def _locate(self) -> None:
        interp = self.interpreter
        self.inputs = order_tensors(interp.get_input_details(), "input", self.info.path)
        self.outputs = order_tensors(interp.get_output_details(), "output", self.info.path)
        pairs = pair_states(self.inputs, self.outputs, self.info.path)
        # (state slot = position among inputs[2:], runtime index of the output that replaces it)
        self._feedback = [(p.input.position - 2, p.output.index) for p in pairs]
        self._signal, self._length = self.inputs[0], self.inputs[1]
        self._state_inputs = self.inputs[2:]
        self._text = self.outputs[0]
        # plain ints/dtypes for the per-call path
        self._signal_index, self._length_index = self._signal.index, self._length.index
        self._length_dtype = np.dtype(self._length.dtype)
        self._state_indices = [t.index for t in self._state_inputs]
        self._text_index = self._text.index

    def _initial_states(self) -> list[np.ndarray]:
        states = []
        for t in self._state_inputs:
            fill = self.info.blank if np.issubdtype(np.dtype(t.dtype), np.integer) else 0
            states.append(np.full(t.shape, fill, dtype=t.dtype))
        if self.info.beam_width > 1:
            (pos,) = beam_score_inputs(self.inputs, self.batch_size, self.info.beam_width)
            states[pos - 2][:, 1:] = DEAD_BEAM_SCORE
        return states

    def row_state(self, states: Sequence[np.ndarray], row: int, fresh: bool = False) -> RowState:
        """Row ``row``'s slice of every batch state.

        Args:
            states: batch states.
            row: slot index.
            fresh: True when ``states`` came from :meth:`run` (new arrays nobody else writes):
                their paired slots are returned as views instead of copies.
        """
        if fresh and self.batch_size == 1:
            # B = 1: paired slots are new arrays; unpaired ones are the row's own (never written)
            return tuple(states)
        out = []
        for slot, (s, k) in enumerate(zip(states, self._rows_per_state)):
            part = s[row * k : (row + 1) * k]
            out.append(part if fresh and slot in self._fed_back else part.copy())
        return tuple(out)

    def join(self, rows: Sequence[RowState | None]) -> list[np.ndarray]:
        """Stack ``B`` row states (``None`` = initial state) into batch states.

        For ``B = 1`` a row's own arrays are passed through (``set_tensor`` copies them); otherwise
        reused buffers are filled, so the result is only valid until the next call.
        """
        if len(rows) == 1 and self.batch_size == 1 and rows[0] is not None:
            self._check(rows[0])
            return list(rows[0])
        out = self._join_buffers
        for r in range(self.batch_size):
            state = rows[r] if r < len(rows) else None
            if state is not None:
                self._check(state)
            for slot, (batch, k) in enumerate(zip(out, self._rows_per_state)):
                batch[r * k : (r + 1) * k] = (self.initial_states[slot] if state is None else state[slot])[0:k]
        return out

    def _check(self, state: RowState) -> None:
        if len(state) != len(self.initial_states):
            raise BackendError(f"a session state has {len(state)} parts, this model carries {len(self.initial_states)}")

    def run(self, signals: np.ndarray, lengths: np.ndarray, states: Sequence[np.ndarray]) -> tuple[list[str], list[np.ndarray]]:
        """One interpreter call.

        Args:
            signals: ``[B, T] float32`` audio at the model's sample rate.
            lengths: ``[B] int32`` real samples per row.
            states: batch states, one per state input (``inputs[2:]``).

        Returns:
            ``(texts, next_states)``: the transcript of this call per row (UTF-8 decoded) and the
            batch states for the next call (inputs without a paired output, e.g. a CTC export's
            previous tokens, are carried unchanged).
        """
        interp = self.interpreter
        width = int(signals.shape[1])
        if width != self._width:
            interp.resize_tensor_input(self._signal.index, [self.batch_size, width], strict=True)
            interp.allocate_tensors()
            self._locate()  # allocation may rebuild the tensor descriptors
            self._width = width
        set_tensor, get_tensor = interp.set_tensor, interp.get_tensor
        set_tensor(self._signal_index, signals)
        if lengths.dtype != self._length_dtype:
            lengths = lengths.astype(self._length_dtype)
        set_tensor(self._length_index, lengths)
        for index, value in zip(self._state_indices, states):
            set_tensor(index, value)
        interp.invoke()
        raw = get_tensor(self._text_index).reshape(-1)
        texts = [_text(raw[r]) for r in range(self.batch_size)]
        next_states = list(states)
        for slot, index in self._feedback:
            next_states[slot] = get_tensor(index)
        return texts, next_states

    def close(self) -> None:
        """Drop the interpreter."""
        self.interpreter = None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class TFLiteBackend(Backend):
    """Streaming backend over a TensorFlowASR ``.tflite`` export.

    Args:
        path: the ``.tflite`` file.
        runtime: ``"auto"`` (from the file's op codes), ``"litert"`` or ``"tensorflow"``.
        num_threads: interpreter CPU threads (None: runtime default).

    Attributes:
        geometry: from ``TFASR_METADATA`` (``signal_chunk_size`` / ``signal_chunk_step`` / ``sample_rate``).
        batch_size: ``B`` of the file (``--bs`` at export).
        info: the inspected file; ``program``: its interpreter.

    Raises:
        TFLiteModelError: the file is refused (message says why and how to re-export).
        TFLiteRuntimeMissing: the needed runtime is not installed (message names the extra).
    """

    name = "tflite"
    flush_chunks = 0

    def __init__(self, path: str | os.PathLike, runtime: str = "auto", num_threads: int | None = None) -> None:
        self.info = read_tflite_info(path)
        self.geometry = self.info.geometry
        self.batch_size = self.info.batch_size
        self.program = TFLiteProgram(self.info, runtime, num_threads)
        size = self.geometry.chunk_size
        self._signals = np.zeros((self.batch_size, size), dtype=np.float32)
        self._lengths = np.full(self.batch_size, size, dtype=np.int32)

    def initial_state(self) -> RowState:
        """A fresh session's state for one row (copies)."""
        return self.program.row_state(self.program.initial_states, 0)


    def step(self, rows: Sequence[StepRow]) -> list[StepResult]:
        """Decode up to ``B`` chunks in one interpreter call.

        Args:
            rows: 1..B rows; ``audio`` is ``[signal_chunk_size] float32`` or ``None`` for a
                finish-only row (no new audio beyond the overlap: nothing is decoded, no event).

        Returns:
            Per row: its next state and a final :class:`TextDelta` spanning ``row.start..row.end``
            when the call produced text for it.

        Raises:
            BackendError: more than ``B`` rows, a chunk of the wrong length, or the interpreter failed.
        """
        if self.program.interpreter is None:
            raise BackendError("the TFLite backend is closed")
        if len(rows) > self.batch_size:
            raise BackendError(f"{len(rows)} rows for a model with B={self.batch_size}")
        size = self.geometry.chunk_size
        signals = self._signals
        results: list[StepResult | None] = [None] * len(rows)
        live: list[int] = []
        row_states: list[RowState | None] = [None] * self.batch_size
        for i, r in enumerate(rows):
            if r.audio is None:
                results[i] = StepResult(state=r.state, events=[])
                continue
            audio = r.audio if isinstance(r.audio, np.ndarray) else np.asarray(r.audio, dtype=np.float32)
            if audio.shape != (size,):
                raise BackendError(f"a chunk must have {size} samples, got shape {audio.shape}")
            slot = len(live)
            signals[slot] = audio
            row_states[slot] = r.state
            live.append(i)
        if not live:
            return results  # type: ignore[return-value]
        if len(live) < self.batch_size:
            signals[len(live) :] = 0.0  # empty slots decode silence from the initial state
        try:
            texts, next_states = self.program.run(signals, self._lengths, self.program.join(row_states))
        except BackendError:
            raise
        except Exception as exc:  # interpreter failure: raised in every waiting session
            raise BackendError(f"the TFLite model failed on a chunk: {exc}") from exc
        row_state = self.program.row_state
        for slot, i in enumerate(live):
            r, text = rows[i], texts[slot]
            events = [TextDelta(text, r.start, r.end, True)] if text else []
            results[i] = StepResult(row_state(next_states, slot, fresh=True), events)
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Release the interpreter; idempotent."""
        self.program.close()

    def describe(self) -> str:
        """One line: file, runtime, geometry, B, beam width, nchunks."""
        g, i = self.geometry, self.info
        beam = f"beam {i.beam_width}" if i.beam_width else "greedy"
        return (
            f"tflite: {os.path.basename(i.path)} on {self.program.runtime}, {g.sample_rate} Hz, "
            f"chunk {g.chunk_size}/{g.chunk_step} samples, B={self.batch_size}, {beam}, nchunks {i.nchunks}"
        )


class TFLiteOnePass:
    """Whole-signal (non-streaming) decoding of a TensorFlowASR export, on its own interpreter.

    Each signal is decoded in one call from the initial state; up to ``B`` signals share a call,
    zero-padded to the longest with each row's real length in the lengths input, and empty slots
    decode silence. Nothing is carried between calls. This is exact for every architecture
    (TensorFlowASR inference page, section 3).

    Args:
        path: the ``.tflite`` file, or an already inspected :class:`TFLiteModelInfo`.
        runtime, num_threads: as for :class:`TFLiteBackend`.

    Raises:
        TFLiteModelError, TFLiteRuntimeMissing: as for :class:`TFLiteBackend`.
    """

    def __init__(self, path: str | os.PathLike | TFLiteModelInfo, runtime: str = "auto", num_threads: int | None = None) -> None:
        self.info = path if isinstance(path, TFLiteModelInfo) else read_tflite_info(path)
        self.sample_rate = self.info.geometry.sample_rate
        self.batch_size = self.info.batch_size
        self.program = TFLiteProgram(self.info, runtime, num_threads)

    def transcribe(self, signals: Sequence[np.ndarray]) -> list[str]:
        """Decode whole signals.

        Args:
            signals: ``[n_i] float32`` mono signals at :attr:`sample_rate` (any lengths, any count).

        Returns:
            One transcript per signal, in order; ``""`` for an empty signal.

        Raises:
            BackendError: the interpreter failed.
        """
        arrays = [np.asarray(s, dtype=np.float32).reshape(-1) for s in signals]
        out = [""] * len(arrays)
        todo = [i for i, a in enumerate(arrays) if a.size]
        B = self.batch_size
        for start in range(0, len(todo), B):
            group = todo[start : start + B]
            width = max(arrays[i].size for i in group)
            batch = np.zeros((B, width), dtype=np.float32)
            lengths = np.full(B, width, dtype=np.int32)  # empty slots: silence of full width
            for slot, i in enumerate(group):
                batch[slot, : arrays[i].size] = arrays[i]
                lengths[slot] = arrays[i].size
            try:
                texts, _ = self.program.run(batch, lengths, [s.copy() for s in self.program.initial_states])
            except Exception as exc:
                raise BackendError(f"the TFLite model failed on a whole signal of {width} samples: {exc}") from exc
            for slot, i in enumerate(group):
                out[i] = texts[slot]
        return out

    def close(self) -> None:
        """Release the interpreter; idempotent."""
        self.program.close()


def load_tflite_backend(path: str | os.PathLike, runtime: str = "auto", num_threads: int | None = None, **_: Any) -> TFLiteBackend:
    """Load a TensorFlowASR ``.tflite`` export as a streaming backend (``load_backend("tflite", ...)``).

    Args:
        path: the ``.tflite`` file written by ``tensorflow_asr tflite``.
        runtime: ``"auto"`` (LiteRT for builtin-only files, TensorFlow < 2.20 for Flex files),
            ``"litert"`` or ``"tensorflow"``.
        num_threads: interpreter CPU threads (None: runtime default).
        **_: other backend options are ignored (the file fixes geometry and ``B``).

    Raises:
        TFLiteModelError: the file is refused; the message says why and to re-export with
            ``tensorflow_asr tflite``.
        TFLiteRuntimeMissing: the runtime is not installed; the message names the extra.
    """
    return TFLiteBackend(path, runtime=runtime, num_threads=num_threads)


def load_tflite_onepass(path: str | os.PathLike, runtime: str = "auto", num_threads: int | None = None) -> TFLiteOnePass:
    """Load a TensorFlowASR ``.tflite`` export for whole-file decoding (see :class:`TFLiteOnePass`)."""
    return TFLiteOnePass(path, runtime=runtime, num_threads=num_threads)


__all__ = [
    "TFLiteBackend",
    "TFLiteModelError",
    "TFLiteOnePass",
    "TFLiteProgram",
    "load_tflite_backend",
    "load_tflite_onepass",
]
