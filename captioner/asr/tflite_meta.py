"""Inspect a TensorFlowASR ``.tflite`` export without running it (and without TensorFlow).

Facts from DESIGN section 3 and the ``tensorflowasr`` 3.1.1 wheel (``utils/tflite_util.py``,
``inferences.py``):

* ``tensorflow_asr tflite`` stores UTF-8 JSON under the flatbuffer ``Model.metadata`` entry
  ``TFASR_METADATA``: ``{"signal_chunk_size", "signal_chunk_step", "sample_rate", "blank",
  "beam_width", "nchunks"}`` (ints). No interpreter API returns it, so it is read here with the
  TFLite flatbuffer schema (LiteRT's ``schema_py_generated``).
* Inputs are named ``tfasr_input_N`` (N = position in the flattened signature): signal float32
  ``[B, -1]``, lengths int32 ``[B]``, previous tokens int32 ``[B, 1]``, then encoder, decoder and
  (beam exports) beam states. Outputs are numbered ``Identity_N`` or ``StatefulPartitionedCall:N``:
  transcript string ``[B]``, tokens, next tokens (absent for CTC), next states.
* Carried states pair ``outputs[2:]`` with ``inputs[2:]`` *from the end*; each pair must agree in
  dtype and ``shape_signature`` (-1 matches anything).
* Select-TF ("Flex") ops appear as custom op codes ``Flex*``; tensorflow-text kernels as ``TFText>*``.

A file that cannot be run safely is refused with :class:`TFLiteModelError`, whose message says
what is wrong and how to fix it (usually: re-export with ``tensorflow_asr tflite``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Sequence

import numpy as np

from captioner.asr.base import BackendError
from captioner.asr.geometry import ChunkGeometry, GeometryError

#: Flatbuffer metadata entry written by ``tensorflow_asr tflite`` (tensorflowasr ``tflite_util``).
METADATA_NAME = "TFASR_METADATA"
#: Integer keys of the metadata JSON (tensorflowasr ``BaseModel.get_tflite_metadata``).
METADATA_KEYS = ("signal_chunk_size", "signal_chunk_step", "sample_rate", "blank", "beam_width", "nchunks")
#: Sample rates (Hz) accepted from metadata; speech models use 8-48 kHz.
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 4000, 192000
#: Custom-op prefixes some runtime registers: Flex delegate (TensorFlow) and tensorflow-text kernels.
FLEX_PREFIX, TFTEXT_PREFIX = "Flex", "TFText>"

REEXPORT = "re-export the model with `tensorflow_asr tflite --config-path=CONFIG --output=OUT.tflite` (TensorFlowASR >= 3.1)"

_INPUT_RE = re.compile(r"(?:^|_)tfasr_input_(\d+)(?::\d+)?$")
_OUTPUT_RE = re.compile(r"(?:Identity|(?:Stateful)?PartitionedCall)(?:[:_](\d+))?$")

# flatbuffer TensorType -> numpy dtype (TFLite schema enum values)
_TENSOR_TYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 5: np.bytes_, 6: np.bool_,
    7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16,
}  # fmt: skip


class TFLiteModelError(BackendError):
    """The file is not a usable TensorFlowASR export; the message says why and how to fix it."""


class TFLiteRuntimeMissing(BackendError):
    """The Python package needed to read or run the file is not installed; the message names the extra."""


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


@dataclass
class TFLiteModelInfo:
    """Everything the backend needs to know about an export, read from the file alone.

    Attributes:
        path: the ``.tflite`` file.
        metadata: the ``TFASR_METADATA`` dict (ints).
        geometry: chunk geometry from the metadata (``ChunkGeometry.from_metadata``).
        batch_size: ``B``, the signal input's first dimension (fixed at export, ``--bs``).
        blank: blank token id; initial previous-token state.
        beam_width: hypotheses per row, 0 for greedy exports.
        nchunks: attention chunks one call covers (``--nchunks``).
        inputs, outputs: sorted by signature position.
        custom_ops: custom op codes used by the file (``Flex*``, ``TFText>*``, ...).
    """

    path: str
    metadata: dict[str, int]
    geometry: ChunkGeometry
    batch_size: int
    blank: int
    beam_width: int
    nchunks: int
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    custom_ops: list[str] = field(default_factory=list)

    @property
    def needs_flex(self) -> bool:
        """True when the file has Select-TF (Flex) or tensorflow-text ops: only full TensorFlow runs it."""
        return any(op.startswith((FLEX_PREFIX, TFTEXT_PREFIX)) for op in self.custom_ops)

    @property
    def states(self) -> list[StatePair]:
        """Carried states, paired from the end (validated when the info was read)."""
        return pair_states(self.inputs, self.outputs)


# -- flatbuffer schema ------------------------------------------------------------------------------------
def load_schema() -> ModuleType:
    """The generated TFLite flatbuffer schema module, without importing TensorFlow.

    Uses LiteRT's ``ai_edge_litert.schema_py_generated`` (extra ``tflite``); failing that, the same
    generated file inside an installed TensorFlow (extra ``tflite-flex``), loaded by path so that
    TensorFlow itself is not imported.

    Raises:
        TFLiteRuntimeMissing: neither package is installed.
    """
    try:
        return importlib.import_module("ai_edge_litert.schema_py_generated")
    except ImportError:
        pass
    spec = importlib.util.find_spec("tensorflow")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            path = os.path.join(root, "lite", "python", "schema_py_generated.py")
            if os.path.exists(path):
                mod_spec = importlib.util.spec_from_file_location("_captioner_tflite_schema", path)
                if mod_spec and mod_spec.loader:
                    module = importlib.util.module_from_spec(mod_spec)
                    mod_spec.loader.exec_module(module)
                    return module
    raise TFLiteRuntimeMissing(
        "reading .tflite models needs LiteRT: install the extra with `pip install 'captioner[tflite]'` "
        "(TensorFlowASR exports also need `pip install 'captioner[tflite-flex]'`)"
    )


def _decode(name: bytes | str | None) -> str:
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
        name = _decode(d["name"])
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


# -- metadata ------------------------------------------------------------------------------------------------
def validate_metadata(raw: Any, path: str = "") -> tuple[dict[str, int], ChunkGeometry]:
    """Check the ``TFASR_METADATA`` values and build the chunk geometry.

    Args:
        raw: the decoded JSON.

    Returns:
        ``(metadata with int values, geometry)``; ``beam_width`` defaults to 0, ``nchunks`` to 1.

    Raises:
        TFLiteModelError: not an object, a missing or non-integer key, an implausible sample rate
            (outside 4-192 kHz, e.g. 16 written for 16 kHz), or an impossible chunk geometry.
    """
    where = f"{path}: " if path else ""
    if not isinstance(raw, dict):
        raise TFLiteModelError(f"{where}{METADATA_NAME} is not a JSON object; {REEXPORT}")
    meta: dict[str, int] = {}
    for key in METADATA_KEYS:
        value = raw.get(key, {"beam_width": 0, "nchunks": 1}.get(key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise TFLiteModelError(f"{where}{METADATA_NAME} needs an integer {key!r}, got {value!r}; {REEXPORT}")
        meta[key] = int(value)
    rate = meta["sample_rate"]
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise TFLiteModelError(
            f"{where}{METADATA_NAME} says sample_rate={rate} Hz, which is not a speech sample rate "
            f"(expected {MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz, e.g. 16000); the metadata is wrong, so the audio "
            f"clock cannot be trusted; {REEXPORT}"
        )
    if meta["blank"] < 0 or meta["beam_width"] < 0 or meta["nchunks"] < 1:
        raise TFLiteModelError(
            f"{where}{METADATA_NAME} has blank={meta['blank']}, beam_width={meta['beam_width']}, "
            f"nchunks={meta['nchunks']}; expected blank >= 0, beam_width >= 0, nchunks >= 1; {REEXPORT}"
        )
    try:
        geometry = ChunkGeometry.from_metadata(meta)
    except GeometryError as exc:
        raise TFLiteModelError(f"{where}{METADATA_NAME} has an impossible chunk geometry: {exc}; {REEXPORT}") from exc
    return meta, geometry


def _read_bytes(path: str) -> bytes:
    if not os.path.exists(path):
        raise TFLiteModelError(f"model file not found: {path}")
    if os.path.isdir(path):
        raise TFLiteModelError(f"{path} is a directory; pass the .tflite file written by `tensorflow_asr tflite`")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise TFLiteModelError(f"{path} is not a TFLite flatbuffer (no TFL3 identifier); pass a .tflite file")
    return data


def _details(subgraph: Any, indices: Sequence[int]) -> list[dict]:
    out = []
    for i in indices:
        t = subgraph.Tensors(int(i))
        dtype = _TENSOR_TYPES.get(t.Type())
        out.append(
            {
                "name": t.Name(),
                "dtype": dtype if dtype is not None else np.void,
                "shape": t.ShapeAsNumpy() if t.ShapeLength() else np.zeros(0, np.int32),
                "shape_signature": t.ShapeSignatureAsNumpy() if t.ShapeSignatureLength() else None,
            }
        )
    return out


def _check_buffers(model: Any, size: int) -> None:
    """Every buffer's bytes must lie inside the file (catches truncated copies).

    ``DataAsNumpy`` is a view that silently stops at the end of the file, so its length is
    compared with the declared one.
    """
    for i in range(model.BuffersLength()):
        buf = model.Buffers(i)
        n = buf.DataLength()
        if n and np.asarray(buf.DataAsNumpy()).size != n:
            raise IndexError(f"buffer {i} declares {n} bytes that run past the end of the file ({size} bytes)")
        offset = buf.Offset() if hasattr(buf, "Offset") else 0
        length = buf.Size() if hasattr(buf, "Size") else 0
        if offset > 1 and offset + length > size:
            raise IndexError(f"external buffer {i} ends at byte {offset + length}, past the end of the file ({size} bytes)")


def read_tflite_info(path: str | os.PathLike) -> TFLiteModelInfo:
    """Read and validate a TensorFlowASR export: metadata, signature, state pairing, op codes.

    Args:
        path: a ``.tflite`` file written by ``tensorflow_asr tflite``.

    Returns:
        :class:`TFLiteModelInfo` (nothing is executed).

    Raises:
        TFLiteModelError: missing/unreadable/truncated file, no ``TFASR_METADATA``, bad metadata,
            inputs not named ``tfasr_input_N``, or a signature that cannot be streamed safely.
        TFLiteRuntimeMissing: no flatbuffer schema available (install ``captioner[tflite]``).
    """
    path = os.fspath(path)
    data = _read_bytes(path)
    schema = load_schema()
    try:
        model = schema.Model.GetRootAsModel(bytearray(data), 0)
        _check_buffers(model, len(data))
        raw_meta = None
        for i in range(model.MetadataLength()):
            entry = model.Metadata(i)
            if _decode(entry.Name()) == METADATA_NAME:
                raw_meta = bytes(model.Buffers(entry.Buffer()).DataAsNumpy())
        custom = set()
        for i in range(model.OperatorCodesLength()):
            code = model.OperatorCodes(i).CustomCode()
            if code is not None:
                custom.add(_decode(code))
        if model.SubgraphsLength() < 1:
            raise TFLiteModelError(f"{path} has no subgraph; {REEXPORT}")
        main = model.Subgraphs(0)
        in_details = _details(main, main.InputsAsNumpy() if main.InputsLength() else [])
        out_details = _details(main, main.OutputsAsNumpy() if main.OutputsLength() else [])
    except TFLiteModelError:
        raise
    except Exception as exc:  # flatbuffer offsets past the end, garbage tables, ...
        raise TFLiteModelError(
            f"{path} is truncated or damaged ({type(exc).__name__}: {exc}); copy the file again or {REEXPORT}"
        ) from exc

    if raw_meta is None:
        raise TFLiteModelError(
            f"{path} carries no {METADATA_NAME} metadata, so its chunk geometry and sample rate are unknown and "
            f"it cannot be run safely; {REEXPORT}"
        )
    try:
        decoded = json.loads(raw_meta.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TFLiteModelError(f"{path}: {METADATA_NAME} is not UTF-8 JSON ({exc}); {REEXPORT}") from exc
    meta, geometry = validate_metadata(decoded, path)
    inputs = order_tensors(in_details, "input", path)
    outputs = order_tensors(out_details, "output", path)
    batch = check_signature(inputs, outputs, meta, path)
    return TFLiteModelInfo(
        path=path,
        metadata=meta,
        geometry=geometry,
        batch_size=batch,
        blank=meta["blank"],
        beam_width=meta["beam_width"],
        nchunks=meta["nchunks"],
        inputs=inputs,
        outputs=outputs,
        custom_ops=sorted(custom),
    )


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
