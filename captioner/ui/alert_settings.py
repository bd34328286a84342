"""Settings -> Name alerts (issue 49), a section of the settings dialog.

* "Alert me when someone says:": names or words, one per line (as the hotword list is edited,
  a plain-text field where Tab moves on). When someone other than the user's own microphone
  says one, the overlay shows it and a desktop notification is sent
  (:mod:`captioner.ui.name_alerts`); the words join the hotword list, so the model writes
  them (:func:`captioner.ui.settings.hotword_backend_options`).
* "Play a sound with alerts": off by default.

The list is checked on Apply: :func:`~captioner.transcript.alerts.check_alert_words`, the
built-in model's spelling when it is the chosen backend (a word it cannot write could never
be said), and the hotwords and alert words together within the hotword list's limit.
"""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QFormLayout, QGroupBox, QLabel, QPlainTextEdit, QWidget

from captioner.asr.hotword_list import MAX_HOTWORDS, HotwordError, default_model_spelling, merge_hotwords
from captioner.transcript.alerts import AlertWordError, check_alert_words, parse_alert_words
from captioner.ui.settings import Keys, Settings


class AlertSettingsBox(QGroupBox):
    """The "Name alerts" section of the settings dialog.

    Args:
        settings: read for the initial values (written by :meth:`apply`).

    Attributes:
        words: the list field; sound: the "Play a sound with alerts" check box.
    """

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__("Name alerts", parent)
        self.settings = settings
        form = QFormLayout(self)
        self.words = QPlainTextEdit("\n".join(map(str, settings.get(Keys.ALERT_WORDS))))
        self.words.setPlaceholderText("Names or words, one per line, e.g.\nMaria\nMaria Lopez")
        self.words.setToolTip(Keys.ALERT_WORDS.doc + ". Whole words only, any case; never your own microphone.")
        self.words.setAccessibleName("Alert me when someone says")
        self.words.setAccessibleDescription("Names or words, one per line. When someone else says one, the "
                                            "overlay shows it and a desktop notification is sent")
        self.words.setTabChangesFocus(True)  # Tab moves on, as in every other field
        self.words.setFixedHeight(70)
        label = QLabel("&Alert me when someone says:")
        label.setBuddy(self.words)
        form.addRow(label, self.words)
        self.sound = QCheckBox("Play a &sound with alerts")
        self.sound.setChecked(settings.get(Keys.ALERT_SOUND))
        self.sound.setToolTip(Keys.ALERT_SOUND.doc)
        self.sound.setAccessibleName("Play a sound with alerts")
        form.addRow(self.sound)

    def word_list(self, hotwords: list[str] | None = None) -> list[str]:
        """The alert words typed (checked).

        Args:
            hotwords: the hotword list they join (for the count); None: the stored one.

        Raises:
            AlertWordError: the list cannot be used (one line: what and how to fix it).
        """
        words = list(check_alert_words(parse_alert_words(self.words.toPlainText())))
        if words and self.settings.get(Keys.BACKEND) == "default":
            try:  # a word the built-in model cannot write could never be said
                spell = default_model_spelling()
            except HotwordError as exc:
                raise AlertWordError(str(exc)) from exc
            for word in words:
                problem = spell(word)
                if problem:
                    raise AlertWordError(problem.replace("hotword", "alert word"))
        listed = hotwords if hotwords is not None else [str(w) for w in self.settings.get(Keys.HOTWORDS)]
        if len(merge_hotwords(listed, words)) < len(listed) + len(
                {w.casefold() for w in words} - {h.casefold() for h in listed}):
            raise AlertWordError(f"the hotwords and alert words together are more than {MAX_HOTWORDS}; "
                                 "keep the names you answer to")
        return words

    def apply(self, settings: Settings, words: list[str]) -> None:
        """Write ``words`` (from :meth:`word_list`) and the sound choice."""
        settings.set(Keys.ALERT_WORDS, list(words))
        settings.set(Keys.ALERT_SOUND, self.sound.isChecked())
