"""RunBar: the Start/Stop button, the busy indicator, the status line and the run's health.

The status line says what the app is doing ("Ready", "Loading…", "Captioning",
"Stopped"); the health label beside it summarises the engine's
:class:`~captioner.events.Stats` in plain words ("keeping up", "3 s behind") with the
numbers in its tooltip, and is cleared when the run stops.

A label's text is what a screen reader announces when it changes, so the health label
changes only when it matters (:class:`HealthHysteresis`): a backlog wandering round 1 s
flapped "keeping up" / "1 s behind" 12 times in 39 s (issue 22). The status line shows each
change at once but is read out at most once a second (:class:`~captioner.ui.accessibility.StatusAnnouncer`,
issue 39: Start changed it four times in 1.6 s).
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from captioner.ui.accessibility import StatusAnnouncer

#: Start button text per engine state.
BUTTON_TEXT = {"idle": "Start", "loading": "Cancel", "stopping": "Stopping…"}
#: Backlog (s) under which the captions count as keeping up (again).
KEEPING_UP_S = 1.0
#: Backlog (s) from which they count as behind: above KEEPING_UP_S, so a backlog near either
#: threshold does not flap the label (a streaming model's backlog swings by ~1 s per decode).
BEHIND_S = 2.0
#: While behind, the seconds shown change only when the backlog moved this far from them.
BEHIND_STEP_S = 1.0


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def health_text(rtf: float, backlog: float, overflows: int, dropped: float) -> str:
    """The run's health in plain words: "keeping up", "3 s behind", plus lost audio if any."""
    text = "keeping up" if not backlog >= KEEPING_UP_S else f"{_duration(backlog)} behind"
    if dropped > 0 or overflows > 0:
        text += f" · {dropped:.1f} s of audio lost" if dropped > 0 else " · some audio lost"
    return text


class HealthHysteresis:
    """The backlog as the health label shows it, changing only when it matters.

    "behind" starts at :data:`BEHIND_S` and ends below :data:`KEEPING_UP_S`; while behind,
    the shown seconds follow the backlog only once it moved :data:`BEHIND_STEP_S` or more
    from them (plain seconds, ``NaN`` counts as keeping up).
    """

    def __init__(self) -> None:
        self.shown: float = 0.0  # the backlog (s) the label shows; 0 = keeping up

    def update(self, backlog: float) -> float:
        """Feed the latest backlog (s); returns the backlog to show (0.0 for "keeping up")."""
        b = backlog if backlog == backlog else 0.0  # NaN: no measurement
        if self.shown <= 0.0:
            if b >= BEHIND_S:
                self.shown = float(round(b))
        elif b < KEEPING_UP_S:
            self.shown = 0.0
        elif abs(b - self.shown) >= BEHIND_STEP_S:
            self.shown = float(max(round(b), KEEPING_UP_S))
        return self.shown

    def reset(self) -> None:
        """Forget the run (after Stop)."""
        self.shown = 0.0


def health_details(rtf: float, backlog: float, overflows: int, dropped: float) -> str:
    """The numbers behind :func:`health_text`, explained (the tooltip)."""
    return (f"Real-time factor {rtf:.2f}: the model needs {rtf:.2f} s per second of audio (below 1 keeps up).\n"
            f"Backlog {backlog:.1f} s: audio waiting for the model.\n"
            f"Overflows {overflows}: times the audio device delivered faster than it was read.\n"
            f"Dropped {dropped:.1f} s: audio skipped to catch up.")


class RunBar(QWidget):
    """Start/Stop, progress, status and stats in one row."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.start_button = QPushButton("Start")
        self.start_button.setDefault(True)
        self.start_button.setMinimumWidth(110)
        self.start_button.setAccessibleDescription("Start captioning with the chosen sources and model, or stop")
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.setVisible(False)
        self.progress.setAccessibleName("Busy")
        self.status_label = QLabel("Ready")
        self.status = StatusAnnouncer(self.status_label)
        self.stats_label = QLabel("")
        self.stats_label.setObjectName("stats")
        self._health = HealthHysteresis()
        lay.addWidget(self.start_button)
        lay.addWidget(self.progress)
        lay.addWidget(self.status_label, 1)
        lay.addWidget(self.stats_label)

    def set_state(self, state: str) -> None:
        """Show the engine state on the button (Start, Cancel, Stop, Stopping…)."""
        self.start_button.setText(BUTTON_TEXT.get(state, "Stop"))
        self.start_button.setEnabled(state != "stopping")

    def set_status(self, text: str) -> None:
        """Say what the app is doing (on screen now; read out at most once a second)."""
        self.status.set_text(text)

    def set_busy(self, busy: bool) -> None:
        """Show or hide the busy indicator."""
        self.progress.setRange(0, 0)
        self.progress.setVisible(bool(busy))

    def set_stats(self, rtf: float, backlog: float, overflows: int, dropped: float) -> None:
        """Show the run's health in words (with hysteresis, see :class:`HealthHysteresis`; lost audio
        in whole seconds), the exact numbers in the tooltip."""
        text = health_text(rtf, self._health.update(backlog), overflows, float(int(dropped)) if dropped >= 1 else dropped)
        if text != self.stats_label.text():  # an unchanged text is not set again (no event for a screen reader)
            self.stats_label.setText(text)
        self.stats_label.setToolTip(health_details(rtf, backlog, overflows, dropped))

    def clear_stats(self) -> None:
        """Forget the last run's health (after Stop)."""
        self._health.reset()
        self.stats_label.setText("")
        self.stats_label.setToolTip("")
