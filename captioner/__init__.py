"""captioner: live captions from microphone and system audio with streaming ASR models."""

__version__ = "0.1.0"


def _map_source_tree_resources() -> None:
    """Make ``captioner.resources`` the top-level ``resources/`` folder when running from a source tree.

    pyproject.toml maps that folder into the package (``package-dir``), so a wheel, an install and the
    PyInstaller bundle hold ``captioner/resources/``; a checkout on ``sys.path`` (tests, ``python -m
    captioner``) has no such folder and gets the same module, loaded from ``../resources`` here.
    """
    import importlib.util
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    # a leftover captioner/resources/ holding only __pycache__ (a checkout from before the move) is no package
    if (here / "resources" / "__init__.py").is_file() or "captioner.resources" in sys.modules:
        return
    folder = here.parent / "resources"
    if not (folder / "__init__.py").is_file():
        return
    spec = importlib.util.spec_from_file_location(
        "captioner.resources", folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["captioner.resources"] = module
    spec.loader.exec_module(module)


_map_source_tree_resources()


def _no_runtime_telemetry() -> None:
    """Keep ONNX Runtime from collecting telemetry (DESIGN: no network at run time).

    onnxruntime 1.32's Linux wheel logs events (process info, session creation) to a
    SQLite queue under the user cache folder (``Microsoft/DeveloperTools/.onnxruntime``,
    with a persistent device ID) for upload to ``mobile.events.data.microsoft.com``. Its
    ``disable_telemetry_events()`` comes too late (the process event is logged when the
    runtime starts); the ``ORT_DISABLE_TELEMETRY`` variable, read at start, stops all of
    it. Set here, before anything imports onnxruntime; a value the user set is kept.
    """
    import os

    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


_no_runtime_telemetry()
