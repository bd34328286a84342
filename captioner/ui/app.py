"""The desktop app: ``captioner`` with no arguments calls :func:`run_gui`."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Callable, Mapping

from PySide6.QtCore import QCoreApplication, QMargins, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from captioner.engine.qt_controller import EngineController
from captioner.resources import APP_ID
from captioner.ui.caption_page import CaptionPageService
from captioner.ui.icons import application_icon
from captioner.ui.main_thread_gc import MainThreadGC
from captioner.ui.main_window import MainWindow
from captioner.ui.name_alerts import NameAlerts
from captioner.ui.overlay import CaptionOverlay, always_on_top_note
from captioner.ui.overlay_window import DISPLAY_NAME
from captioner.ui.placement import first_run_placement
from captioner.ui.settings import APPLICATION, ORGANIZATION, Keys, Settings, profanity_filter
from captioner.ui.settings_dialog import SettingsDialog
from captioner.ui.single_instance import SingleInstance
from captioner.ui.tray import TrayIcon


class CaptionerApp:
    """The assembled app: settings, overlay, main window, tray, shutdown.

    Args:
        settings: typed settings (default: the user's QSettings store).
        controller: the engine handle (default: a real engine on its own thread).

    Attributes:
        overlay, window, tray: the parts, for tests and scripts.
        alerts: the :class:`~captioner.ui.name_alerts.NameAlerts` (issue 49).
    """

    def __init__(self, settings: Settings | None = None, controller: EngineController | None = None) -> None:
        self.settings = settings or Settings()
        #: nothing remembered of where the windows go: place them clear of each other in show()
        self.first_run = not self.settings.get(Keys.OVERLAY_LAST_SCREEN) and not self.settings.get(
            Keys.MAIN_WINDOW_GEOMETRY)
        self.overlay = CaptionOverlay(self.settings)
        self.overlay.setWindowIcon(application_icon())
        self.overlay.restore_geometry()
        self.window = MainWindow(self.settings, self.overlay, controller)
        self.window.setWindowIcon(application_icon())
        self.tray = TrayIcon(self.window, self.window.quit_action)
        self.window.settings_action.triggered.connect(self.open_settings)
        self.window.quit_action.triggered.connect(self.window.request_quit)
        self.window.attention.connect(self.tell_outside)
        # the caption page gets the events where the overlay gets them (queued to the GUI thread, in order)
        self.caption_page = CaptionPageService(self.settings, self.window)
        self.window.controller.event.connect(self.caption_page.publish)
        self.window.run_starting.connect(self.caption_page.new_run)
        self.caption_page.problem.connect(lambda text: self.window.messages.show_message(text, "warning",
                                                                                         "caption_page"))
        self.apply_caption_page()
        # issue 49: someone else said a listed name -> the overlay, a desktop notification (after the window)
        self.alerts = NameAlerts(self.settings, self.overlay, self.tray,
                                 name_of=lambda sid: self.window.recorder.transcript.speaker_name(sid),
                                 parent=self.window)
        self.window.controller.event.connect(self.alerts.on_event)
        self.window.run_starting.connect(lambda: self.alerts.begin_run(
            spec.label for spec in self.window.sources.specs() if spec.kind == "microphone"))
        self.window.controller.stopped.connect(self.alerts.end_run)
        self._shut = False

    def show(self) -> None:
        """Show the window (and the overlay if enabled), then say what needs saying."""
        if self.first_run:
            self.place_first_run()
        self.window.show()
        self.window.set_overlay_visible(self.settings.get(Keys.OVERLAY_VISIBLE))
        note = always_on_top_note()
        if note:
            self.window.messages.show_message(note, "info", "wayland")
        self.window.check_recovery()

    def tell_outside(self, text: str) -> None:
        """A problem to see while the main window is not in front: a tray message, else an overlay notice."""
        if not self.tray.notify(text):
            self.overlay.show_notice(text)

    def place_first_run(self) -> None:
        """The main window at the top of the screen, the overlay below it, clear of each other."""
        screen = self.window.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        frame = self.window.frameGeometry()
        geom = self.window.geometry()
        margins = QMargins(geom.left() - frame.left(), geom.top() - frame.top(),
                           frame.right() - geom.right(), frame.bottom() - geom.bottom())
        client, overlay = first_run_placement(
            screen.availableGeometry(), self.overlay.default_geometry(screen), self.window.default_size(),
            self.window.minimumSize(), margins)
        self.window.setGeometry(client)
        self.overlay.place(overlay)

    def bring_to_front(self) -> None:
        """Show the main window on top (another start of the app asked for it)."""
        self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()

    def open_settings(self) -> None:
        """Open the (non-blocking) settings dialog."""
        dialog = SettingsDialog(self.settings, self.window, shortcut_status=self.window.shortcuts.status(),
                                caption_page=self.caption_page, speakers=self.window.speaker_labels)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.applied.connect(self.overlay.apply_settings)
        dialog.applied.connect(self.window.apply_shortcuts)
        dialog.applied.connect(self.window.apply_text_mask)
        dialog.applied.connect(self.apply_caption_page)
        dialog.applied.connect(self.alerts.apply_settings)
        dialog.applied.connect(lambda: self.window.click_through_action.setChecked(self.overlay.click_through))
        # while it is open the desktop-wide keys are released, so they can be typed into its key fields
        self.window.shortcuts.suspend()
        dialog.finished.connect(lambda _result: self.window.shortcuts.resume())
        dialog.open()

    def apply_caption_page(self) -> None:
        """Settings -> Caption page: start/stop the page; it masks as the overlay does."""
        self.window.messages.clear("caption_page")
        self.caption_page.set_mask(profanity_filter(self.settings))
        self.caption_page.apply_settings()

    def shutdown(self) -> None:
        """Stop the engine (draining so the last words are kept), close the transcript, save settings."""
        if self._shut:
            return
        self._shut = True
        self.overlay.save_geometry()
        self.window.controller.shutdown()
        QCoreApplication.sendPostedEvents()  # deliver the drained events and "stopped" before closing
        self.window.recorder.end()
        self.window.shortcuts.close()  # release the desktop-wide key grabs/registrations
        self.caption_page.stop()  # viewers disconnected, port closed (within 2 s)
        self.settings.sync()
        self.overlay.close()


def _excepthook_for(app: CaptionerApp) -> Callable:
    def hook(exc_type, exc, tb):
        traceback.print_exception(exc_type, exc, tb)  # the log keeps the details
        try:
            app.window.messages.show_message(
                f"Something went wrong ({exc_type.__name__}: {exc}). The transcript is kept; if captions "
                "stopped, press Start again.",
                "error",
                "internal",
            )
        except Exception:  # noqa: BLE001
            pass

    return hook


def threading_main() -> bool:
    """True on the interpreter's main thread (only there may signal handlers be installed)."""
    import threading

    return threading.current_thread() is threading.main_thread()


#: Printed (and exit code 1) when there is no display to open a window on.
NO_DISPLAY_MESSAGE = (
    "captioner: no graphical display found (DISPLAY and WAYLAND_DISPLAY are not set).\n"
    "Run it in your desktop session, or use `captioner transcribe FILE` / `captioner listen` in a terminal."
)


def display_problem(env: Mapping[str, str] | None = None, platform: str | None = None) -> str:
    """Why no window can be opened, or ``""``.

    On Linux (and the BSDs) Qt needs an X11 or Wayland display; without one
    ``QApplication`` aborts the process (rc 134) with a misleading hint about
    ``libxcb-cursor0``. An explicit ``QT_QPA_PLATFORM`` (``offscreen``, ``vnc``,
    ``eglfs``...) is trusted. Windows and macOS always have a display.

    Args:
        env: environment to look at (default ``os.environ``).
        platform: ``sys.platform`` value (default: this one).
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if platform.startswith(("win", "darwin", "cygwin")):
        return ""
    if env.get("QT_QPA_PLATFORM") or env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return ""
    return NO_DISPLAY_MESSAGE


def identify_application(app: QApplication) -> None:
    """Names and icon of the app as the desktop sees them. The display name "captioner" is what Qt
    appends to window titles that do not end with it (the overlay's title carries it already:
    :data:`captioner.ui.overlay_window.TITLE`)."""
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationDisplayName(DISPLAY_NAME)
    app.setWindowIcon(application_icon())
    app.setDesktopFileName(APP_ID)  # Wayland: the compositor takes the icon from the installed desktop entry


def run_gui(argv: list[str] | None = None, *, settings: Settings | None = None, autostart: bool = False) -> int:
    """Run the desktop app until it quits.

    Args:
        argv: Qt command line (default ``sys.argv``).
        settings: typed settings (default: the user's store).
        autostart: press Start as soon as the window is up (demos, screenshots).

    Returns:
        The process exit code: 0 after a normal quit, or when another instance is running (it is
        brought to the front instead); 1 when there is no display or the running one cannot be reached.
    """
    problem = display_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv)
    identify_application(app)
    guard = SingleInstance()
    if not guard.acquire():
        if guard.notified:
            print("captioner is already running: its window was brought to the front.", file=sys.stderr)
        else:
            print(f"captioner seems to be running already (lock file {guard.lock_path}). Switch to its "
                  "window, or quit it first.", file=sys.stderr)
        return 0 if guard.notified else 1
    quit_on_last = app.quitOnLastWindowClosed()
    app.setQuitOnLastWindowClosed(False)  # the overlay is a tool window; quit when the main window closes
    gui = CaptionerApp(settings)
    gui.window.closed.connect(app.quit)
    guard.activated.connect(gui.bring_to_front)
    app.aboutToQuit.connect(gui.shutdown)
    previous_hook = sys.excepthook
    sys.excepthook = _excepthook_for(gui)
    # Ctrl+C / SIGTERM quit cleanly (drain, close the journal) instead of killing the transcript;
    # a periodic no-op timer lets the interpreter run the Python signal handler during exec().
    previous_signals = {}
    if threading_main():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous_signals[sig] = signal.signal(sig, lambda *_: QTimer.singleShot(0, app.quit))
    wake = QTimer()
    wake.start(300)
    wake.timeout.connect(lambda: None)
    # from here on, cycles are collected on this thread only: a widget freed by a collection that
    # the engine's thread happened to set off crashes Qt (main_thread_gc explains)
    collector = MainThreadGC()
    collector.start()
    try:
        gui.show()
        if autostart:
            gui.window.start()
        code = int(app.exec())
        gui.shutdown()  # no-op when aboutToQuit already ran it
        return code
    finally:
        wake.stop()
        collector.stop()
        for sig, handler in previous_signals.items():
            signal.signal(sig, handler)
        sys.excepthook = previous_hook
        app.aboutToQuit.disconnect(gui.shutdown)
        app.setQuitOnLastWindowClosed(quit_on_last)
        guard.release()
