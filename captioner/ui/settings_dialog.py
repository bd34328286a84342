"""SettingsDialog: caption look, labels, turns, behaviour and shortcuts, written through :mod:`captioner.ui.settings`."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QDialogButtonBox,
    QFontComboBox,
    QFormLayout,
    QFrame,
    QKeySequenceEdit,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from captioner.asr.hotword_list import HotwordError, check_hotwords, default_model_spelling, parse_hotwords
from captioner.engine.qt_emit import emit
from captioner.transcript.alerts import AlertWordError
from captioner.transcript.profanity import normalise_words
from captioner.ui.alert_settings import AlertSettingsBox
from captioner.ui.caption_page import CaptionPageBox
from captioner.ui.colour_presets import CUSTOM, PRESETS, matching_preset, preset_named
from captioner.ui.global_shortcuts.keys import ComboError, check_global, parse
from captioner.ui.overlay import always_on_top_note, contrast_ratio
from captioner.ui.overlay_keys import MOVE_SHORTCUT
from captioner.ui.qt_helpers import add_slider_row, guard_wheel, standard_keys
from captioner.ui.settings import Keys, Settings
from captioner.ui.speaker_settings import SpeakerSettingsBox



def fixed_shortcuts() -> dict[str, str]:
    """Key text -> action name of the shortcuts the main window binds itself (menu entries),
    which the editable ones must not take.

    (A function: standard keys are platform-dependent and need the running QGuiApplication.)
    """
    fixed = {}
    for name, key, fallback in (("Save transcript as…", QKeySequence.StandardKey.Save, "Ctrl+S"),
                                ("Quit", QKeySequence.StandardKey.Quit, "Ctrl+Q"),
                                ("Settings…", QKeySequence.StandardKey.Preferences, "Ctrl+,")):
        for seq in standard_keys(key, fallback):
            fixed.setdefault(seq.toString(), name)
    fixed.setdefault(QKeySequence(MOVE_SHORTCUT).toString(), "Move or resize overlay with keys")
    return fixed


def readable_text_colour(background: QColor) -> str:
    """Black or white, whichever contrasts more with ``background`` (always >= 4.5:1)."""
    black, white = QColor("#000000"), QColor("#ffffff")
    return "#000000" if contrast_ratio(black, background) >= contrast_ratio(white, background) else "#ffffff"


class ColorButton(QPushButton):
    """A button showing a colour; clicking opens a colour picker.

    Its accessible name is ``name`` (its text is the colour's code, no name); the style sheet
    that paints it keeps a visible focus ring (issue 39: focus always visible)."""

    def __init__(self, colour: str, name: str = "") -> None:
        super().__init__()
        if name:
            self.setAccessibleName(name)
        self.set_colour(colour)
        self.clicked.connect(self._pick)

    def set_colour(self, colour: str) -> None:
        """Show ``colour`` (``#rrggbb``)."""
        self.colour = QColor(colour).name()
        self.text_colour = readable_text_colour(QColor(self.colour))
        self.setText(self.colour)
        self.setAccessibleDescription(f"colour {self.colour}; press to choose another")
        self.setStyleSheet(f"QPushButton {{ background: {self.colour}; color: {self.text_colour}; padding: 4px; "
                           f"border: 1px solid palette(mid) }} QPushButton:focus {{ border: 3px solid "
                           f"{'#1e64c8' if self.text_colour == '#000000' else '#ffbf00'} }}")

    def _pick(self) -> None:
        chosen = QColorDialog.getColor(QColor(self.colour), self, "Choose a colour")
        if chosen.isValid():
            self.set_colour(chosen.name())


class SettingsDialog(QDialog):
    """Edit overlay look/behaviour, turn sensitivity and long-silence limit, source labels and shortcuts.

    Args:
        settings: the typed settings; written when the user presses OK or Apply.
        shortcut_status: where the shortcuts work (desktop-wide, and by which mechanism).
        speakers: the main window's :class:`~captioner.ui.speaker_labels.SpeakerLabels`, for the
            rename list of the "Speakers" section (None: no list).

    Signals:
        applied(): the settings were written (views re-read them).
    """

    applied = Signal()

    def __init__(self, settings: Settings, parent=None, shortcut_status: str = "", caption_page=None,
                 speakers=None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.setWindowTitle("captioner settings")
        # above the always-on-top overlay: a big overlay (5 lines at 60 pt) must never cover OK/Apply
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, True)
        s = settings
        form = QFormLayout()
        self.lines = QSpinBox()
        self.lines.setRange(1, 5)
        self.lines.setValue(s.get(Keys.OVERLAY_LINES))
        form.addRow("Caption lines:", self.lines)
        self.font_family = QFontComboBox()
        if s.get(Keys.OVERLAY_FONT_FAMILY):
            self.font_family.setCurrentFont(QFont(s.get(Keys.OVERLAY_FONT_FAMILY)))
        form.addRow("Font:", self.font_family)
        self.font_family.lineEdit().setAccessibleName("Font")  # the focus is in its text field
        self.font_size = QSpinBox()
        self.font_size.setRange(int(Keys.OVERLAY_FONT_SIZE.minimum), int(Keys.OVERLAY_FONT_SIZE.maximum))
        self.font_size.setValue(s.get(Keys.OVERLAY_FONT_SIZE))
        self.font_size.setSuffix(" pt")
        form.addRow("Font size:", self.font_size)
        self.preset = QComboBox()
        self.preset.addItems([p.name for p in PRESETS] + [CUSTOM])
        self.preset.setAccessibleDescription("Sets the three colours below; each preset reaches at least 4.5:1 "
                                             "contrast, High contrast 7:1 and an opaque background")
        form.addRow("Colour &preset:", self.preset)
        self.text_color = ColorButton(s.get(Keys.OVERLAY_TEXT_COLOR), "Text colour")
        form.addRow("Text colour:", self.text_color)
        self.partial_color = ColorButton(s.get(Keys.OVERLAY_PARTIAL_COLOR), "Unstable text colour")
        form.addRow("Unstable text colour:", self.partial_color)
        self.background_color = ColorButton(s.get(Keys.OVERLAY_BACKGROUND_COLOR), "Background colour")
        form.addRow("Background colour:", self.background_color)
        self.preset.setCurrentText(matching_preset(self.text_color.colour, self.partial_color.colour,
                                                   self.background_color.colour))
        self.preset.activated.connect(lambda _i: self._apply_preset(self.preset.currentText()))
        for button in (self.text_color, self.partial_color, self.background_color):
            button.clicked.connect(lambda: self.preset.setCurrentText(matching_preset(
                self.text_color.colour, self.partial_color.colour, self.background_color.colour)))
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.opacity.setValue(round(100 * s.get(Keys.OVERLAY_OPACITY)))
        self.opacity_value = add_slider_row(form, "Background opacity:", self.opacity, lambda v: f"{v} %")
        self.opacity.setAccessibleName("Background opacity (percent)")
        self.source_labels = QCheckBox('Start each turn with its source ("Meeting:")')
        self.source_labels.setChecked(s.get(Keys.OVERLAY_SOURCE_LABELS))
        form.addRow(self.source_labels)
        self.click_through = QCheckBox("Clicks pass through the overlay")
        self.click_through.setChecked(s.get(Keys.OVERLAY_CLICK_THROUGH))
        form.addRow(self.click_through)
        self.announce_lines = QCheckBox("Announce finished lines to screen readers")
        self.announce_lines.setChecked(s.get(Keys.ANNOUNCE_LINES))
        self.announce_lines.setAccessibleDescription("Each finished caption line is read out once, politely, "
                                                     "speaker first; text that may still change never is")
        form.addRow(self.announce_lines)
        self.turn_sensitivity = QSlider(Qt.Orientation.Horizontal)
        self.turn_sensitivity.setRange(round(100 * Keys.TURN_SENSITIVITY.minimum),
                                       round(100 * Keys.TURN_SENSITIVITY.maximum))
        self.turn_sensitivity.setValue(round(100 * s.get(Keys.TURN_SENSITIVITY)))
        self.turn_sensitivity.setToolTip(Keys.TURN_SENSITIVITY.doc)
        self.turn_sensitivity_value = add_slider_row(form, "Turn sensitivity:", self.turn_sensitivity,
                                                     lambda v: f"{v / 100:.2f}")
        self.turn_sensitivity.setAccessibleName("Turn sensitivity (hundredths)")
        self.turn_sensitivity.setAccessibleDescription(Keys.TURN_SENSITIVITY.doc)
        self.turn_silence = QDoubleSpinBox()
        self.turn_silence.setRange(Keys.TURN_SILENCE_S.minimum, Keys.TURN_SILENCE_S.maximum)
        self.turn_silence.setSingleStep(0.5)
        self.turn_silence.setDecimals(1)
        self.turn_silence.setSuffix(" s")
        self.turn_silence.setValue(s.get(Keys.TURN_SILENCE_S))
        self.turn_silence.setToolTip(Keys.TURN_SILENCE_S.doc)
        form.addRow("End a turn after silence of:", self.turn_silence)
        self.mic_label = QLineEdit(s.get(Keys.MIC_LABEL))
        form.addRow("Microphone label:", self.mic_label)
        self.system_label = QLineEdit(s.get(Keys.SYSTEM_LABEL))
        form.addRow("System audio label:", self.system_label)
        self.file_label = QLineEdit(s.get(Keys.FILE_LABEL))
        self.file_label.setPlaceholderText("the file's name")
        form.addRow("Audio file label:", self.file_label)
        self.mask_profanity = QCheckBox('Mask offensive words ("f***") in captions and saved files')
        self.mask_profanity.setChecked(s.get(Keys.MASK_PROFANITY))
        self.mask_profanity.setToolTip("Whole words only, from the list shipped with glin-profanity; the "
                                       "autosave journal keeps what the model wrote")
        form.addRow(self.mask_profanity)
        self.profanity_extra = QLineEdit(", ".join(map(str, s.get(Keys.PROFANITY_EXTRA))))
        self.profanity_extra.setPlaceholderText("more words to mask, comma-separated")
        self.profanity_extra.setToolTip(Keys.PROFANITY_EXTRA.doc)
        form.addRow("Also mask:", self.profanity_extra)
        self.profanity_allowed = QLineEdit(", ".join(map(str, s.get(Keys.PROFANITY_ALLOWED))))
        self.profanity_allowed.setPlaceholderText("listed words to show as they are, comma-separated")
        self.profanity_allowed.setToolTip(Keys.PROFANITY_ALLOWED.doc)
        form.addRow("Never mask:", self.profanity_allowed)
        # after the masking rows, not between the mask check box and its fields
        self.caption_sounds = QCheckBox("Caption so&unds (music, ringing, sirens, applause, ...)")
        self.caption_sounds.setChecked(s.get(Keys.SOUNDS_ENABLED))
        self.caption_sounds.setAccessibleName("Caption sounds")
        self.caption_sounds.setAccessibleDescription('Sounds that are not speech are captioned in brackets, such as '
                                                     '"[music]" or "[phone ringing]". Takes effect at the next Start.')
        self.caption_sounds.setToolTip(Keys.SOUNDS_ENABLED.doc + ". Takes effect at the next Start.")
        form.addRow(self.caption_sounds)
        self.hotwords = QPlainTextEdit("\n".join(map(str, s.get(Keys.HOTWORDS))))
        self.hotwords.setPlaceholderText("Names and terms, one per line, as they should be written, e.g.\n"
                                         "Siobhan\nKubernetes")
        self.hotwords.setToolTip(Keys.HOTWORDS.doc + ". Lines starting with # are comments.")
        self.hotwords.setTabChangesFocus(True)
        self.hotwords.setFixedHeight(90)
        form.addRow("Hotwords:", self.hotwords)
        self.hotword_boost = QDoubleSpinBox()
        self.hotword_boost.setRange(Keys.HOTWORD_BOOST.minimum, Keys.HOTWORD_BOOST.maximum)
        self.hotword_boost.setSingleStep(0.5)
        self.hotword_boost.setDecimals(1)
        self.hotword_boost.setValue(s.get(Keys.HOTWORD_BOOST))
        self.hotword_boost.setToolTip(Keys.HOTWORD_BOOST.doc)
        form.addRow("Hotword boost:", self.hotword_boost)
        self.shortcut_start = self._shortcut_edit(s.get(Keys.SHORTCUT_START_STOP))
        form.addRow("Start/Stop shortcut:", self.shortcut_start)
        self.shortcut_overlay = self._shortcut_edit(s.get(Keys.SHORTCUT_TOGGLE_OVERLAY))
        form.addRow("Show/hide overlay:", self.shortcut_overlay)
        self.shortcut_click = self._shortcut_edit(s.get(Keys.SHORTCUT_CLICK_THROUGH))
        form.addRow("Toggle click-through:", self.shortcut_click)
        #: shortcut field -> the action's name, as the form shows it
        self.shortcut_names = {self.shortcut_start: "Start/Stop", self.shortcut_overlay: "Show/hide overlay",
                               self.shortcut_click: "Toggle click-through"}
        for edit, name in self.shortcut_names.items():
            edit.keySequenceChanged.connect(self._check_shortcuts)
            for field in (edit, *edit.findChildren(QLineEdit)):  # the focus is in its inner text field
                field.setAccessibleName(f"{name} shortcut")
                field.setAccessibleDescription("Press the key combination to use")
        if shortcut_status:
            self.shortcut_status = QLabel(shortcut_status)
            self.shortcut_status.setWordWrap(True)
            self.shortcut_status.setObjectName("shortcut-status")
            form.addRow(self.shortcut_status)
        # the form scrolls inside the dialog, so OK/Cancel/Apply stay on screen on a small screen,
        # at a 200 % font or at QT_SCALE_FACTOR 2 (issue 39: it was 1100 px tall at 100 %)
        content = QWidget()
        content.setObjectName("settings-content")
        body = QVBoxLayout(content)
        body.setContentsMargins(0, 0, 0, 0)
        body.addLayout(form)
        self.scroll = QScrollArea()
        self.scroll.setObjectName("settings-scroll")
        self.scroll.setAccessibleName("Settings")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        root = QVBoxLayout(self)
        root.addWidget(self.scroll, 1)
        self.caption_page = CaptionPageBox(settings, caption_page)  # caption_page: the app's CaptionPageService
        # speakers: the window's SpeakerLabels (issue 38: labels on/off/N, overlay mode, renames)
        self.speakers = SpeakerSettingsBox(settings, speakers)
        body.addWidget(self.speakers)
        self.alerts = AlertSettingsBox(settings)  # issue 49: name alerts (their words join the hotwords)
        body.addWidget(self.alerts)
        body.addWidget(self.caption_page)
        body.addStretch(1)
        self.scroll.setWidget(content)
        guard_wheel(self.scroll)  # the wheel scrolls the form, never a setting it passes over
        self.error_label = QLabel("")
        self.error_label.setWordWrap(True)
        self.error_label.setObjectName("shortcut-error")
        self.error_label.setStyleSheet("color: #c0392b; font-weight: bold")
        self.error_label.setVisible(False)
        root.addWidget(self.error_label)
        note = always_on_top_note()
        if note:
            label = QLabel(note)
            label.setWordWrap(True)
            root.addWidget(label)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Apply
            | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.apply)
        root.addWidget(buttons)
        self._fit_to_screen(content)
        # Tab from the buttons wraps into the form: the dialog moves the focus, not the scroll area,
        # so the area would not scroll the focused control into view on its own (issue 39: focus
        # always visible)
        app = QApplication.instance()
        if app is not None:
            app.focusChanged.connect(self._show_focused)

    def _show_focused(self, _old, new) -> None:
        """Scroll the form so that ``new``, when it is one of its controls, is in view."""
        try:
            content = self.scroll.widget()
        except RuntimeError:  # the dialog is gone; Qt drops the connection with it
            return
        if isinstance(new, QWidget) and content is not None and content.isAncestorOf(new):
            self.scroll.ensureWidgetVisible(new, 8, 8)

    def _fit_to_screen(self, content: QWidget) -> None:
        """As tall as the form needs, at most 90 % of the screen's free height (then it scrolls); as
        wide as the form, so it never scrolls sideways."""
        hint = content.sizeHint()
        bar = self.scroll.verticalScrollBar().sizeHint().width()
        self.scroll.setMinimumWidth(hint.width() + bar)
        screen = self.screen() or QGuiApplication.primaryScreen()
        free = screen.availableGeometry().height() if screen is not None else 800
        others = self.layout().sizeHint().height() - self.scroll.sizeHint().height()
        self.resize(max(self.sizeHint().width(), hint.width() + bar + 24),
                    int(min(hint.height() + max(others, 0) + 8, 0.9 * free)))

    def _apply_preset(self, name: str) -> None:
        """Fill the colour buttons (and the opacity, for an opaque preset) from preset ``name``."""
        preset = preset_named(name)
        if preset is None:
            return
        self.text_color.set_colour(preset.text)
        self.partial_color.set_colour(preset.partial)
        self.background_color.set_colour(preset.background)
        if preset.opacity is not None:
            self.opacity.setValue(round(100 * preset.opacity))

    @staticmethod
    def _shortcut_edit(text: str) -> QKeySequenceEdit:
        edit = QKeySequenceEdit(QKeySequence(text))
        edit.setMaximumSequenceLength(1)  # one key combination: no waiting for a second chord
        edit.setClearButtonEnabled(True)
        return edit

    def shortcut_clash(self) -> str:
        """Why the shortcuts cannot be used (two actions on one key, or a key that types: it
        works desktop-wide, see :func:`~captioner.ui.global_shortcuts.keys.check_global`), or ``""``."""
        taken = fixed_shortcuts()
        for edit, name in self.shortcut_names.items():
            keys = edit.keySequence().toString()
            if not keys:
                continue
            try:
                check_global(parse(edit.keySequence().toString(QKeySequence.SequenceFormat.PortableText)))
            except ComboError as exc:
                return f"“{name}”: {exc}."
            if keys in taken:
                return (f"{keys} is already the shortcut for “{taken[keys]}”: with two actions on one key "
                        f"neither works. Choose another key for “{name}”, or clear one of them.")
            taken[keys] = name
        return ""

    def _check_shortcuts(self) -> bool:
        problem = self.shortcut_clash()
        self.error_label.setText(problem)
        self.error_label.setVisible(bool(problem))
        return not problem

    def hotword_list(self) -> list[str]:
        """The hotwords typed in the list (checked; the built-in model's spelling when it is
        the chosen backend).

        Raises:
            HotwordError: the list cannot be used (the message says why, in one line).
        """
        words = parse_hotwords(self.hotwords.toPlainText())
        spell = default_model_spelling() if words and self.settings.get(Keys.BACKEND) == "default" else None
        return list(check_hotwords(words, spell))

    def apply(self) -> bool:
        """Write every field to the settings and emit :attr:`applied`.

        Returns:
            False (and nothing written) when two actions would share a shortcut or the
            hotword list cannot be used; the dialog says why.
        """
        if not self._check_shortcuts():
            return False
        try:
            hotwords = self.hotword_list()
        except HotwordError as exc:
            self.error_label.setText(f"Hotwords: {exc}.")
            self.error_label.setVisible(True)
            return False
        try:
            alert_words = self.alerts.word_list(hotwords)
        except AlertWordError as exc:
            self.error_label.setText(f"Alert words: {exc}.")
            self.error_label.setVisible(True)
            return False
        s = self.settings
        s.set(Keys.HOTWORDS, hotwords)
        s.set(Keys.HOTWORD_BOOST, float(self.hotword_boost.value()))
        s.set(Keys.OVERLAY_LINES, self.lines.value())
        s.set(Keys.OVERLAY_FONT_FAMILY, self.font_family.currentFont().family())
        s.set(Keys.OVERLAY_FONT_SIZE, self.font_size.value())
        s.set(Keys.OVERLAY_TEXT_COLOR, self.text_color.colour)
        s.set(Keys.OVERLAY_PARTIAL_COLOR, self.partial_color.colour)
        s.set(Keys.OVERLAY_BACKGROUND_COLOR, self.background_color.colour)
        s.set(Keys.OVERLAY_OPACITY, self.opacity.value() / 100.0)
        s.set(Keys.OVERLAY_SOURCE_LABELS, self.source_labels.isChecked())
        s.set(Keys.OVERLAY_CLICK_THROUGH, self.click_through.isChecked())
        s.set(Keys.ANNOUNCE_LINES, self.announce_lines.isChecked())
        s.set(Keys.TURN_SENSITIVITY, self.turn_sensitivity.value() / 100.0)
        s.set(Keys.TURN_SILENCE_S, float(self.turn_silence.value()))
        s.set(Keys.MIC_LABEL, self.mic_label.text().strip() or Keys.MIC_LABEL.default)
        s.set(Keys.SYSTEM_LABEL, self.system_label.text().strip() or Keys.SYSTEM_LABEL.default)
        s.set(Keys.FILE_LABEL, self.file_label.text().strip())
        s.set(Keys.MASK_PROFANITY, self.mask_profanity.isChecked())
        s.set(Keys.SOUNDS_ENABLED, self.caption_sounds.isChecked())
        s.set(Keys.PROFANITY_EXTRA, normalise_words(self.profanity_extra.text()))
        s.set(Keys.PROFANITY_ALLOWED, normalise_words(self.profanity_allowed.text()))
        s.set(Keys.SHORTCUT_START_STOP, self.shortcut_start.keySequence().toString())
        s.set(Keys.SHORTCUT_TOGGLE_OVERLAY, self.shortcut_overlay.keySequence().toString())
        s.set(Keys.SHORTCUT_CLICK_THROUGH, self.shortcut_click.keySequence().toString())
        self.caption_page.apply(s)
        self.speakers.apply(s)
        self.alerts.apply(s, alert_words)
        s.sync()
        emit(self.applied)
        return True

    def accept(self) -> None:
        """OK: apply and close (stays open while a shortcut clashes)."""
        if self.apply():
            super().accept()
