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
