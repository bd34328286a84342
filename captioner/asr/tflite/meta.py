"""Inspect a TensorFlowASR ``.tflite`` export without running it (and without TensorFlow).

Facts from DESIGN section 3 and the ``tensorflowasr`` 3.1.1 wheel (``utils/tflite_util.py``,
``inferences.py``):

* ``tensorflow_asr tflite`` stores UTF-8 JSON under the flatbuffer ``Model.metadata`` entry
  ``TFASR_METADATA``: ``{"signal_chunk_size", "signal_chunk_step", "sample_rate", "blank",
  "beam_width", "nchunks"}`` (ints). No interpreter API returns it, so it is read here with the
  TFLite flatbuffer schema (LiteRT's ``schema_py_generated``).
* The inputs and outputs, their order and the carried states: :mod:`captioner.asr.tflite.signature`.
* Select-TF ("Flex") ops appear as custom op codes ``Flex*``; tensorflow-text kernels as ``TFText>*``.

A file that cannot be run safely is refused with :class:`~captioner.asr.tflite.errors.TFLiteModelError`, whose message says
what is wrong and how to fix it (usually: re-export with ``tensorflow_asr tflite``).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Sequence

import numpy as np

from captioner.asr.geometry import ChunkGeometry, GeometryError
from captioner.asr.tflite.errors import REEXPORT, TFLiteModelError, TFLiteRuntimeMissing
from captioner.asr.tflite.signature import StatePair, TensorInfo, check_signature, decode_name, order_tensors, pair_states

#: Flatbuffer metadata entry written by ``tensorflow_asr tflite`` (tensorflowasr ``tflite_util``).
METADATA_NAME = "TFASR_METADATA"
#: Integer keys of the metadata JSON (tensorflowasr ``BaseModel.get_tflite_metadata``).
METADATA_KEYS = ("signal_chunk_size", "signal_chunk_step", "sample_rate", "blank", "beam_width", "nchunks")
#: Sample rates (Hz) accepted from metadata; speech models use 8-48 kHz.
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 4000, 192000
#: Custom-op prefixes some runtime registers: Flex delegate (TensorFlow) and tensorflow-text kernels.
FLEX_PREFIX, TFTEXT_PREFIX = "Flex", "TFText>"

# flatbuffer TensorType -> numpy dtype (TFLite schema enum values)
_TENSOR_TYPES = {
    0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 5: np.bytes_, 6: np.bool_,
    7: np.int16, 9: np.int8, 10: np.float64, 12: np.uint64, 15: np.uint32, 16: np.uint16,
}  # fmt: skip


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
            if decode_name(entry.Name()) == METADATA_NAME:
                raw_meta = bytes(model.Buffers(entry.Buffer()).DataAsNumpy())
        custom = set()
        for i in range(model.OperatorCodesLength()):
            code = model.OperatorCodes(i).CustomCode()
            if code is not None:
                custom.add(decode_name(code))
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
