"""LevelMeter: a small horizontal input-level bar (RMS with a peak tick) for one source."""

from __future__ import annotations

import math

from PySide6.QtCore import QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from captioner.events import Level

#: Bottom of the meter scale in dBFS; quieter input shows an empty bar.
FLOOR_DBFS = -60.0
#: Without a new level for this long (ms) the meter decays to empty (device silent or gone).
STALE_MS = 1500


def level_fraction(dbfs: float) -> float:
    """Map dBFS (-inf..0) linearly onto the meter: FLOOR_DBFS -> 0.0, 0 dBFS -> 1.0."""
    if not math.isfinite(dbfs):
        return 0.0
    return min(1.0, max(0.0, (dbfs - FLOOR_DBFS) / -FLOOR_DBFS))


class LevelMeter(QWidget):
    """Shows the latest :class:`~captioner.events.Level` of one source.

    Repaints from the stored value (Friture style), never from the audio thread: the
    level arrives through a queued signal and only :meth:`update` is scheduled.

    For screen readers it has a fixed name and description: the levels arrive ~15 times a
    second, and a description updated with each ("-35 dBFS RMS ...") was an AT-SPI event
    each time (issue 22). The numbers are in the tooltip, which sends no such event.
    """

    def __init__(self, parent: QWidget | None = None, name: str = "Input level") -> None:
        super().__init__(parent)
        self.rms = 0.0
        self.peak = 0.0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName(name)  # one per source: "Microphone input level", ...
        self.setAccessibleDescription("Moves with the sound level; the tooltip gives it in dBFS.")
        self._stale = QTimer(self)
        self._stale.setSingleShot(True)
        self._stale.setInterval(STALE_MS)
        self._stale.timeout.connect(self.reset)

    def sizeHint(self) -> QSize:  # noqa: N802
        """A thin bar."""
        return QSize(120, 10)

    def set_level(self, level: Level) -> None:
        """Show a new level (dBFS values from the event)."""
        self.rms = level_fraction(level.rms_dbfs)
        self.peak = level_fraction(level.peak_dbfs)
        self.setToolTip(f"{level.rms_dbfs:.0f} dBFS RMS, {level.peak_dbfs:.0f} dBFS peak")
        self._stale.start()
        self.update()

    def reset(self) -> None:
        """Empty the meter."""
        self.rms = self.peak = 0.0
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        """Dark track, green/amber/red bar, white peak tick."""
        p = QPainter(self)
        r = QRectF(self.rect())
        p.fillRect(r, self.palette().dark())
        colour = QColor("#3cb371") if self.rms < 0.75 else QColor("#e0a030") if self.rms < 0.92 else QColor("#d04040")
        p.fillRect(QRectF(r.left(), r.top(), r.width() * self.rms, r.height()), colour)
        if self.peak > 0:
            x = r.left() + r.width() * self.peak
            p.setPen(Qt.GlobalColor.white)
            p.drawLine(int(x), int(r.top()), int(x), int(r.bottom()))
        p.end()
