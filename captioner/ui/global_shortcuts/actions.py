"""The actions a global shortcut can trigger, as the desktop (portal) and the messages name them.

Below the package's :class:`~captioner.ui.global_shortcuts.GlobalShortcuts` and the platform
modules that register them (:mod:`~captioner.ui.global_shortcuts.portal`). Pure Python.
"""

from __future__ import annotations

#: Action id -> what it does, as the desktop (portal) and the messages name it.
ACTION_DESCRIPTIONS = {
    "start_stop": "Start or stop captions",
    "toggle_overlay": "Show or hide the caption overlay",
    "toggle_click_through": "Toggle overlay click-through",
}
