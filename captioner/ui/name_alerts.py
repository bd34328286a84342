"""NameAlerts: the GUI's name alerts (issue 49), from the engine's events to the overlay and the desktop.

Every engine event goes to an :class:`~captioner.transcript.alerts.AlertMatcher` built from
Settings -> "Alert me when someone says:" that ignores the run's microphone sources (the
user's own voice). Each alert, in the GUI thread as the final text arrives (or at most
:data:`~captioner.transcript.alerts.HOLD_S` later, while a token model may still be writing
the word), is

* shown on the overlay: a banner and a thick frame for :attr:`NameAlerts.banner_ms`, announced
  to screen readers (:meth:`~captioner.ui.overlay_alert.OverlayAlert.show_alert`);
* sent as a desktop notification: a tray message where the desktop has a tray, else the
  freedesktop notification service (:mod:`captioner.ui.desktop_notify`, never blocking);
* heard as the system beep (``QApplication.beep``), only with "Play a sound with alerts" on.

Word lists changed in Settings apply at once (a held match is dropped with the old matcher).
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Iterable

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from captioner.engine.qt_emit import emit
from captioner.transcript.alerts import Alert, AlertMatcher, AlertWordError
from captioner.ui import desktop_notify
from captioner.ui.settings import Keys, Settings

log = logging.getLogger(__name__)

#: Title of the desktop notification.
TITLE = "Name alert"


def banner_text(alert: Alert, name_of: Callable[[str], str] | None = None) -> str:
    """The overlay's banner and the notification's text: ``'ALERT: "Maria" said by Meeting'``, the
    words of ``listen --alert``'s line. Words only: an emoji bell has no glyph in the fonts most
    desktops draw the overlay with (it showed as an empty box), and the word is the signal."""
    return f'ALERT: "{alert.word}" said by {alert.who(name_of)}'


class NameAlerts(QObject):
    """Watches the run's final text for the listed words (see the module doc).

    Args:
        settings: the word list and the sound choice are read from here.
        overlay: the :class:`~captioner.ui.overlay.CaptionOverlay` (``show_alert``).
        tray: the :class:`~captioner.ui.tray.TrayIcon` (its ``notify``), or None.
        name_of: ``name_of(speaker id) -> name`` for who said it (the run's transcript), or None.
        send: the D-Bus notification sender (tests pass a fake); default
            :func:`captioner.ui.desktop_notify.send_notification`.
        clock: wall-clock seconds for the matcher's hold (default ``time.monotonic``).

    Attributes:
        banner_ms: how long the overlay shows an alert (ms).
        fired: the alerts of this session, newest last (bounded to 200).

    Signals:
        alerted(object): an :class:`~captioner.transcript.alerts.Alert` fired.
    """

    alerted = Signal(object)

    def __init__(self, settings: Settings, overlay, tray=None, name_of: Callable[[str], str] | None = None,
                 send: Callable[..., object] | None = None, clock: Callable[[], float] = time.monotonic,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.overlay = overlay
        self.tray = tray
        self.name_of = name_of
        self.send = send or desktop_notify.send_notification
        self.clock = clock
        self.banner_ms = overlay.ALERT_MS
        self.fired: list[Alert] = []
        self._ignore: frozenset[str] = frozenset()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._due)
        self.matcher = self._matcher()

    def _matcher(self) -> AlertMatcher:
        try:
            return AlertMatcher(map(str, self.settings.get(Keys.ALERT_WORDS)), self._ignore)
        except AlertWordError as exc:  # a hand-edited settings file: no alerts, one log line
            log.warning("name alerts are off: %s", exc)
            return AlertMatcher((), self._ignore)

    def begin_run(self, own: Iterable[str]) -> None:
        """A run starts: ``own`` are the labels of its microphone sources (never alerting)."""
        self._ignore = frozenset(own)
        self.matcher = self._matcher()
        self._timer.stop()

    def apply_settings(self) -> None:
        """Re-read the word list (after the settings dialog)."""
        self.matcher = self._matcher()
        self._timer.stop()

    def on_event(self, event) -> None:
        """One engine event (connected to the controller's ``event`` signal, after the window)."""
        if not self.matcher.active:
            return
        self._fire(self.matcher.feed(event, self.clock()))
        self._arm()

    def end_run(self) -> None:
        """The run stopped: a match still held fires now."""
        self._timer.stop()
        self._fire(self.matcher.flush())

    def _due(self) -> None:
        self._fire(self.matcher.due(self.clock()))
        self._arm()

    def _arm(self) -> None:
        due = self.matcher.next_due()
        if due is None:
            self._timer.stop()
        else:
            self._timer.start(max(0, int((due - self.clock()) * 1000) + 1))

    def _fire(self, alerts: list[Alert]) -> None:
        for alert in alerts:
            self.fired = [*self.fired[-199:], alert]
            text = banner_text(alert, self.name_of)
            self.overlay.show_alert(text, self.banner_ms)
            if self.tray is None or not self.tray.notify(text, self.banner_ms, TITLE,
                                                         QSystemTrayIcon.MessageIcon.Information):
                self.send(TITLE, text, self.banner_ms)
            if self.settings.get(Keys.ALERT_SOUND):
                QApplication.beep()
            emit(self.alerted, alert)
