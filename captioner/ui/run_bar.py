"""RunBar: the Start/Stop button, the busy indicator, the status line and the run's health.

The status line says what the app is doing ("Ready", "Loading…", "Captioning",
"Stopped"); the health label beside it summarises the engine's
:class:`~captioner.events.Stats` in plain words ("keeping up", "3 s behind") with the
numbers in its tooltip, and is cleared when the run stops.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

#: Start button text per engine state.
BUTTON_TEXT = {"idle": "Start", "loading": "Cancel", "stopping": "Stopping…"}
#: Backlog (s) under which the captions count as keeping up.
KEEPING_UP_S = 1.0


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def health_text(rtf: float, backlog: float, overflows: int, dropped: float) -> str:
    """The run's health in plain words: "keeping up", "3 s behind", plus lost audio if any."""
    text = "keeping up" if not backlog >= KEEPING_UP_S else f"{_duration(backlog)} behind"
    if dropped > 0 or overflows > 0:
        text += f" · {dropped:.1f} s of audio lost" if dropped > 0 else " · some audio lost"
    return text


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
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.progress.setVisible(False)
        self.status_label = QLabel("Ready")
        self.stats_label = QLabel("")
        self.stats_label.setObjectName("stats")
        lay.addWidget(self.start_button)
        lay.addWidget(self.progress)
        lay.addWidget(self.status_label, 1)
        lay.addWidget(self.stats_label)

    def set_state(self, state: str) -> None:
        """Show the engine state on the button (Start, Cancel, Stop, Stopping…)."""
        self.start_button.setText(BUTTON_TEXT.get(state, "Stop"))
        self.start_button.setEnabled(state != "stopping")

    def set_status(self, text: str) -> None:
        """Say what the app is doing."""
        self.status_label.setText(text)

    def set_busy(self, busy: bool) -> None:
        """Show or hide the busy indicator."""
        self.progress.setRange(0, 0)
        self.progress.setVisible(bool(busy))

    def set_stats(self, rtf: float, backlog: float, overflows: int, dropped: float) -> None:
        """Show the run's health in words, the numbers in the tooltip."""
        self.stats_label.setText(health_text(rtf, backlog, overflows, dropped))
        self.stats_label.setToolTip(health_details(rtf, backlog, overflows, dropped))

    def clear_stats(self) -> None:
        """Forget the last run's health (after Stop)."""
        self.stats_label.setText("")
        self.stats_label.setToolTip("")
