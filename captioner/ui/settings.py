"""Every persisted user setting, in one typed place, stored with QSettings.

:class:`Key` names one setting: its QSettings path (namespaced by feature, as Buzz
does: ``overlay/...``, ``engine/...``), its Python type, its default and, where
the value must come from a fixed set, the allowed values. :data:`KEYS` lists every
key the app reads or writes; nothing else in the UI spells a QSettings path.

Values are validated on the way *out*: a hand-edited or stale config file with a
wrong type or an out-of-range value yields the default, never an exception, so a
bad setting can never stop the app from starting.

The store is an INI file, :data:`SETTINGS_FILE` in :func:`captioner.paths.config_dir`,
on every platform: ``CAPTIONER_CONFIG_DIR`` (or ``CAPTIONER_DATA_DIR``) moves it with
every other file of the app (journals, the single-instance lock). Settings an earlier
version kept in Qt's native store are copied over once.

Only QtCore is used (QSettings), so this module is safe below the widget layer.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Generic, Sequence, TypeVar

from PySide6.QtCore import QSettings

from captioner.asr.hotword_list import DEFAULT_BOOST, MAX_BOOST, MAX_HOTWORDS, MIN_BOOST, merge_hotwords

T = TypeVar("T")

#: QSettings organisation/application names (the native store of earlier versions lived under these).
ORGANIZATION = "captioner"
APPLICATION = "captioner"
#: Name of the settings file in ``captioner.paths.config_dir()``.
SETTINGS_FILE = "captioner.ini"


@dataclass(frozen=True)
class Key(Generic[T]):
    """One persisted setting.

    Attributes:
        path: QSettings key, ``"group/name"``.
        type: ``bool``, ``int``, ``float``, ``str`` or ``list``/``dict`` (stored as JSON text).
        default: value used when the key is missing or invalid.
        choices: allowed values, or ``None`` for any value of ``type``.
        minimum, maximum: inclusive numeric range for ``int``/``float`` keys.
        doc: one line for the settings dialog tooltips.
    """

    path: str
    type: type
    default: T
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    doc: str = ""

    def coerce(self, raw: Any) -> T:
        """Convert a raw stored value to ``type``; return ``default`` when it does not fit.

        QSettings' INI backend returns strings for everything it did not write itself
        and ``"true"``/``"false"`` for booleans, so parsing is explicit here.
        """
        try:
            value = _convert(raw, self.type)
        except (TypeError, ValueError):
            return self.default
        if self.choices is not None and value not in self.choices:
            return self.default
        if self.minimum is not None and value < self.minimum:
            return self.default
        if self.maximum is not None and value > self.maximum:
            return self.default
        return value


def _convert(raw: Any, typ: type) -> Any:
    if typ is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, (int, float)):
            return bool(raw)
        text = str(raw).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off", ""):
            return False
        raise ValueError(f"not a boolean: {raw!r}")
    if typ is int:
        if isinstance(raw, bool):
            raise ValueError("bool is not an int setting")
        return int(str(raw).strip()) if not isinstance(raw, int) else raw
    if typ is float:
        return float(raw)
    if typ is str:
        if raw is None:
            raise ValueError("missing")
        return str(raw)
    if typ in (list, dict):
        value = json.loads(raw) if isinstance(raw, str) else raw
        if not isinstance(value, typ):
            raise ValueError(f"expected {typ.__name__}")
        return value
    raise TypeError(f"unsupported setting type {typ}")


class Keys:
    """The list of every setting. Group names are the feature they belong to."""

    # -- engine (what to decode with) ------------------------------------------------------
    BACKEND = Key("engine/backend", str, "default", ("default", "audio8", "tflite", "remote"),
                  doc="Speech model kind: built-in default, Audio8 checkpoint, TFLite file or remote server")
    AUDIO8_DIR = Key("engine/audio8_dir", str, "", doc="Audio8 ASR Infinite checkpoint folder")
    TFLITE_FILE = Key("engine/tflite_file", str, "", doc="TensorFlowASR .tflite export")
    REMOTE_URL = Key("engine/remote_url", str, "ws://127.0.0.1:18191/v1/realtime",
                     doc="Audio8 vLLM realtime endpoint(s), one per source, comma-separated (DESIGN section 2)")
    REMOTE_KEY = Key("engine/remote_key", str, "", doc="Key of a remote server started with --api-key (optional)")
    CLOCK_MS = Key("engine/clock_ms", int, 80, (80, 120, 160), doc="Audio clock (ms), Audio8 operating points")
    DELAY_MS = Key("engine/delay_ms", int, 480, minimum=240, maximum=2400,
                   doc="Transcription delay (ms): a multiple of the clock, 240-2400 ms")
    LANGUAGE = Key("engine/language", str, "en", ("en", "zh"), doc="Spoken language")
    HOTWORDS = Key("engine/hotwords", list, [],
                   doc="Names and terms the model should prefer, written as they should appear (built-in and "
                       f"remote models; at most {MAX_HOTWORDS})")
    HOTWORD_BOOST = Key("engine/hotword_boost", float, DEFAULT_BOOST, minimum=MIN_BOOST, maximum=MAX_BOOST,
                        doc=f"How strongly the hotwords are preferred ({MIN_BOOST:g}-{MAX_BOOST:g}; higher finds "
                            "more of them and misreads more other words as them)")

    # -- turns (every backend; DESIGN section 4, issue 11) ----------------------------------
    TURN_SENSITIVITY = Key("turns/sensitivity", float, 0.5, minimum=0.05, maximum=0.95,
                           doc="How readily a pause ends a turn (0.05-0.95; higher ends turns sooner). The "
                               "end-of-turn probability a pause needs is 1 - sensitivity, on every backend")
    TURN_SILENCE_S = Key("turns/silence_limit_s", float, 3.0, minimum=0.5, maximum=30.0,
                         doc="Seconds of silence that end a turn whatever the end-of-turn model says")
    TURN_VAD_HORIZON_S = Key("turns/vad_horizon_s", float, 1.0, (0.5, 1.0, 2.0, 3.0),
                             doc="Audio8: semantic-VAD horizon (s) whose end-of-turn probability decides")
    TURN_VAD_HYSTERESIS = Key("turns/vad_hysteresis", float, 0.2, minimum=0.0, maximum=0.5,
                              doc="Audio8: how far the end-of-turn probability must fall before the next turn can end")

    # -- sources ----------------------------------------------------------------------------
    SOURCE_MODE = Key("sources/mode", str, "microphone", ("microphone", "system", "both", "file"),
                      doc="What to caption: microphone, system audio, both, or a file played as if live")
    MICROPHONE = Key("sources/microphone", str, "", doc="Microphone device (empty: system default)")
    SYSTEM_AUDIO = Key("sources/system_audio", str, "", doc="System-audio (monitor) device (empty: default)")
    FILE = Key("sources/file", str, "", doc="Audio file played as a live source")
    MIC_LABEL = Key("sources/microphone_label", str, "You", doc="Label for microphone captions")
    SYSTEM_LABEL = Key("sources/system_label", str, "Meeting", doc="Label for system-audio captions")
    FILE_LABEL = Key("sources/file_label", str, "", doc="Label for captions of a file (empty: its short name)")

    # -- overlay ----------------------------------------------------------------------------
    OVERLAY_VISIBLE = Key("overlay/visible", bool, True, doc="Show the caption overlay")
    OVERLAY_LINES = Key("overlay/lines", int, 2, minimum=1, maximum=5, doc="Caption lines shown (1-5)")
    OVERLAY_FONT_FAMILY = Key("overlay/font_family", str, "", doc="Caption font family (empty: system sans)")
    OVERLAY_FONT_SIZE = Key("overlay/font_size", int, 28, minimum=8, maximum=144, doc="Caption font size (pt)")
    OVERLAY_TEXT_COLOR = Key("overlay/text_color", str, "#ffffff", doc="Caption text colour")
    #: A pale blue tint (drawn italic, with the same outline and shadow as the final text):
    #: clearly not the final white, yet >= 4.5:1 (WCAG AA) against the default panel even
    #: over a white window (the old grey #b8b8b8 fell to about 3:1 there).
    OVERLAY_PARTIAL_COLOR = Key("overlay/partial_color", str, "#cfe8ff", doc="Colour of unstable (partial) text")
    OVERLAY_BACKGROUND_COLOR = Key("overlay/background_color", str, "#000000", doc="Overlay background colour")
    OVERLAY_OPACITY = Key("overlay/opacity", float, 0.7, minimum=0.0, maximum=1.0,
                          doc="Background opacity (0 transparent .. 1 opaque); text stays opaque")
    OVERLAY_CLICK_THROUGH = Key("overlay/click_through", bool, False,
                                doc="Mouse clicks pass through the overlay to the window below")
    OVERLAY_SOURCE_LABELS = Key("overlay/source_labels", bool, True, doc='Start each turn with its source, e.g. "Meeting:"')
    OVERLAY_SPEAKER_LABELS = Key("overlay/speaker_labels", str, "change", ("off", "change", "every"),
                                 doc='Show the speaker ("Speaker 2:") before a line: never, at a change of '
                                     "speaker, or on every line")
    #: Per-screen geometry is stored under ``overlay/geometry/<screen key>`` -- see :func:`overlay_geometry_key`.
    OVERLAY_GEOMETRY_PREFIX = "overlay/geometry"
    OVERLAY_LAST_SCREEN = Key("overlay/last_screen", str, "", doc="Screen the overlay was last placed on")

    # -- transcript -------------------------------------------------------------------------
    AUTOSAVE_ENABLED = Key("transcript/autosave_enabled", bool, False,
                           doc="Write the transcript continuously into a folder")
    AUTOSAVE_DIR = Key("transcript/autosave_dir", str, "", doc="Folder for continuously written transcripts")
    LAST_SAVE_DIR = Key("transcript/last_save_dir", str, "", doc="Folder of the last Save as")
    MASK_PROFANITY = Key("transcript/mask_profanity", bool, False,
                         doc='Mask offensive words ("f***") in the overlay, the transcript pane and saved files')
    PROFANITY_EXTRA = Key("transcript/profanity_extra", list, [], doc="More words or phrases to mask")
    PROFANITY_ALLOWED = Key("transcript/profanity_allowed", list, [], doc="Listed words never to mask")
    ANNOUNCE_LINES = Key("transcript/announce_lines", bool, True,
                         doc="Announce finished lines to screen readers (politely, speaker first; never partial text)")

    # -- name alerts (issue 49; captioner.transcript.alerts) --------------------------------
    ALERT_WORDS = Key("alerts/words", list, [],
                      doc="Names or words to be alerted to when someone else says them (the overlay shows it, "
                          "a desktop notification is sent); they join the hotwords, so the model writes them")
    ALERT_SOUND = Key("alerts/sound", bool, False, doc="Play a sound with each name alert")

    # -- speakers (issue 38; captioner.speakers) -------------------------------------------
    SPEAKER_MODE = Key("speakers/mode", str, "auto", ("auto", "off", "max"),
                       doc="Label who is speaking in system audio and files: automatically, off, or with "
                           "at most a number of speakers (the microphone is always its own label)")
    SPEAKER_MAX = Key("speakers/max_speakers", int, 4, minimum=1, maximum=20,
                      doc="The most speakers to tell apart when the speaker labels have a limit (1-20)")

    # -- sounds (issue 49; captioner.engine.sound_captions) ---------------------------------
    SOUNDS_ENABLED = Key("sounds/enabled", bool, True,
                         doc='Caption sounds that are not speech ("[music]", "[phone ringing]", "[siren]", '
                             '"[applause]", ...), styled apart from speech')

    # -- shortcuts (QKeySequence portable text) ---------------------------------------------
    SHORTCUT_START_STOP = Key("shortcuts/start_stop", str, "Ctrl+Shift+S", doc="Start or stop captioning")
    SHORTCUT_TOGGLE_OVERLAY = Key("shortcuts/toggle_overlay", str, "Ctrl+Shift+O", doc="Show or hide the overlay")
    SHORTCUT_CLICK_THROUGH = Key("shortcuts/toggle_click_through", str, "Ctrl+Shift+T",
                                 doc="Toggle overlay click-through")

    # -- caption page (captioner/caption_page, captioner/ui/caption_page.py) ------------------
    PAGE_ENABLED = Key("caption_page/enabled", bool, False, doc="Serve the live captions as a web page")
    PAGE_NETWORK = Key("caption_page/network", bool, False,
                       doc="Serve the page to the network too (a secret token in its address), not only this computer")
    PAGE_PORT = Key("caption_page/port", int, 47600, minimum=1024, maximum=65535, doc="TCP port of the caption page")
    PAGE_KEEP_TOKEN = Key("caption_page/keep_token", bool, False,
                          doc="Network mode: keep the same token (address) across sessions")
    PAGE_TOKEN = Key("caption_page/token", str, "", doc="The kept token (empty: a new random one each start)")

    # -- main window ------------------------------------------------------------------------
    MAIN_WINDOW_GEOMETRY = Key("main_window/geometry", str, "", doc="Main window geometry (Qt saveGeometry, hex)")


#: Every fixed key, for the settings dialog and tests.
KEYS: tuple[Key, ...] = tuple(v for v in vars(Keys).values() if isinstance(v, Key))


def default_store() -> QSettings:
    """The app's settings file, ``config_dir() / SETTINGS_FILE`` (INI on every platform).

    Without an override and without that file yet, settings an earlier version kept in
    Qt's native store (``~/.config/captioner/captioner.conf``, the Windows registry...)
    are copied into it once.
    """
    from captioner import paths

    path = paths.config_dir() / SETTINGS_FILE
    fresh = not path.exists()
    store = QSettings(str(path), QSettings.Format.IniFormat)
    overridden = any(os.environ.get(name, "").strip() for name in (paths.CONFIG_ENV, paths.DATA_ENV))
    if fresh and not overridden:
        old = QSettings(ORGANIZATION, APPLICATION)
        if os.path.abspath(old.fileName()) != os.path.abspath(str(path)):
            for key in old.allKeys():
                store.setValue(key, old.value(key))
            if old.allKeys():
                store.sync()
    return store


def overlay_geometry_key(screen_key: str) -> str:
    """QSettings path of the overlay geometry remembered for one screen.

    Args:
        screen_key: stable screen identity, e.g. ``"HDMI-1 1920x1080"`` (name and
            logical size, so a different monitor on the same port gets its own entry).
    """
    safe = screen_key.replace("/", "_").replace("\\", "_")
    return f"{Keys.OVERLAY_GEOMETRY_PREFIX}/{safe}"


def turn_settings(settings: "Settings"):
    """The :class:`~captioner.engine.turns.TurnSettings` the user chose (threshold = 1 - sensitivity)."""
    from captioner.engine.turns import TurnSettings  # numpy only: no model is loaded here

    return TurnSettings(threshold=round(1.0 - settings.get(Keys.TURN_SENSITIVITY), 3),
                        silence_s=settings.get(Keys.TURN_SILENCE_S))


def turn_backend_options(settings: "Settings", backend: str) -> tuple[tuple[str, object], ...]:
    """``load_backend`` options that carry the same turn settings into a model's own VAD heads
    (local Audio8 and the remote Audio8 server)."""
    if backend not in ("audio8", "remote"):
        return ()
    return (("vad_horizon_s", settings.get(Keys.TURN_VAD_HORIZON_S)),
            ("vad_threshold", round(1.0 - settings.get(Keys.TURN_SENSITIVITY), 3)),
            ("vad_hysteresis", settings.get(Keys.TURN_VAD_HYSTERESIS)))


def hotword_backend_options(settings: "Settings", backend: str) -> tuple[tuple[str, object], ...]:
    """``load_backend`` options that carry the user's hotwords and boost to the built-in and
    the remote model (none for the others, or when the list is empty); the name alerts' words
    (:data:`Keys.ALERT_WORDS`) join the hotwords, without duplicates."""
    words = tuple(str(w).strip() for w in settings.get(Keys.HOTWORDS) if str(w).strip())
    words = merge_hotwords(words, map(str, settings.get(Keys.ALERT_WORDS)))  # alert words are heard too
    if backend not in ("default", "remote") or not words:
        return ()
    return (("hotwords", words), ("hotword_boost", settings.get(Keys.HOTWORD_BOOST)))


def speaker_options(settings: "Settings"):
    """The :class:`~captioner.speakers.options.SpeakerOptions` the user chose (Settings ->
    Speaker labels): ``AUTO``, ``OFF`` or at most :data:`Keys.SPEAKER_MAX` speakers."""
    from captioner.speakers.options import AUTO, OFF, SpeakerOptions  # pure Python, no model

    mode = settings.get(Keys.SPEAKER_MODE)
    if mode == "off":
        return OFF
    return SpeakerOptions(True, settings.get(Keys.SPEAKER_MAX)) if mode == "max" else AUTO


def sound_options(settings: "Settings"):
    """The :class:`~captioner.engine.sound_captions.SoundOptions` the user chose (Settings ->
    "Caption sounds", on by default); it reaches the engine at the next Start."""
    from captioner.engine.sound_captions import OFF, ON  # pure Python: the model loads with the run

    return ON if settings.get(Keys.SOUNDS_ENABLED) else OFF


def profanity_filter(settings: "Settings"):
    """The :class:`~captioner.transcript.profanity.ProfanityFilter` the user chose, or None when
    masking is off (the default)."""
    if not settings.get(Keys.MASK_PROFANITY):
        return None
    from captioner.transcript.profanity import ProfanityFilter  # pure Python, no Qt

    return ProfanityFilter(extra=[str(w) for w in settings.get(Keys.PROFANITY_EXTRA)],
                           allowed=[str(w) for w in settings.get(Keys.PROFANITY_ALLOWED)])


class Settings:
    """Typed access to the app's QSettings.

    Args:
        qsettings: the store; by default :func:`default_store` (an INI file in the
            configuration directory). Tests pass an INI file of their own.
    """

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.store = qsettings if qsettings is not None else default_store()

    @classmethod
    def from_file(cls, path: str) -> "Settings":
        """Settings kept in an INI file at ``path`` (tests, portable installs)."""
        return cls(QSettings(path, QSettings.Format.IniFormat))

    def get(self, key: Key[T]) -> T:
        """The stored value of ``key``, or its default when missing or invalid."""
        if not self.store.contains(key.path):
            return key.default
        return key.coerce(self.store.value(key.path))

    def set(self, key: Key[T], value: T) -> None:
        """Store ``value`` for ``key``.

        Raises:
            ValueError: ``value`` is not valid for ``key`` (wrong type, not one of the
                choices, out of range) -- a programming error, not user input.
        """
        sentinel = object()
        checked = Key(key.path, key.type, sentinel, key.choices, key.minimum, key.maximum).coerce(value)
        if checked is sentinel:
            raise ValueError(f"invalid value {value!r} for setting {key.path}")
        stored: Any = json.dumps(checked) if key.type in (list, dict) else checked
        self.store.setValue(key.path, stored)

    def reset(self, key: Key) -> None:
        """Forget ``key`` so its default applies again."""
        self.store.remove(key.path)

    # -- per-screen overlay geometry ----------------------------------------------------------
    def overlay_geometry(self, screen_key: str) -> tuple[int, int, int, int] | None:
        """Remembered overlay rectangle ``(x, y, width, height)`` in logical pixels on that screen.

        Returns ``None`` when nothing (or something malformed) is stored.
        """
        raw = self.store.value(overlay_geometry_key(screen_key))
        if raw is None:
            return None
        try:
            vals = json.loads(raw) if isinstance(raw, str) else raw
            x, y, w, h = (int(v) for v in vals)
        except (TypeError, ValueError):
            return None
        if w <= 0 or h <= 0:
            return None
        return x, y, w, h

    def set_overlay_geometry(self, screen_key: str, rect: Sequence[int]) -> None:
        """Remember the overlay rectangle ``(x, y, width, height)`` (logical px) for a screen."""
        x, y, w, h = (int(v) for v in rect)
        self.store.setValue(overlay_geometry_key(screen_key), json.dumps([x, y, w, h]))
        self.set(Keys.OVERLAY_LAST_SCREEN, screen_key)

    def sync(self) -> None:
        """Write pending changes to disk now."""
        self.store.sync()
