"""How the TFLite backend refuses a file: an unusable export, or a runtime that is not installed.

Below every module of the backend (:mod:`~captioner.asr.tflite.signature`,
:mod:`~captioner.asr.tflite.meta`, :mod:`~captioner.asr.tflite.runtime`): each raises them.
"""

from __future__ import annotations

from captioner.asr.base import BackendError

REEXPORT = "re-export the model with `tensorflow_asr tflite --config-path=CONFIG --output=OUT.tflite` (TensorFlowASR >= 3.1)"


class TFLiteModelError(BackendError):
    """The file is not a usable TensorFlowASR export; the message says why and how to fix it."""


class TFLiteRuntimeMissing(BackendError):
    """The Python package needed to read or run the file is not installed; the message names the extra."""
