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
needs one creates it and reports a failure with a clear message).
"""

from __future__ import annotations

import os
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
