"""The main window's transcript files: Save as… (TXT, SRT, VTT, JSON) and recovering a crashed session.

:class:`TranscriptFiles` is mixed into :class:`~captioner.ui.main_window.MainWindow`, which owns
what it uses (the :class:`~captioner.ui.session_model.SessionModel`, the recorder, the messages).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from captioner.ui.recorder import SAVE_FORMATS
from captioner.ui.settings import Keys


class TranscriptFiles:
    """Saving and crash recovery of :class:`~captioner.ui.main_window.MainWindow` (a mixin)."""

    def _update_save_enabled(self) -> None:
        has_text = self.session.has_text()
        self.save_panel.save_button.setEnabled(has_text)
        self.save_action.setEnabled(has_text)

    def _say_nothing_to_save(self) -> None:
        self.messages.show_message("Nothing to save yet: the transcript is empty. Press Start to caption "
                                   "something first.", "info", "save")

    def save_transcript(self, path: str) -> Path | None:
        """Save every run the pane shows to ``path`` (format from the suffix); errors become messages."""
        if not self.session.has_text():
            self._say_nothing_to_save()
            return None
        try:
            written = self.session.save(path)
        except Exception as exc:  # noqa: BLE001 - TranscriptWriteError, ValueError: shown, never raised
            self.messages.show_message(f"The transcript was not saved: {exc}", "error", "save")
            return None
        self.messages.clear("recovered")  # "Use Save as… to keep it": done
        self.messages.show_message(f"Transcript saved to {written}.", "info", "save")
        self.settings.set(Keys.LAST_SAVE_DIR, str(Path(written).parent))
        return Path(written)

    def save_dialog(self) -> Path | None:
        """Ask for a file name and format (TXT, SRT, VTT, JSON) and save.

        Returns:
            The file written, or ``None`` when the user cancelled or writing failed.
        """
        if not self.session.has_text():
            self._say_nothing_to_save()
            return None
        filters = {"txt": "Plain text (*.txt)", "srt": "SubRip subtitles (*.srt)", "vtt": "WebVTT subtitles (*.vtt)",
                   "json": "JSON with times (*.json)"}
        start = self.settings.get(Keys.LAST_SAVE_DIR) or str(Path.home())
        path, chosen = QFileDialog.getSaveFileName(self, "Save transcript", os.path.join(start, "transcript.txt"),
                                                   ";;".join(filters.values()))
        if not path:
            return None
        fmt = next((k for k, v in filters.items() if v == chosen), "txt")
        if Path(path).suffix.lower() not in SAVE_FORMATS.values():
            path += SAVE_FORMATS[fmt]
        return self.save_transcript(path)

    # -- crash recovery ------------------------------------------------------------------------
    def check_recovery(self) -> bool:
        """Offer to recover the newest journal a crash left behind. Returns True if one was offered."""
        try:
            found = self.recorder.unfinished()
        except Exception:  # noqa: BLE001 - recovery is a convenience, never a blocker
            return False
        loaded = set(self.session.recovered_journals())
        found = [p for p in found if p not in loaded]
        if not found:
            return False
        path = found[0]
        self.messages.show_message(
            f"captioner did not close cleanly last time. The transcript of that session was saved in {path}. "
            "Recover it to read and save it, or discard it.",
            "warning",
            "recovery",
            actions=[("Recover", lambda p=path: self.recover(p)), ("Discard", lambda p=path: self.recorder.discard(p))],
        )
        return True

    def recover(self, path) -> None:
        """Load a crashed session's transcript into the window (then Save as… works on it)."""
        try:
            transcript = self.session.recover(path)
        except Exception as exc:  # noqa: BLE001
            self.messages.show_message(f"The journal could not be read: {exc}", "error", "recovery")
            return
        self.transcript_view.add_recovered(transcript.segments, transcript.speaker_name)
        self.messages.show_message("The previous session was recovered. Use Save as… to keep it.", "info", "recovered")
