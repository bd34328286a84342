"""captioner.ui: the desktop app (PySide6). No torch/TensorFlow imports here.

- ``app``: :func:`run_gui` (``captioner`` with no arguments) and ``CaptionerApp``.
- ``main_window``: assembles the panels below, dispatches engine events, saves, recovers, quits.
- ``source_panel``, ``model_panel``: what to caption (devices, meters) and with which model.
- ``run_bar``, ``transcript_view``, ``save_panel``: Start/Stop + status, the transcript pane, Save as….
- ``session_model``: what the window's transcript holds and what is not on disk yet.
- ``unsaved_dialog``: the Save / Discard / Cancel question on quit.
- ``placement``: first-run places of the main window and the overlay (clear of each other).
- ``qt_helpers``: small shared helpers (combo selection, ``m:ss`` times, standard keys).
- ``overlay``: ``CaptionOverlay``, the always-on-top caption window.
- ``caption_model``: Qt-free caption lines (finals, partial tails, turns).
- ``recorder``: transcript + journal + autosave for the window (through captioner.transcript).
- ``settings``: every QSettings key, typed, in one place; ``settings_dialog`` edits them.
- ``tray``, ``level_meter``, ``messages``: tray icon, input meters, non-modal messages.

The engine thread is :mod:`captioner.engine.qt_worker`, driven through
:mod:`captioner.engine.qt_controller` (QtCore only).
"""
