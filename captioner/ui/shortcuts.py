"""The keyboard shortcuts of Start/Stop, Show/hide overlay and Click-through: in the app and desktop-wide.

:class:`ShortcutBinder` reads the three keys from the settings and binds each twice:

- on its ``QAction`` (application-wide, as before): works while a captioner window is active
  on every platform, also where no global mechanism exists;
- desktop-wide through :class:`~captioner.ui.global_shortcuts.GlobalShortcuts` (X11 key grabs,
  the Wayland portal, RegisterHotKey, Carbon hot keys), so it works while another application
  has the focus. Where the platform grabs the key (X11, Windows, macOS) it no longer reaches
  the focused window, so an action never runs twice.

A key already bound to Save/Quit or to an earlier action is not bound again (Qt would call it
ambiguous and run neither); a key another program holds is reported. Both are messages with
code ``"shortcuts"`` in the window's message bar.
"""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

from captioner.ui.global_shortcuts import ACTION_DESCRIPTIONS as DESCRIPTIONS
from captioner.ui.global_shortcuts import GlobalShortcuts
from captioner.ui.settings import Key, Keys, Settings

#: Action id (what the global mechanism reports) -> its settings key.
SHORTCUT_KEYS: dict[str, Key] = {
    "start_stop": Keys.SHORTCUT_START_STOP,
    "toggle_overlay": Keys.SHORTCUT_TOGGLE_OVERLAY,
    "toggle_click_through": Keys.SHORTCUT_CLICK_THROUGH,
}


class ShortcutBinder(QObject):
    """Binds the three shortcuts of a window, in the app and desktop-wide.

    Args:
        settings: where the keys are stored.
        actions: action id -> its ``QAction`` (triggered by either path).
        fixed: ``QAction`` s whose own keys the three must not take (Save, Quit).
        messages: the window's :class:`~captioner.ui.messages.MessageBar`.
        global_shortcuts: the desktop-wide mechanism (default: this platform's).

    Attributes:
        global_shortcuts: the :class:`GlobalShortcuts` in use.
        global_problems: action id -> why its key is not desktop-wide (after :meth:`apply`).
    """

    def __init__(self, settings: Settings, actions: dict[str, QAction], fixed: list[QAction], messages,
                 global_shortcuts: GlobalShortcuts | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.actions = actions
        self.fixed = fixed
        self.messages = messages
        self.global_shortcuts = global_shortcuts if global_shortcuts is not None else GlobalShortcuts(parent=self)
        self.global_shortcuts.activated.connect(self._activated)
        self.global_shortcuts.problem.connect(self._on_problem)  # a method: queued into the GUI thread
        self.global_problems: dict[str, str] = {}
        #: True between :meth:`suspend` and :meth:`resume` (the settings dialog is open)
        self.suspended = False

    def status(self) -> str:
        """One sentence for the settings dialog: where the shortcuts work."""
        g = self.global_shortcuts
        if g.backend is None:
            return g.note or "These shortcuts work while a captioner window is active."
        return f"These shortcuts work from any application ({g.name})."

    def apply(self) -> None:
        """(Re)bind the three keys from the settings (at start, on Apply and after the settings
        dialog); while :attr:`suspended` only in the app (desktop-wide on :meth:`resume`)."""
        taken = {seq.toString() for a in self.fixed for seq in a.shortcuts()}
        clashes = []
        wanted: dict[str, str] = {}
        for action_id, key in SHORTCUT_KEYS.items():
            action = self.actions[action_id]
            seq = QKeySequence(self.settings.get(key))
            text = seq.toString()
            if text and text in taken:
                clashes.append(f"{text} ({action.text()})")
                seq = QKeySequence()
            taken.add(text)
            action.setShortcut(seq)
            wanted[action_id] = seq.toString(QKeySequence.SequenceFormat.PortableText)
        self.messages.clear("shortcuts")
        if clashes:
            self.messages.show_message(
                f"These shortcuts were already used by another action and are switched off: {', '.join(clashes)}. "
                "To use other keys, open File > Settings…", "warning", "shortcuts")
        if self.suspended:
            return
        self.messages.clear("global_shortcuts")
        self.global_problems = self.global_shortcuts.bind(wanted)
        if self.global_problems:
            listed = "; ".join(f"{DESCRIPTIONS[a]}: {why}" for a, why in self.global_problems.items())
            self.messages.show_message(
                f"Some shortcuts do not work from other applications ({listed}). To use other keys, open "
                "File > Settings…", "warning", "global_shortcuts")
        elif self.global_shortcuts.backend is None and self.global_shortcuts.note:
            self.messages.show_message(self.global_shortcuts.note, "info", "global_shortcuts")

    def suspend(self) -> None:
        """Release the desktop-wide keys for a while (the settings dialog is open: a grabbed key
        could not be typed into its key fields, it would run its action instead); :meth:`apply`
        (the dialog's Apply) keeps them released, :meth:`resume` takes them again."""
        self.suspended = True
        self.global_shortcuts.bind({})

    def resume(self) -> None:
        """Bind the keys desktop-wide again after :meth:`suspend` (the settings dialog closed)."""
        self.suspended = False
        self.apply()

    def _activated(self, action_id: str) -> None:
        action = self.actions.get(action_id)
        if action is not None and action.isEnabled():
            action.trigger()  # a checkable action toggles

    def _on_problem(self, text: str) -> None:
        self.messages.show_message(text, "warning", "global_shortcuts")

    def close(self) -> None:
        """Release the desktop-wide registrations (on quit)."""
        self.global_shortcuts.close()
