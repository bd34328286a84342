"""The main window's answers to the engine: run state, events to the recorder and the views, stats, notices.

:class:`RunEvents` is mixed into :class:`~captioner.ui.main_window.MainWindow`, which connects the
:class:`~captioner.engine.qt_controller.EngineController`'s signals to these methods and owns
what they use (the panels, the recorder, the overlay). Every event goes to the recorder first
(so no word is lost whatever a view does), then to the views.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QTimer

from captioner.engine.qt_emit import emit
from captioner.events import Event, Level, Notice, SoundEvent, Stats, TextDelta, TurnBoundary, VoiceActivity
from captioner.ui.messages import CAPTURE_STATE_CODES, gap_line, notice_row_code

#: Backlog (s of audio waiting) above which the user is told the model is falling behind.
BACKLOG_WARN_S = 4.0
#: Backlog below which that warning is withdrawn.
BACKLOG_OK_S = 1.0
#: What to do when captions fall behind, per backend of the run.
BEHIND_ADVICE = {
    "default": "The built-in model is already the fastest one: close other busy programs, or caption one "
               "source instead of two.",
    "audio8": "Choose a longer clock or delay, or the built-in model, or close other busy programs.",
    "remote": "The caption server is too busy or too slow for real time (it runs the 80 ms clock only): use a "
              "faster GPU server or the built-in model.",
    "": "Choose the built-in model, or close other busy programs.",
}
#: Message codes that stay when a run starts (they are not about the previous run).
PERSISTENT_MESSAGES = ("recovery", "recovered", "wayland", "save", "shortcuts", "global_shortcuts")
#: Notices of the remote backend that tell its connection state (shown as one message).
REMOTE_STATE_CODES = ("remote_connected", "remote_reconnecting", "remote_reconnected", "remote_dropped")


class RunEvents:
    """Engine signal handlers of :class:`~captioner.ui.main_window.MainWindow` (a mixin)."""

    def _on_state(self, state: str) -> None:
        if state == "idle":
            # "idle" is taken from stopped(), which comes after the run's last events: a Start
            # pressed between the two would otherwise have its new transcript ended by them
            return
        self.engine_state = state
        self.run_bar.set_busy(state == "loading" or self._quitting)
        if state == "running":
            self.run_bar.set_status("Captioning")
        self._update_controls()

    def _on_progress(self, message: str, percent: int) -> None:
        self.run_bar.set_status(message)
        self.run_bar.set_busy(percent < 100)

    def _on_started(self) -> None:
        # a successful start settles the previous run's errors and warnings
        self.messages.clear_where(lambda row: row.severity in ("error", "warning")
                                  and row.code not in PERSISTENT_MESSAGES)
        self.engine_state = "running"
        self._update_controls()

    def _on_stopped(self) -> None:
        self.session.end_run()
        self.overlay.model.close_all()
        self.overlay.update()
        self.transcript_view.end_run()
        self.engine_state = "idle"
        self.run_bar.set_busy(False)
        if self.run_bar.status_label.text() != "Stopped after an error":
            self.run_bar.set_status("Stopped")
        self.sources.reset_meters()
        self.run_bar.clear_stats()
        self.messages.clear("backlog")
        self._catching_up = False
        self.messages.clear("catching_up")
        self._stalled.clear()  # "waiting for audio" is over with the run
        self.messages.clear_where(lambda row: row.code.startswith("capture:") and row.severity == "warning")
        self._update_controls()
        if self._quitting:
            QTimer.singleShot(0, self.close)  # the drain is done: finish the close

    def _on_error(self, message: str, code: str) -> None:
        self.messages.show_message(message, "error", code)
        self.run_bar.set_status("Stopped after an error")
        self._tell_outside(message)

    def _tell_outside(self, text: str) -> None:
        """The message bar is seen only with the window in front: otherwise ask for a tray/overlay notice."""
        if not (self.isVisible() and self.isActiveWindow()):
            emit(self.attention, text)

    def _on_event(self, ev: Event) -> None:
        self.recorder.add(ev)  # first: the transcript keeps every word whatever happens below
        if isinstance(ev, (TextDelta, TurnBoundary)):
            self.overlay.apply_event(ev)
            self.transcript_view.apply_event(ev)
            if isinstance(ev, TextDelta) and ev.final and ev.text.strip():
                self.session.text_arrived()
        elif isinstance(ev, (VoiceActivity, SoundEvent)):  # a sound: the overlay's line; the pane's comes
            self.overlay.apply_event(ev)  # as a closed segment from the recorder (issue 49)
        elif isinstance(ev, Level):
            meter = self._meters.get(ev.source)
            if meter is not None:
                meter.set_level(ev)
        elif isinstance(ev, Stats):
            self._on_stats(ev)
        elif isinstance(ev, Notice):
            self._show_notice(ev)

    def _on_segment(self, seg) -> None:
        if self.transcript_view.show_segment(seg):
            self.session.text_arrived()

    def live_text(self) -> str:
        """The not-yet-closed text shown under the transcript (rich text)."""
        return self.transcript_view.live_text()

    def _on_stats(self, st: Stats) -> None:
        self._stats[st.source] = st
        rtf = max((s.rtf for s in self._stats.values()), default=0.0)
        backlog = max((s.backlog_s for s in self._stats.values()), default=0.0)
        overflows = sum(s.overflows for s in self._stats.values())
        dropped = sum(s.dropped_s for s in self._stats.values())
        self.run_bar.set_stats(rtf, backlog, overflows, dropped)
        if self._catching_up:  # the audio said while the model loaded: a backlog that drains
            if backlog < BACKLOG_OK_S:
                self._catching_up = False
                self.messages.clear("catching_up")
                if self.engine_state == "running":
                    self.run_bar.set_status("Captioning")
        elif backlog > BACKLOG_WARN_S and math.isfinite(backlog):
            if not any(code == "backlog" for _, _, code in self.messages.messages()):
                self.messages.show_message(
                    f"Captions are falling behind: {backlog:.0f} s of audio are waiting for the model. "
                    + BEHIND_ADVICE.get(self._run_backend, BEHIND_ADVICE[""]), "warning", "backlog")
        elif backlog < BACKLOG_OK_S:
            self.messages.clear("backlog")

    def _show_notice(self, notice: Notice) -> None:
        if notice.code in ("stopped", "journal_ok"):
            return
        if notice.code == "catching_up" and notice.severity == "info":
            self._catching_up = True
            self.run_bar.set_status("Captioning: catching up on what was said while the model loaded")
        if notice.code == "gap":  # a line of the transcript, between the words before and after it
            self.transcript_view.append_line(gap_line(notice.message))
            return
        # a remote server's connection state, and each source's capture state, is one message
        # that each change replaces
        code = "remote_connection" if notice.code in REMOTE_STATE_CODES else notice_row_code(notice.code, notice.source)
        self.messages.show_message(notice.message, notice.severity, code or "notice")
        if notice.code == "stalled":
            self._stalled.add(notice.source)
        elif notice.code in CAPTURE_STATE_CODES:
            self._stalled.discard(notice.source)
        else:
            return
        if self.engine_state == "running" and not self._quitting:
            waiting = ", ".join(sorted(self._stalled))
            self.run_bar.set_status(f"Captioning; waiting for audio from {waiting}" if waiting else "Captioning")
