"""The speaker encoders' prepared ONNX graphs, cached in the user's cache folder (issues 38, 51).

Both encoders (:mod:`~captioner.speakers.prepare`'s GE2E and :mod:`~captioner.speakers.campplus`'s
CAM++) build their graph once from a file inside an installed wheel; this module names, writes and
finds that cached graph (the install scripts run ``python -m captioner.speakers.prepare --quiet``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Callable

from captioner.speakers.torch_checkpoint import SpeakerModelError


def cached_graph(src: Path, root: Path, recipe: str, stem: str, build: Callable[[], bytes]) -> str | bytes:
    """A graph built from the package file ``src``, cached as ``root/<stem>-<hash>.onnx``.

    The hash covers ``recipe`` and the source's resolved path, size and modification time
    (cheap: no read of the weights and no ``onnx`` import when the graph is already there).
    A new graph is written under a temporary name and renamed into place; older graphs of the
    same ``stem`` are removed.

    Returns:
        the cached file's path, or ``build()``'s bytes when the cache cannot be written.

    Raises:
        SpeakerModelError: ``src`` cannot be read, or ``build`` fails (an ImportError of
            ``onnx`` or ``librosa`` is turned into one).
    """
    try:
        st = src.stat()
    except OSError as exc:
        raise SpeakerModelError(f"cannot read the speaker model {src}: {exc}") from exc
    key = f"{recipe} {src.resolve()} {st.st_size} {st.st_mtime_ns}"
    target = root / f"{stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"
    if target.is_file() and target.stat().st_size > 1_000_000:
        return str(target)
    try:
        data = build()
    except ImportError as exc:
        raise SpeakerModelError(f"preparing the speaker model needs a package that is missing ({exc}); "
                                "it needs 'onnx' (and 'librosa' for GE2E)") from exc
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}-", suffix=".onnx", dir=root)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except OSError:
            Path(tmp).unlink(missing_ok=True)
            raise
        for old in root.glob(f"{stem}-*.onnx"):
            if old != target:
                old.unlink(missing_ok=True)
        return str(target)
    except OSError:
        return data


def cache_base() -> Path:
    """``platformdirs.user_cache_dir("captioner")``: each encoder keeps its graph in a subfolder."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("captioner"))


def open_session(graph: str | bytes, what: str):
    """An ONNX Runtime session of a prepared graph (a path or its bytes): one thread, arena off
    (:func:`captioner.asr.vad.small_session`; the decoder keeps the other core).

    Raises:
        SpeakerModelError: the graph cannot be loaded (``what`` names the model in the message).
    """
    from captioner.asr.vad import small_session

    try:
        return small_session(graph)
    except Exception as exc:  # onnxruntime raises its own exception types for corrupt files
        raise SpeakerModelError(f"cannot load {what}: {exc}") from exc


__all__ = ["cache_base", "cached_graph", "open_session"]
