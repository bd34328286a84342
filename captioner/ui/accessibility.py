"""What assistive technology hears from the app: finished lines, status read-outs, spoken times.

Qt's accessibility layer maps one API onto AT-SPI (Linux), UI Automation (Windows) and
NSAccessibility (macOS); this module only talks to that layer (issue 39):

* :class:`LineAnnouncer` announces each finished transcript line once, politely
  (``QAccessibleAnnouncementEvent``, Qt 6.8+: AT-SPI ``Object:Announcement``, UIA
  ``NotificationEvent``, ``NSAccessibilityAnnouncementRequestedNotification``), speaker or
  source label first, never a partial. Without that class (PySide6 < 6.8) nothing is
  announced: the pane's own text insertion is still sent, as before.
* :class:`StatusAnnouncer` lets the status line change on screen at once but reads it out
  (its accessible description, and an announcement) at most once per :data:`STATUS_INTERVAL_MS`,
  the newest text winning: Start changed the status four times in 1.6 s.
* :func:`spoken_duration` writes a stream time as words ("1 minute 5 seconds") for the
  accessible description of the line under the caret; the screen keeps ``m:ss``.
"""

from __future__ import annotations

import collections
from typing import Callable

from PySide6.QtCore import QElapsedTimer, QObject, Qt, QTimer
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QLabel, QWidget

try:  # Qt 6.8+
    from PySide6.QtGui import QAccessibleAnnouncementEvent
except ImportError:  # pragma: no cover - older PySide6: no announcements, the pane's insertion remains
    QAccessibleAnnouncementEvent = None

#: Shortest time (ms) between two read-outs of the status line.
STATUS_INTERVAL_MS = 1000
#: Announcements kept for inspection (:attr:`LineAnnouncer.sent`); a bounded record.
KEPT = 200


def announcements_supported() -> bool:
    """True when this Qt can send announcement events (PySide6 6.8 or later)."""
    return QAccessibleAnnouncementEvent is not None


def spoken_duration(seconds: float) -> str:
    """A stream time in words for assistive technology: ``65.4`` -> ``"1 minute 5 seconds"``.

    Whole seconds (rounded down, as the pane's ``m:ss`` is); negative or NaN counts as 0;
    hours appear past 3600 s ("1 hour 0 minutes 3 seconds" keeps the minutes so the parts line up).
    """
    s = int(seconds) if seconds == seconds and seconds > 0 else 0
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)

    def unit(n: int, word: str) -> str:
        return f"{n} {word}" + ("" if n == 1 else "s")

    parts = ([unit(h, "hour"), unit(m, "minute")] if h else [unit(m, "minute")] if m else []) + [unit(sec, "second")]
    return " ".join(parts)


def announce(widget: QWidget, message: str, assertive: bool = False) -> bool:
    """Ask screen readers to speak ``message`` for ``widget`` (politely unless ``assertive``).

    Returns:
        True when an announcement event was sent (Qt 6.8+, accessibility active: a screen
        reader or another client is listening); False otherwise (nothing happens).
    """
    if QAccessibleAnnouncementEvent is None or not message.strip() or not QAccessible.isActive():
        return False
    event = QAccessibleAnnouncementEvent(widget, message)
    event.setPoliteness(QAccessible.AnnouncementPoliteness.Assertive if assertive
                        else QAccessible.AnnouncementPoliteness.Polite)
    QAccessible.updateAccessibility(event)
    return True


class LineAnnouncer(QObject):
    """Announces finished transcript lines, each once, speaker or source label first.

    Args:
        widget: the object the announcements come from (the transcript pane).
        enabled: ``() -> bool``, read at each line: the "Announce finished lines to screen
            readers" setting (default: always on).

    Attributes:
        enabled: that callable.
        sent: the newest :data:`KEPT` messages announced or, with accessibility inactive,
            that would have been (tests and the README count them).
    """

    def __init__(self, widget: QWidget, enabled: Callable[[], bool] = lambda: True) -> None:
        super().__init__(widget)
        self.widget = widget
        self.enabled = enabled
        self.sent: collections.deque[str] = collections.deque(maxlen=KEPT)

    @staticmethod
    def message(label: str, text: str) -> str:
        """What is said for one line: ``"Speaker 1: text"``, or the text alone without a label."""
        text = " ".join(text.split())
        return f"{label}: {text}" if label.strip() and text else text

    def line_finished(self, label: str, text: str) -> bool:
        """A finished line with text appeared in the pane: announce it (never call this for a partial).

        Returns:
            True when an announcement event went out.
        """
        msg = self.message(label, text)
        if not msg or not self.enabled():
            return False
        self.sent.append(msg)
        return announce(self.widget, msg)


class StatusAnnouncer(QObject):
    """The status line: on screen at once, read out at most once per ``interval_ms``.

    The label gets a fixed accessible name (``name``), so a new text sends no name change;
    its accessible description carries the status, updated (and announced politely) when
    no read-out happened in the last ``interval_ms``, otherwise once that time is up, with
    the newest text. A status that ends where the last read-out left it is not read again.

    Args:
        label: the status label.
        name: its accessible name.
        interval_ms: shortest time between two read-outs (default :data:`STATUS_INTERVAL_MS`).

    Attributes:
        read_outs: the texts read out so far (bounded to :data:`KEPT`).
    """

    def __init__(self, label: QLabel, name: str = "Status", interval_ms: int = STATUS_INTERVAL_MS) -> None:
        super().__init__(label)
        self.label = label
        self.interval_ms = interval_ms
        label.setAccessibleName(name)
        label.setAccessibleDescription(label.text())
        self.read_outs: collections.deque[str] = collections.deque(maxlen=KEPT)
        self._clock = QElapsedTimer()
        self._pending: str | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)  # a coarse timer may fire 5 % early
        self._timer.timeout.connect(self._flush)

    def set_text(self, text: str) -> None:
        """Show ``text`` now; read it out now or at the end of the current interval."""
        if text != self.label.text():
            self.label.setText(text)
        self._pending = text
        if self._timer.isActive():
            return
        if not self._clock.isValid() or self._clock.elapsed() >= self.interval_ms:
            self._flush()
        else:
            self._timer.start(max(0, self.interval_ms - self._clock.elapsed()))

    def _flush(self) -> None:
        text, self._pending = self._pending, None
        if text is None or text == self.label.accessibleDescription():
            return
        self._clock.start()
        self.label.setAccessibleDescription(text)
        self.read_outs.append(text)
        announce(self.label, text)
