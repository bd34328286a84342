"""GUI tests run offscreen; every test gets its own settings file."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402


@pytest.fixture
def settings(tmp_path):
    """Typed settings in a throw-away INI file (never the user's real config)."""
    from captioner.ui.settings import Settings

    return Settings.from_file(str(tmp_path / "captioner.ini"))


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path, monkeypatch):
    """Journals and autosaves of a test go to its own folder, never the user's data dir."""
    monkeypatch.setenv("CAPTIONER_DATA_DIR", str(tmp_path / "captioner-data"))
