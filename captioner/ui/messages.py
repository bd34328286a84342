"""MessageBar: non-modal messages inside the main window (what happened, what to do).

Errors never open a blocking dialog and never show a traceback: each message is a
row with an icon colour for its severity, the text, optional action buttons and a
close button. A message with a ``code`` replaces the previous message with the
same code, so a repeating condition ("backlog growing") shows once; a message
without a code replaces one with the same text. At most ``MAX_ROWS`` show.

A source's capture state (``captioner.audio.recovery``: stalled, resumed, stream
moved, source switched) is one row per source that each change replaces
(:func:`notice_row_code`), so "no audio -- waiting" is replaced by "delivering audio
again" instead of both staying; a gap in the audio is a line in the transcript pane
(:func:`gap_line`), where it sits between the words before and after it.
"""

from __future__ import annotations

import re
from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from captioner.engine.qt_emit import emit
from captioner.ui.qt_helpers import format_time

_COLOURS = {"info": "#2d6cdf", "warning": "#c98a00", "error": "#c0392b"}

#: Notice codes of one source's capture state; each replaces the previous one of that source.
CAPTURE_STATE_CODES = ("stalled", "resumed", "stream_moved", "source_switched")


def notice_row_code(code: str, source: str) -> str:
    """The message-bar key of a notice: ``"capture:<source>"`` for a capture-state code, else ``code``."""
    return f"capture:{source}" if code in CAPTURE_STATE_CODES else code


_GAP = re.compile(r"No audio from (?P<source>.+?) between (?P<t0>[\d:.]+) and (?P<t1>[\d:.]+) \((?P<s>[\d.]+) s\)")


def _seconds(clock: str) -> float:
    """``"M:SS.s"`` / ``"H:MM:SS.s"`` (``engine.live``'s clock) as seconds."""
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def gap_line(message: str) -> str:
    """The transcript pane's line for a ``"gap"`` notice, times as the pane's other lines show them.

    ``"No audio from Meeting between 0:01.0 and 0:05.9 (4.9 s); ..."`` becomes
    ``"[0:01] — no audio from Meeting until 0:05 (4.9 s) —"``; a message in another form is
    shown as its first clause between dashes.
    """
    m = _GAP.search(message)
    if m is None:
        return f"— {message.split(';', 1)[0].strip().rstrip('.')} —"
    t0, t1 = _seconds(m["t0"]), _seconds(m["t1"])
    return f"[{format_time(t0)}] — no audio from {m['source']} until {format_time(t1)} ({m['s']} s) —"


class MessageRow(QFrame):
    """One message: text, optional actions, close button."""

    closed = Signal()

    def __init__(self, text: str, severity: str, code: str, actions: list[tuple[str, Callable[[], None]]]) -> None:
        super().__init__()
        self.code = code
        self.severity = severity if severity in _COLOURS else "warning"
        self.setObjectName(f"message-{code or 'none'}")
        colour = _COLOURS[self.severity]
        self.setStyleSheet(
            f"MessageRow {{ border-left: 4px solid {colour}; background: palette(alternate-base); padding: 2px; }}"
        )
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 4, 4)
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label, 1)
        self.buttons: dict[str, QPushButton] = {}
        for name, callback in actions:
            b = QPushButton(name)
            b.clicked.connect(lambda _checked=False, cb=callback: cb())
            b.clicked.connect(self.dismiss)
            lay.addWidget(b)
            self.buttons[name] = b
        close = QToolButton()
        close.setText("✕")
        close.setToolTip("Dismiss")
        close.setAutoRaise(True)
        close.clicked.connect(self.dismiss)
        lay.addWidget(close)

    @property
    def text(self) -> str:
        """The message text."""
        return self.label.text()

    def dismiss(self) -> None:
        """Remove this message."""
        emit(self.closed)


class MessageBar(QWidget):
    """A stack of non-modal messages; hidden while empty.

    Signals:
        shown(str, str, str): text, severity, code of each message shown.
    """

    shown = Signal(str, str, str)
    #: Messages kept at most (more would push the window's content down); the oldest
    #: info messages go first, then the oldest of any kind.
    MAX_ROWS = 3

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        self.rows: list[MessageRow] = []
        self.setVisible(False)

    def show_message(
        self,
        text: str,
        severity: str = "warning",
        code: str = "",
        actions: list[tuple[str, Callable[[], None]]] | None = None,
    ) -> MessageRow:
        """Show a message (replacing one with the same non-empty ``code``).

        Args:
            text: one or two sentences: what happened and what to do.
            severity: "info", "warning" or "error".
            code: stable key, e.g. "device_lost", "backlog".
            actions: ``(button text, callback)`` pairs; a click also dismisses.
        """
        if code:
            self.clear(code)
        else:
            self.clear_where(lambda r: not r.code and r.text == text)  # the same text once
        row = MessageRow(text, severity, code, actions or [])
        row.closed.connect(lambda r=row: self._remove(r))
        self.rows.append(row)
        self._layout.addWidget(row)
        while len(self.rows) > self.MAX_ROWS:
            infos = [r for r in self.rows[:-1] if r.severity == "info"]
            self._remove(infos[0] if infos else self.rows[0])
        self.setVisible(True)
        emit(self.shown, text, row.severity, code)
        return row

    def clear(self, code: str | None = None) -> None:
        """Remove every message, or only those with ``code``."""
        for row in list(self.rows):
            if code is None or row.code == code:
                self._remove(row)

    def clear_where(self, predicate: Callable[[MessageRow], bool]) -> None:
        """Remove every message for which ``predicate(row)`` is true."""
        for row in list(self.rows):
            if predicate(row):
                self._remove(row)

    def messages(self) -> list[tuple[str, str, str]]:
        """``(text, severity, code)`` of the messages shown, oldest first."""
        return [(r.text, r.severity, r.code) for r in self.rows]

    def _remove(self, row: MessageRow) -> None:
        if row in self.rows:
            self.rows.remove(row)
            row.setParent(None)
            row.deleteLater()
        self.setVisible(bool(self.rows))
