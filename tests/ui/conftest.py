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


@pytest.fixture(autouse=True)
def _no_modal_quit_question(monkeypatch):
    """Closing a window with unsaved text asks Save/Discard/Cancel in a modal box; tests that do not
    test that question answer "discard" (teardown closes every window)."""
    from captioner.ui.main_window import MainWindow

    monkeypatch.setattr(MainWindow, "ask_unsaved", lambda self: "discard")
