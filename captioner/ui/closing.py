"""Closing the main window: ask about unsaved text, let a running engine drain, then close.

:class:`Closing` is mixed into :class:`~captioner.ui.main_window.MainWindow` (before
``QMainWindow``, so its :meth:`~Closing.closeEvent` is the window's), which owns what it uses.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QCloseEvent

from captioner.engine.qt_emit import emit
from captioner.ui.unsaved_dialog import ask_unsaved


class Closing:
    """Quit and close of :class:`~captioner.ui.main_window.MainWindow` (a mixin)."""

    def has_unsaved_text(self) -> bool:
        """True when the window shows transcript text that no Save as… (or autosave) has written."""
        return self.session.has_unsaved() or self.transcript_view.has_open_text()

    def ask_unsaved(self) -> str:
        """Ask what to do with the unsaved transcript on quit: ``"save"``, ``"discard"`` or ``"cancel"``."""
        return ask_unsaved(self, self.recorder.journal_path)

    def _begin_quitting(self) -> None:
        """Stop the engine (it drains: the last words are decoded) and close when it has stopped."""
        self._quitting = True
        self.stop()
        self.run_bar.set_status("Quitting: finishing the last words…")
        self.run_bar.set_busy(True)  # busy indicator while the model drains and files are flushed
        self.start_button.setEnabled(False)
        self.messages.show_message("Quitting: finishing the last words and closing the transcript… "
                                   "This takes a second or two.", "info", "quitting")

    def request_quit(self) -> bool:
        """The user asked to quit (Quit / Ctrl+Q, the tray, the title bar's close button).

        Asks Save / Discard / Cancel when there is unsaved text, then closes (a running
        engine drains first, see :meth:`closeEvent`). Programmatic closes -- the app
        quitting on SIGINT/SIGTERM, scripts -- never ask: the journal keeps the text.

        Returns:
            False when the user cancelled.
        """
        if self._close_choice is None and self.has_unsaved_text():
            choice = self.ask_unsaved()
            if choice not in ("save", "discard"):
                self._close_choice = None
                return False
            self._close_choice = choice
        self._user_quit = True
        self.close()
        return True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        """Close: a running engine drains first (with feedback), a chosen Save happens after
        the drain, then the settings are saved and :attr:`closed` is emitted (the app quits)."""
        if event.spontaneous() and not self._user_quit:  # the window manager's close button
            event.ignore()
            QTimer.singleShot(0, self.request_quit)
            return
        if self.engine_state != "idle":
            event.ignore()
            if not self._quitting:
                self._begin_quitting()
            return
        if self._user_quit and self._close_choice is None and self.has_unsaved_text():
            choice = self.ask_unsaved()  # text that arrived only with the drain
            if choice not in ("save", "discard"):
                self._cancel_close(event)
                return
            self._close_choice = choice
        if self._close_choice == "save" and self.has_unsaved_text() and self.save_dialog() is None:
            self._cancel_close(event)  # the save was cancelled or failed: stay open
            return
        if self._close_choice == "discard":
            self.session.discard_recovered()  # the user threw it away: not offered again
        self._quitting = False
        self._user_quit = False
        self._close_choice = None
        self.messages.clear("quitting")
        self.save_settings()
        super().closeEvent(event)
        emit(self.closed)

    def _cancel_close(self, event: QCloseEvent) -> None:
        event.ignore()
        self._quitting = False
        self._user_quit = False
        self._close_choice = None
        self.messages.clear("quitting")
        self._update_controls()
