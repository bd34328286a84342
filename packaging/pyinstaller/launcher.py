"""Entry point of the frozen app: the same ``captioner`` command line as the pip install."""

import multiprocessing
import os
import sys


def _give_windowed_builds_streams() -> None:
    """Windowed builds (captioner-gui.exe, the macOS .app) start with no stdout/stderr.

    Messages and tracebacks then go to ``captioner.log`` in the data folder (or nowhere), never
    to ``None``, which would turn every print into an error.
    """
    if sys.stdout is not None and sys.stderr is not None:
        return
    try:
        from captioner.paths import data_dir

        folder = data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        stream = open(folder / "captioner.log", "a", encoding="utf-8", buffering=1)  # noqa: SIM115
    except OSError:
        stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    if sys.stdout is None:
        sys.stdout = stream
    if sys.stderr is None:
        sys.stderr = stream


if __name__ == "__main__":
    multiprocessing.freeze_support()
    _give_windowed_builds_streams()
    from captioner.cli import main

    sys.exit(main())
