"""What the user is told when a caption run fails: one message and a stable code, never a traceback.

Used by :class:`~captioner.engine.qt_worker.EngineWorker` for the ``error`` signal the
window shows, and by the tests that check the wording.
"""

from __future__ import annotations

from typing import Sequence


#: Formats the file source reads (libsndfile through soundfile, see captioner.audio.fileio).
FILE_FORMATS = "WAV, FLAC, OGG or MP3"


def describe_error(exc: BaseException, during: str, kinds: Sequence[str] = ()) -> tuple[str, str]:
    """A user-facing message and a stable code for an engine failure (never a traceback).

    Args:
        exc: the exception.
        during: ``"load"``, ``"sources"``, ``"start"``, ``"run"`` or ``"stop"``.
        kinds: the :attr:`SourceSpec.kind` of each source of the run, so an audio problem
            gets advice that fits it (a file: formats and conversion; a device: reconnect
            and choose it again in the window's device lists).

    Returns:
        ``(message, code)``: what happened and what to do. Codes: ``model_missing``,
        ``backend_missing``, ``model_error``, ``file_error``, ``device_error``,
        ``stop_error``, ``engine_error``.
    """
    detail = str(exc).strip() or type(exc).__name__
    if during == "load":
        if "not found" in detail.lower() or isinstance(exc, FileNotFoundError):
            return (f"The model was not found: {detail}. Choose an existing model in the Model box, "
                    "or switch back to the built-in default model.", "model_missing")
        if isinstance(exc, ImportError):
            return (f"This model needs software that is not installed ({detail}). Install the matching extra "
                    "(for example pip install 'captioner[audio8]') or use the built-in default model.",
                    "backend_missing")
        return (f"The model could not be loaded: {detail}. Check the Model setting or use the built-in "
                "default model.", "model_error")
    if during == "sources" or type(exc).__name__ == "SourceError":
        detail = detail.rstrip(". ")  # the sentences below add their own full stop
        if "file" in kinds:
            advice = "" if "convert" in detail.lower() else (
                f" Choose a {FILE_FORMATS} file with Browse…, or convert it first with ffmpeg or sox.")
            return f"The audio file could not be read: {detail}.{advice}", "file_error"
        if "microphone" not in kinds:  # a monitor source is never busy, nor plugged in
            return (f"System audio could not be recorded: {detail}. Then press Refresh devices and choose the "
                    "source again in the System audio list.", "device_error")
        return (f"The audio device could not be used: {detail}. Check that it is connected and not used by "
                "another program, press Refresh devices, and choose it again in the Microphone or System "
                "audio list.", "device_error")
    if during == "stop":
        return (f"Stopping did not finish cleanly: {detail}. The transcript so far is kept.", "stop_error")
    return (f"Captioning stopped because of an error: {detail}. The transcript so far is kept; "
            "press Start to continue.", "engine_error")
