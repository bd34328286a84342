"""Settings -> Speakers: who is speaking (issue 38), a section of the settings dialog.

* "Speaker labels": Automatic (the default), Off, or At most N speakers (1-20); it reaches the
  engine at the next Start (:func:`captioner.ui.settings.speaker_options` ->
  ``EngineConfig.speakers`` -> ``LiveCaptioner(speakers=...)``). The microphone is always its
  own label ("You"); system audio and files are split into "Speaker 1", "Speaker 2", ...
* "Show speaker in the overlay": Off, At a change of speaker (the default), Every line
  (:attr:`captioner.ui.caption_model.CaptionModel.speaker_labels`).
* One name field per speaker heard this session; a changed field renames that speaker when the
  dialog is applied, as a double-click in the transcript pane does
  (:meth:`captioner.ui.speaker_labels.SpeakerLabels.rename`).
"""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QWidget

from captioner.speakers.options import AUTO_MAX_SPEAKERS
from captioner.ui.settings import Keys, Settings

#: Speaker-label choices: (setting value, text shown).
MODES = (("auto", "Automatic"), ("off", "Off"), ("max", "At most this many speakers:"))
#: Overlay choices: (setting value, text shown).
OVERLAY_MODES = (("off", "Off"), ("change", "At a change of speaker"), ("every", "Every line"))


class SpeakerSettingsBox(QGroupBox):
    """The "Speakers" section of the settings dialog.

    Args:
        settings: read for the initial choices (written by :meth:`apply`).
        speakers: the window's :class:`~captioner.ui.speaker_labels.SpeakerLabels` (its
            ``speakers()`` lists ``(transcript, id)`` pairs and ``rename(transcript, id, name)``
            names one), or None: no rename list.

    Attributes:
        mode, max_speakers, overlay_mode: the choice widgets.
        names: ``[(transcript, speaker id, QLineEdit)]``, one per speaker heard.
    """

    def __init__(self, settings: Settings, speakers=None, parent: QWidget | None = None) -> None:
        super().__init__("Speakers", parent)
        self.speakers = speakers
        form = QFormLayout(self)
        self.mode = QComboBox()
        for value, text in MODES:
            self.mode.addItem(text, value)
        self.mode.setCurrentIndex(max(0, self.mode.findData(settings.get(Keys.SPEAKER_MODE))))
        self.mode.setToolTip(Keys.SPEAKER_MODE.doc + ". Takes effect at the next Start.")
        self.max_speakers = QSpinBox()
        self.max_speakers.setRange(1, AUTO_MAX_SPEAKERS)
        self.max_speakers.setValue(settings.get(Keys.SPEAKER_MAX))
        self.max_speakers.setAccessibleName("Most speakers")
        self.max_speakers.setToolTip(Keys.SPEAKER_MAX.doc)
        row = QHBoxLayout()
        row.addWidget(self.mode, 1)
        row.addWidget(self.max_speakers)
        label = QLabel("Speaker &labels:")
        label.setBuddy(self.mode)
        form.addRow(label, row)
        self.mode.currentIndexChanged.connect(self._update_enabled)
        self._update_enabled()
        self.overlay_mode = QComboBox()
        for value, text in OVERLAY_MODES:
            self.overlay_mode.addItem(text, value)
        self.overlay_mode.setCurrentIndex(max(0, self.overlay_mode.findData(settings.get(Keys.OVERLAY_SPEAKER_LABELS))))
        self.overlay_mode.setToolTip(Keys.OVERLAY_SPEAKER_LABELS.doc)
        form.addRow("Show speaker in the &overlay:", self.overlay_mode)
        self.names: list[tuple[object, str, QLineEdit]] = []
        heard = list(speakers.speakers()) if speakers is not None else []
        runs = list(dict.fromkeys(id(t) for t, _ in heard))
        for transcript, speaker in heard:
            edit = QLineEdit(transcript.speaker_name(speaker) if transcript.speaker_name(speaker) != speaker else "")
            edit.setPlaceholderText(speaker)
            title = speaker if len(runs) < 2 else f"{speaker} (run {runs.index(id(transcript)) + 1})"
            edit.setAccessibleName(f"Name of {title}")
            form.addRow(f"{title}:", edit)
            self.names.append((transcript, speaker, edit))
        if speakers is not None and not heard:
            none = QLabel("No speakers heard yet. Once captions show “Speaker 1”, name them here or by "
                          "double-clicking the name in the transcript.")
            none.setWordWrap(True)
            form.addRow(none)

    def _update_enabled(self) -> None:
        self.max_speakers.setEnabled(self.mode.currentData() == "max")

    def apply(self, settings: Settings) -> None:
        """Write the choices to ``settings`` and rename every speaker whose name field changed."""
        settings.set(Keys.SPEAKER_MODE, self.mode.currentData())
        settings.set(Keys.SPEAKER_MAX, int(self.max_speakers.value()))
        settings.set(Keys.OVERLAY_SPEAKER_LABELS, self.overlay_mode.currentData())
        for transcript, speaker, edit in self.names:
            name = edit.text().strip()
            if (name or speaker) != transcript.speaker_name(speaker):
                self.speakers.rename(transcript, speaker, name)
