"""Issue 28: the hotword list in Settings round-trips through QSettings, bad lists are refused
in the dialog, and the list reaches the built-in and the remote backend."""

from __future__ import annotations

import pytest

from captioner.asr.hotword_list import DEFAULT_BOOST, MAX_HOTWORDS
from captioner.ui.settings import Keys, Settings, hotword_backend_options
from captioner.ui.settings_dialog import SettingsDialog

pytestmark = pytest.mark.gui

WORDS = ["Siobhan", "Okonkwo", "Nakamura contract", "Zoë Müller", "C#"]


def test_the_list_round_trips_through_qsettings(tmp_path):
    path = str(tmp_path / "s.ini")
    first = Settings.from_file(path)
    assert first.get(Keys.HOTWORDS) == [] and first.get(Keys.HOTWORD_BOOST) == DEFAULT_BOOST
    first.set(Keys.HOTWORDS, WORDS)
    first.set(Keys.HOTWORD_BOOST, 7.5)
    first.sync()
    again = Settings.from_file(path)
    assert again.get(Keys.HOTWORDS) == WORDS and again.get(Keys.HOTWORD_BOOST) == 7.5
    assert hotword_backend_options(again, "default") == (("hotwords", tuple(WORDS)), ("hotword_boost", 7.5))
    assert dict(hotword_backend_options(again, "remote"))["hotwords"] == tuple(WORDS)
    assert hotword_backend_options(again, "audio8") == ()


@pytest.fixture
def dialog(qtbot, settings):
    d = SettingsDialog(settings)
    qtbot.addWidget(d)
    d.show()
    return d


def test_the_dialog_edits_the_list(dialog, settings):
    dialog.hotwords.setPlainText("# our team\nSiobhan\n\n  Okonkwo  \nSiobhan\nNakamura   contract\n")
    dialog.hotword_boost.setValue(3.5)
    assert dialog.apply() is True
    assert settings.get(Keys.HOTWORDS) == ["Siobhan", "Okonkwo", "Nakamura contract"]
    assert settings.get(Keys.HOTWORD_BOOST) == 3.5
    reopened = SettingsDialog(settings)
    assert reopened.hotwords.toPlainText().splitlines() == ["Siobhan", "Okonkwo", "Nakamura contract"]
    reopened.close()


@pytest.mark.parametrize("text, needle", [
    ("\n".join(f"Word{i}" for i in range(MAX_HOTWORDS + 1)), f"more than {MAX_HOTWORDS}"),
    ("Uni\U0001f984corn", "cannot spell"),
])
def test_a_bad_list_is_refused_and_nothing_is_written(dialog, settings, text, needle):
    settings.set(Keys.HOTWORDS, ["Siobhan"])
    dialog.hotwords.setPlainText(text)
    dialog.hotword_boost.setValue(9.0)
    assert dialog.apply() is False
    assert dialog.error_label.isVisible() and needle in dialog.error_label.text()
    assert settings.get(Keys.HOTWORDS) == ["Siobhan"] and settings.get(Keys.HOTWORD_BOOST) == DEFAULT_BOOST
