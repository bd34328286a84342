"""Resemblyzer's GE2E voice encoder as an ONNX graph, built once from the wheel's own file.

The ``resemblyzer`` wheel (0.1.4, Apache-2.0; DESIGN section 4, "Who is speaking") ships
its pretrained speaker encoder as ``resemblyzer/pretrained.pt`` (17 MB): a PyTorch
checkpoint in the legacy (pre-1.6, non-zip) serialisation whose ``model_state`` holds a
3-layer LSTM (40 -> 256) and a 256 x 256 linear layer (Wan et al., "Generalized
End-to-End Loss for Speaker Verification", 2018; Resemblyzer's ``voice_encoder.py``).
captioner runs it on onnxruntime, which the built-in model already loads, instead of on
torch (a ~200 MB install the default app does not have):

1. :func:`read_checkpoint` reads the legacy file without torch: a restricted unpickler
   that only knows tensors, storages and ``OrderedDict`` (the layout of torch's own
   ``_legacy_load``: magic number, protocol, system info, the pickled object with storages
   as persistent ids, their keys, then each storage's raw bytes behind an int64 count);
   it refuses any other class, so a tampered file cannot run code;
2. :func:`build_graph` writes the network with the ``onnx`` package: ``MatMul`` by the
   40-band mel filterbank (librosa's, Slaney scale and norm, the one Resemblyzer's
   ``audio.wav_to_mel_spectrogram`` uses, baked in as a constant so the app never imports
   librosa), three ONNX ``LSTM`` nodes (PyTorch's gate order i, f, g, o reordered to
   ONNX's i, o, f, c; ``sequence_lens`` lets one batch hold windows of different
   lengths, each row's last hidden state is its own), ``Gemm`` + ``Relu`` and an L2
   normalisation: exactly Resemblyzer's ``VoiceEncoder.forward``.

Input ``power [B, T, 201] float32``: the power spectrogram (|rfft|^2 of 25 ms Hann
windows, 10 ms hop, n_fft 400; :func:`captioner.speakers.encoder.power_frames`);
``lengths [B] int32``: valid frames per row. Output ``embedding [B, 256] float32``,
L2-normalised and non-negative.

The graph (5.4 MB) is cached in ``platformdirs.user_cache_dir("captioner")/speaker-ge2e/``
under a name made of a hash of the source file's path, size and time and
:data:`RECIPE`, written under a temporary name and renamed into place; the install
scripts run ``python -m captioner.speakers.prepare --quiet`` once. Where the cache cannot
be written it is built in memory for the run (about 1 s). Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import numpy as np

#: Bump when the graph recipe changes (old cached graphs are then ignored).
RECIPE = "ge2e-onnx-1"
#: Resemblyzer's hparams.py: 16 kHz, 25 ms windows, 10 ms hop, 40 mel bands, 3 x 256 LSTM.
SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 40
HIDDEN = 256
LAYERS = 3
#: torch's legacy serialisation magic number (torch/serialization.py).
_MAGIC = 0x1950A86A20F9469CFC6C
_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
           "IntStorage": np.int32, "HalfStorage": np.float16, "ByteStorage": np.uint8}


class SpeakerModelError(RuntimeError):
    """The speaker encoder cannot be found, read or built (message says what and how to fix it)."""


def checkpoint_path() -> Path:
    """``pretrained.pt`` inside the installed ``resemblyzer`` package (not imported: its own
    modules need torch and webrtcvad, which captioner does not use); in the frozen app, the
    copy the bundle carries (``packaging/pyinstaller/captioner.spec``).

    Raises:
        SpeakerModelError: the package or its file is not installed.
    """
    bundled = Path(getattr(sys, "_MEIPASS", "")) / "resemblyzer" / "pretrained.pt"
    if getattr(sys, "frozen", False) and bundled.is_file():  # the frozen app carries the file alone
        return bundled
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise SpeakerModelError("the speaker model is not installed (pip package 'resemblyzer'); "
                                "run: pip install --no-deps 'resemblyzer==0.1.4'")
    path = Path(list(spec.submodule_search_locations)[0]) / "pretrained.pt"
    if not path.is_file():
        raise SpeakerModelError(f"the speaker model file {path} is missing; reinstall it: "
                                "pip install --force-reinstall --no-deps 'resemblyzer==0.1.4'")
    return path


# -- reading the legacy checkpoint -----------------------------------------------------------------
class _Storage:
    def __init__(self, dtype: type, numel: int) -> None:
        self.dtype, self.numel, self.data = np.dtype(dtype), numel, None


class _Tensor:
    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def array(self) -> np.ndarray:
        item = self.storage.dtype.itemsize
        flat = self.storage.data
        return np.lib.stride_tricks.as_strided(flat[self.offset:], self.size,
                                               tuple(s * item for s in self.stride)).copy()


def _rebuild_tensor(storage, offset, size, stride, *_ignored) -> _Tensor:
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
        if kind != "storage":
            raise pickle.UnpicklingError(f"unexpected persistent id {kind!r}")
        if key not in self.storages:
            self.storages[key] = _Storage(_DTYPES[storage_type], int(numel))
        return self.storages[key]


def read_checkpoint(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The ``model_state`` tensors of a legacy-format PyTorch checkpoint, as numpy arrays.

    Args:
        path: a ``.pt`` file written by ``torch.save`` before PyTorch 1.6 (Resemblyzer's).

    Returns:
        ``{name: array}`` (``lstm.weight_ih_l0 [1024, 40] float32``, ...).

    Raises:
        SpeakerModelError: not such a file, truncated, or it refers to anything but tensors.
    """
    storages: dict = {}
    try:
        with open(path, "rb") as f:
            if pickle.load(f) != _MAGIC:
                raise SpeakerModelError(f"{path} is not a PyTorch checkpoint of the expected (legacy) format")
            pickle.load(f)  # protocol version
            pickle.load(f)  # system info (byte order, type sizes)
            obj = _Unpickler(f, storages).load()
            keys = pickle.load(f)
            for key in keys:
                st = storages[key]
                count = int(np.frombuffer(f.read(8), "<i8")[0])
                raw = f.read(count * st.dtype.itemsize)
                if len(raw) != count * st.dtype.itemsize:
                    raise SpeakerModelError(f"{path} is truncated; reinstall the 'resemblyzer' package")
                st.data = np.frombuffer(raw, st.dtype.newbyteorder("<"))
    except SpeakerModelError:
        raise
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, ValueError, IndexError, TypeError) as exc:
        raise SpeakerModelError(f"cannot read the speaker model {path}: {exc}") from exc
    state = obj.get("model_state", obj) if isinstance(obj, dict) else None
    if not isinstance(state, dict):
        raise SpeakerModelError(f"{path} holds no model state")
    return {k: v.array() for k, v in state.items() if isinstance(v, _Tensor)}


# -- the graph -------------------------------------------------------------------------------------
def mel_filterbank() -> np.ndarray:
    """``[40, 201] float32``: librosa's mel filterbank for 16 kHz, n_fft 400 (Slaney scale and
    area norm: ``librosa.feature.melspectrogram``'s defaults, which Resemblyzer uses)."""
    import librosa

    return librosa.filters.mel(sr=SAMPLE_RATE, n_fft=N_FFT, n_mels=N_MELS).astype(np.float32)


def _onnx_gates(w: np.ndarray) -> np.ndarray:
    """PyTorch LSTM gate blocks (i, f, g, o) in ONNX's order (i, o, f, c)."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def build_graph(state: dict[str, np.ndarray], mel: np.ndarray) -> bytes:
    """The serialised ONNX model of the encoder (module docstring).

    Args:
        state: :func:`read_checkpoint`'s arrays.
        mel: ``[40, 201]`` mel filterbank.

    Raises:
        SpeakerModelError: a weight is missing or has the wrong shape.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    try:
        inits = [numpy_helper.from_array(np.ascontiguousarray(mel.T, np.float32), "mel_fb")]
        nodes = [helper.make_node("MatMul", ["power", "mel_fb"], ["mel_btf"]),
                 helper.make_node("Transpose", ["mel_btf"], ["x0"], perm=[1, 0, 2])]  # [T, B, 40]
        x = "x0"
        for layer in range(LAYERS):
            w = _onnx_gates(state[f"lstm.weight_ih_l{layer}"])[None]
            r = _onnx_gates(state[f"lstm.weight_hh_l{layer}"])[None]
            b = np.concatenate([_onnx_gates(state[f"lstm.bias_ih_l{layer}"]),
                                _onnx_gates(state[f"lstm.bias_hh_l{layer}"])])[None]
            if w.shape[1] != 4 * HIDDEN or r.shape[1:] != (4 * HIDDEN, HIDDEN):
                raise SpeakerModelError(f"unexpected LSTM weight shapes in layer {layer}: {w.shape}, {r.shape}")
            inits += [numpy_helper.from_array(a.astype(np.float32), f"{n}{layer}") for n, a in
                      (("W", w), ("R", r), ("B", b))]
            nodes.append(helper.make_node("LSTM", [x, f"W{layer}", f"R{layer}", f"B{layer}", "lengths"],
                                          [f"y{layer}", f"h{layer}"], hidden_size=HIDDEN))
            nodes.append(helper.make_node("Squeeze", [f"y{layer}", "axis1"], [f"x{layer + 1}"]))
            x = f"x{layer + 1}"
        inits += [numpy_helper.from_array(np.array([1], np.int64), "axis1"),
                  numpy_helper.from_array(np.array([0], np.int64), "axis0"),
                  numpy_helper.from_array(state["linear.weight"].astype(np.float32), "lin_w"),
                  numpy_helper.from_array(state["linear.bias"].astype(np.float32), "lin_b")]
    except KeyError as exc:
        raise SpeakerModelError(f"the speaker model lacks the weight {exc}") from exc
    nodes += [helper.make_node("Squeeze", [f"h{LAYERS - 1}", "axis0"], ["last"]),  # [B, 256]
              helper.make_node("Gemm", ["last", "lin_w", "lin_b"], ["lin"], transB=1),
              helper.make_node("Relu", ["lin"], ["pos"]),
              helper.make_node("LpNormalization", ["pos"], ["embedding"], axis=1, p=2)]
    graph = helper.make_graph(
        nodes, "ge2e_voice_encoder",
        [helper.make_tensor_value_info("power", TensorProto.FLOAT, ["B", "T", N_FFT // 2 + 1]),
         helper.make_tensor_value_info("lengths", TensorProto.INT32, ["B"])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["B", HIDDEN])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="captioner.speakers.prepare")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _cache_file(src: Path, root: Path) -> Path:
    """The cached graph's name: a hash of the source file's size and modification time and the
    recipe (cheap: no 17 MB read and no ``onnx`` import when the graph is already there)."""
    st = src.stat()
    key = f"{RECIPE} {src.resolve()} {st.st_size} {st.st_mtime_ns}"
    return root / f"ge2e-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"


def default_cache_root() -> Path:
    """``platformdirs.user_cache_dir("captioner") / "speaker-ge2e"``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("captioner")) / "speaker-ge2e"


def prepared_model(cache_root: str | os.PathLike | None = None) -> str | bytes:
    """The encoder graph: a cached ``.onnx`` path, or the model's bytes when the cache folder
    cannot be written (built in memory for this run).

    Raises:
        SpeakerModelError: the package file is missing or unreadable, or onnx/librosa are missing.
    """
    src = checkpoint_path()
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    try:
        target = _cache_file(src, root)
    except OSError as exc:
        raise SpeakerModelError(f"cannot read the speaker model {src}: {exc}") from exc
    if target.is_file() and target.stat().st_size > 1_000_000:
        return str(target)
    try:
        data = build_graph(read_checkpoint(src), mel_filterbank())
    except ImportError as exc:
        raise SpeakerModelError(f"preparing the speaker model needs the 'onnx' and 'librosa' packages ({exc})") from exc
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".ge2e-", suffix=".onnx", dir=root)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
        for old in root.glob("ge2e-*.onnx"):
            if old != target:
                old.unlink(missing_ok=True)
        return str(target)
    except OSError:
        return data


def main(argv: list[str] | None = None) -> int:
    """``python -m captioner.speakers.prepare [--quiet]``: build and cache the speaker encoder now
    (the install scripts run it once). Returns 0 when it is cached, 1 otherwise (message on stderr;
    captioner then builds it at first use, or captions without speaker labels)."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m captioner.speakers.prepare",
                                     description="Prepare captioner's speaker encoder in the user's cache folder.")
    parser.add_argument("--quiet", action="store_true", help="print nothing unless it fails")
    args = parser.parse_args(argv)
    try:
        model = prepared_model()
    except SpeakerModelError as exc:
        print(f"captioner: the speaker model could not be prepared: {exc}", file=sys.stderr)
        return 1
    if not isinstance(model, str):
        print("captioner: the speaker model cache folder cannot be written; it is built at each start",
              file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"captioner: speaker model ready: {model}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
