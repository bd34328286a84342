"""Issue 13: a file source's caption label is short (not the whole file name, a full line at
36 pt) and can be set in the settings dialog."""

from __future__ import annotations

import pytest

from captioner.ui.settings import Keys
from captioner.ui.source_panel import FILE_LABEL_CHARS, file_label

pytestmark = pytest.mark.gui


def test_the_label_is_the_short_file_name():
    assert file_label("/talks/keynote.wav") == "keynote"
    long = file_label("/rec/Quarterly all-hands meeting recording 2026-11-30 final v2.wav")
    assert len(long) <= FILE_LABEL_CHARS and long.endswith("…") and long.startswith("Quarterly")
    assert file_label("") == "File"
    assert file_label("/rec/x.wav", "  Board  ") == "Board"


def test_the_window_uses_the_label_setting(make_window, settings):
    win, _ = make_window()
    assert [s.label for s in win.build_config().sources] == ["talk"]
    settings.set(Keys.FILE_LABEL, "Panel")
    assert [s.label for s in win.build_config().sources] == ["Panel"]


def test_the_settings_dialog_edits_the_file_label(qtbot, settings):
    from captioner.ui.settings_dialog import SettingsDialog

    d = SettingsDialog(settings)
    qtbot.addWidget(d)
    d.file_label.setText("Lecture")
    assert d.apply()
    assert settings.get(Keys.FILE_LABEL) == "Lecture"
    d.file_label.setText("")
    assert d.apply()
    assert settings.get(Keys.FILE_LABEL) == ""  # empty: the file's name
