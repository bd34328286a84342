"""RunBar: the Start/Stop button, the busy indicator, the status line and the run's health.

The status line says what the app is doing ("Ready", "Loading…", "Captioning",
"Stopped"); the health label beside it summarises the engine's
:class:`~captioner.events.Stats`.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

#: Start button text per engine state.
BUTTON_TEXT = {"idle": "Start", "loading": "Cancel", "stopping": "Stopping…"}


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
        """Show the run's speed, backlog and lost audio."""
        text = f"RTF {rtf:.2f} · backlog {backlog:.1f} s · overflows {overflows}"
        if dropped > 0:
            text += f" · dropped {dropped:.1f} s"
        self.stats_label.setText(text)
