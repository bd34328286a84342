"""Choose and create the TFLite interpreter for a TensorFlowASR export.

Runtime facts (DESIGN section 3, measured on the development machines and noted in tensorflowasr
3.1.1 ``app_util.convert_tflite``):

* Real TensorFlowASR exports use Select-TF ("Flex") ops. ``ai-edge-litert`` and ``tflite-runtime``
  load them but fail at ``allocate_tensors()``; only full ``tensorflow<2.20`` (2.20 dropped the Flex
  delegate from the pip wheel; ``tensorflow-cpu`` lacks it too) runs them, with ``tensorflow_text``
  of the same minor imported first (its kernels are registered through
  ``InterpreterWithCustomOps``, as tensorflow-text documents for TFLite).
* Builtin-only files run on LiteRT (``ai-edge-litert``, numpy 2 compatible), the ``tflite`` extra.

The choice is made from the op codes in the file (:attr:`TFLiteModelInfo.needs_flex`), and a missing
package becomes a :class:`TFLiteRuntimeMissing` naming the extra to install, never an interpreter
traceback.
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from typing import Any

from captioner.asr.tflite.errors import TFLiteModelError, TFLiteRuntimeMissing
from captioner.asr.tflite.meta import FLEX_PREFIX, TFTEXT_PREFIX, TFLiteModelInfo

LITERT = "litert"
TENSORFLOW = "tensorflow"
#: First TensorFlow release whose pip wheel has no Flex delegate (tensorflowasr app_util notes).
TF_NO_FLEX = (2, 20)

FLEX_EXTRA = "pip install 'captioner[tflite-flex]'  (tensorflow<2.20 and tensorflow-text of the same minor)"
LITERT_EXTRA = "pip install 'captioner[tflite]'  (ai-edge-litert)"


def choose_runtime(info: TFLiteModelInfo, prefer: str = "auto") -> str:
    """Pick the runtime a file needs.

    Args:
        info: the inspected file.
        prefer: ``"auto"`` (Flex/TFText ops -> TensorFlow, builtin-only -> LiteRT), ``"litert"`` or
            ``"tensorflow"``.

    Returns:
        :data:`LITERT` or :data:`TENSORFLOW`.

    Raises:
        TFLiteModelError: the file uses a custom op that no runtime registers, or LiteRT was asked
            for a Flex model.
        ValueError: unknown ``prefer``.
    """
    unknown = [op for op in info.custom_ops if not op.startswith((FLEX_PREFIX, TFTEXT_PREFIX))]
    if unknown:
        raise TFLiteModelError(
            f"{info.path} uses custom op(s) {', '.join(unknown)} that no TFLite runtime provides (a GPU-only "
            "CudnnRNNV3 means it was converted with a GPU visible); re-export it with `tensorflow_asr tflite` "
            "on a CPU-only machine"
        )
    if prefer not in ("auto", LITERT, TENSORFLOW):
        raise ValueError(f"runtime must be 'auto', 'litert' or 'tensorflow', got {prefer!r}")
    if prefer == LITERT and info.needs_flex:
        raise TFLiteModelError(
            f"{info.path} uses Select-TF (Flex) ops, which LiteRT cannot run; use runtime 'auto' or "
            f"'tensorflow' and {FLEX_EXTRA}"
        )
    if prefer != "auto":
        return prefer
    return TENSORFLOW if info.needs_flex else LITERT


def _tensorflow_version() -> tuple[int, int] | None:
    for dist in ("tensorflow", "tensorflow-cpu", "tf-nightly"):
        try:
            parts = importlib.metadata.version(dist).split(".")
            return int(parts[0]), int(parts[1])
        except (importlib.metadata.PackageNotFoundError, ValueError, IndexError):
            continue
    return None


def _tensorflow_interpreter(info: TFLiteModelInfo, num_threads: int | None) -> Any:
    version = _tensorflow_version()
    if version is None:
        raise TFLiteRuntimeMissing(
            f"{os.path.basename(info.path)} uses Select-TF (Flex) ops, which only full TensorFlow runs; install "
            f"them with `{FLEX_EXTRA}`"
        )
    if version >= TF_NO_FLEX and info.needs_flex:
        raise TFLiteRuntimeMissing(
            f"TensorFlow {version[0]}.{version[1]} is installed, but TensorFlow >= 2.20 has no Flex delegate, "
            f"which {os.path.basename(info.path)} needs; `{FLEX_EXTRA}`"
        )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    registerers: list[Any] = []
    try:
        import tensorflow_text  # noqa: F401  (must come before the interpreter: registers text kernels)

        registerers = list(tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    except ImportError as exc:
        if any(op.startswith(TFTEXT_PREFIX) for op in info.custom_ops):
            raise TFLiteRuntimeMissing(
                f"{os.path.basename(info.path)} uses tensorflow-text ops; `{FLEX_EXTRA}`"
            ) from exc
    try:
        from tensorflow.lite.python import interpreter as tf_interpreter
    except ImportError as exc:
        raise TFLiteRuntimeMissing(f"TensorFlow could not be imported ({exc}); `{FLEX_EXTRA}`") from exc
    with warnings.catch_warnings():  # "tf.lite.Interpreter is deprecated": it is the only Flex runtime
        warnings.simplefilter("ignore", UserWarning)
        if registerers:
            return tf_interpreter.InterpreterWithCustomOps(
                model_path=info.path, custom_op_registerers=registerers, num_threads=num_threads
            )
        return tf_interpreter.Interpreter(model_path=info.path, num_threads=num_threads)


def _litert_interpreter(info: TFLiteModelInfo, num_threads: int | None) -> Any:
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        if _tensorflow_version() is not None:  # the flex extra's TensorFlow runs builtin models too
            return _tensorflow_interpreter(info, num_threads)
        raise TFLiteRuntimeMissing(
            f"{os.path.basename(info.path)} needs the LiteRT runtime; install it with `{LITERT_EXTRA}`"
        ) from None
    return Interpreter(model_path=info.path, num_threads=num_threads)


def make_interpreter(info: TFLiteModelInfo, runtime: str = "auto", num_threads: int | None = None) -> tuple[Any, str]:
    """Create and allocate an interpreter for ``info`` on the right runtime.

    Args:
        info: from :func:`captioner.asr.tflite.meta.read_tflite_info`.
        runtime: ``"auto"``, ``"litert"`` or ``"tensorflow"`` (see :func:`choose_runtime`).
        num_threads: interpreter CPU threads (None: the runtime's default).

    Returns:
        ``(interpreter, runtime name)``; tensors are allocated.

    Raises:
        TFLiteRuntimeMissing: the needed package is not installed (the message names the extra).
        TFLiteModelError: the runtime cannot load or allocate the file (message says why).
    """
    chosen = choose_runtime(info, runtime)
    make = _tensorflow_interpreter if chosen == TENSORFLOW else _litert_interpreter
    try:
        interpreter = make(info, num_threads)
        interpreter.allocate_tensors()
    except (TFLiteRuntimeMissing, TFLiteModelError):
        raise
    except Exception as exc:  # interpreter errors are RuntimeError/ValueError with C++ text
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "Flex" in str(exc) or "Select TensorFlow op" in str(exc):
            raise TFLiteRuntimeMissing(
                f"{os.path.basename(info.path)} needs the TensorFlow Flex delegate, which this runtime lacks "
                f"({first}); `{FLEX_EXTRA}`"
            ) from exc
        raise TFLiteModelError(f"the {chosen} runtime could not load {info.path}: {first}") from exc
    return interpreter, chosen
