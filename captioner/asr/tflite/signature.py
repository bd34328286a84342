"""The signature of a TensorFlowASR export: its inputs and outputs in order, the carried states paired.

Facts from DESIGN section 3 and the ``tensorflowasr`` 3.1.1 wheel (``inferences.py``):

* Inputs are named ``tfasr_input_N`` (N = position in the flattened signature): signal float32
  ``[B, -1]``, lengths int32 ``[B]``, previous tokens int32 ``[B, 1]``, then encoder, decoder and
  (beam exports) beam states. Outputs are numbered ``Identity_N`` or ``StatefulPartitionedCall:N``:
  transcript string ``[B]``, tokens, next tokens (absent for CTC), next states.
* Carried states pair ``outputs[2:]`` with ``inputs[2:]`` *from the end*; each pair must agree in
  dtype and ``shape_signature`` (-1 matches anything).

Read from a runtime's tensor details or from the flatbuffer (:mod:`captioner.asr.tflite.meta`) alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from captioner.asr.tflite.errors import REEXPORT, TFLiteModelError

_INPUT_RE = re.compile(r"(?:^|_)tfasr_input_(\d+)(?::\d+)?$")
_OUTPUT_RE = re.compile(r"(?:Identity|(?:Stateful)?PartitionedCall)(?:[:_](\d+))?$")


@dataclass(frozen=True)
class TensorInfo:
    """One model input or output as seen by a runtime or the flatbuffer.

    Attributes:
        name: tensor name (e.g. ``serving_default_tfasr_input_3:0``, ``Identity_2``).
        position: signature position read from the name.
        dtype: numpy dtype (``np.bytes_`` for strings).
        shape: static shape (placeholders are 1).
        shape_signature: shape with -1 for dimensions unknown at export.
        index: runtime tensor index (-1 when read from the flatbuffer).
    """

    name: str
    position: int
    dtype: Any
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...]
    index: int = -1


@dataclass(frozen=True)
class StatePair:
    """A carried state: output ``output`` of one call feeds input ``input`` of the next."""

    input: TensorInfo
    output: TensorInfo


def decode_name(name: bytes | str | None) -> str:
    """A tensor, op or metadata name as text (runtimes and the flatbuffer give bytes or str)."""
    if name is None:
        return ""
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else name



# -- names and pairing --------------------------------------------------------------------------------------
def input_position(name: str) -> int | None:
    """Signature position of an input named ``[prefix_]tfasr_input_N[:k]``, else None."""
    m = _INPUT_RE.search(name)
    return int(m.group(1)) if m else None


def output_position(name: str) -> int | None:
    """Signature position of an output named ``Identity[_N]`` / ``[Stateful]PartitionedCall[:N]``, else None."""
    m = _OUTPUT_RE.search(name)
    return int(m.group(1) or 0) if m else None


def order_tensors(details: Sequence[dict], kind: str, path: str = "") -> list[TensorInfo]:
    """Sort interpreter-style tensor details into signature order by the number in their names.

    Args:
        details: dicts with ``name``, ``dtype``, ``shape``, ``shape_signature`` and optionally
            ``index`` (as ``Interpreter.get_input_details()`` returns; runtimes list them out of order).
        kind: ``"input"`` or ``"output"``.
        path: file name for messages.

    Raises:
        TFLiteModelError: a name carries no position (inputs not named ``tfasr_input_N``: an export
            from before TensorFlowASR named them), or positions are not 0..n-1.
    """
    where = f"{path}: " if path else ""
    parse = input_position if kind == "input" else output_position
    by_pos: dict[int, TensorInfo] = {}
    for d in details:
        name = decode_name(d["name"])
        pos = parse(name)
        if pos is None:
            if kind == "input":
                raise TFLiteModelError(
                    f"{where}input tensor {name!r} is not named tfasr_input_N, so nothing says which state it "
                    f"carries and the model cannot be streamed safely; {REEXPORT}"
                )
            raise TFLiteModelError(
                f"{where}output tensor {name!r} is not numbered (Identity_N / StatefulPartitionedCall:N), so its "
                f"signature position is unknown; {REEXPORT}"
            )
        shape = tuple(int(x) for x in np.asarray(d.get("shape", ()), dtype=np.int64).reshape(-1))
        sig = d.get("shape_signature")
        sig = tuple(int(x) for x in np.asarray(sig, dtype=np.int64).reshape(-1)) if sig is not None and len(sig) else shape
        by_pos[pos] = TensorInfo(name, pos, d["dtype"], shape, sig, int(d.get("index", -1)))
    if sorted(by_pos) != list(range(len(details))):
        raise TFLiteModelError(
            f"{where}{kind} tensors are not a contiguous signature (positions {sorted(by_pos)}); {REEXPORT}"
        )
    return [by_pos[i] for i in range(len(details))]


def _compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(x == y or x == -1 or y == -1 for x, y in zip(a, b))


def pair_states(inputs: Sequence[TensorInfo], outputs: Sequence[TensorInfo], path: str = "") -> list[StatePair]:
    """Pair the carried states: ``outputs[2:]`` with ``inputs[2:]`` from the end (DESIGN section 3).

    Pairing from the end is what lets a CTC export, which has no ``next_tokens`` output, leave its
    previous-token input at the blank it started with.

    Args:
        inputs, outputs: in signature order.

    Returns:
        One :class:`StatePair` per state output, in signature order.

    Raises:
        TFLiteModelError: more state outputs than state inputs, or a pair whose dtype or
            ``shape_signature`` disagree (the signature tails do not line up).
    """
    where = f"{path}: " if path else ""
    state_in, state_out = list(inputs[2:]), list(outputs[2:])
    if len(state_out) > len(state_in):
        raise TFLiteModelError(
            f"{where}{len(state_out)} state outputs cannot feed {len(state_in)} state inputs; {REEXPORT}"
        )
    offset = len(state_in) - len(state_out)
    pairs = []
    for i, out in enumerate(state_out):
        inp = state_in[offset + i]
        if np.dtype(out.dtype) != np.dtype(inp.dtype) or not _compatible(out.shape_signature, inp.shape_signature):
            raise TFLiteModelError(
                f"{where}state output {out.name} {np.dtype(out.dtype).name}{list(out.shape_signature)} cannot feed input "
                f"{inp.name} {np.dtype(inp.dtype).name}{list(inp.shape_signature)}: the signature tails do not line up; "
                f"{REEXPORT}"
            )
        pairs.append(StatePair(inp, out))
    return pairs


def check_signature(inputs: Sequence[TensorInfo], outputs: Sequence[TensorInfo], meta: dict, path: str = "") -> int:
    """Check the fixed head of the signature and the state pairing; return ``B``.

    Raises:
        TFLiteModelError: signal not float32 ``[B, -1]``, lengths not int ``[B]``, first output not a
            string ``[B]``, a state whose first dimension is not a multiple of ``B``, no beam-score
            input in a beam export, or states that do not pair.
    """
    where = f"{path}: " if path else ""
    if len(inputs) < 3 or len(outputs) < 2:
        raise TFLiteModelError(
            f"{where}expected inputs (signal, lengths, previous tokens, states...) and outputs (transcript, tokens, "
            f"...), got {len(inputs)} inputs and {len(outputs)} outputs; {REEXPORT}"
        )
    signal, lengths = inputs[0], inputs[1]
    if np.dtype(signal.dtype) != np.float32 or len(signal.shape_signature) != 2 or signal.shape_signature[0] < 1:
        raise TFLiteModelError(
            f"{where}input 0 must be the float32 [B, -1] signal, got {np.dtype(signal.dtype).name}"
            f"{list(signal.shape_signature)}; {REEXPORT}"
        )
    batch = int(signal.shape_signature[0])
    if not np.issubdtype(np.dtype(lengths.dtype), np.integer) or tuple(lengths.shape) != (batch,):
        raise TFLiteModelError(f"{where}input 1 must be the int [B={batch}] lengths, got {list(lengths.shape)}; {REEXPORT}")
    text = outputs[0]
    if np.dtype(text.dtype).kind not in "SO" or len(text.shape_signature) != 1 or text.shape_signature[0] not in (-1, batch):
        raise TFLiteModelError(
            f"{where}output 0 must be the transcript string [B={batch}], got {np.dtype(text.dtype).name}"
            f"{list(text.shape_signature)}; {REEXPORT}"
        )
    for t in inputs[2:]:
        if not t.shape or t.shape[0] < batch or t.shape[0] % batch:
            raise TFLiteModelError(
                f"{where}state input {t.name} {list(t.shape)} does not have B={batch} (or B * beam) rows; {REEXPORT}"
            )
    pair_states(inputs, outputs, path)
    beam = int(meta.get("beam_width", 0) or 0)
    if beam > 1 and len(beam_score_inputs(inputs, batch, beam)) != 1:
        raise TFLiteModelError(
            f"{where}beam_width={beam} but there is not exactly one float [B={batch}, {beam}] beam-score input; "
            f"{REEXPORT}"
        )
    return batch


def beam_score_inputs(inputs: Sequence[TensorInfo], batch: int, beam_width: int) -> list[int]:
    """Positions (in ``inputs``) of float ``[B, W]`` state inputs: the beam scores of a beam export.

    TensorFlowASR seeds them with 0 for hypothesis 0 and -1e9 for the others
    (``BaseModel.get_initial_beam_state``); no other state input has that shape.
    """
    return [
        i
        for i, t in enumerate(inputs)
        if i >= 2 and np.issubdtype(np.dtype(t.dtype), np.floating) and tuple(t.shape) == (batch, beam_width)
    ]
