"""Screenshots of the main window and the overlay as a new user first sees them, for looking at.

Run under a real X display of a given size, e.g.::

    xvfb-run -a -s '-screen 0 1366x768x24' python tests/ui_screenshots.py out/1366x768

It starts the app with fresh settings (a first run: placement, defaults), plays a
scripted transcript into it (two runs, a partial tail, a message), and writes
``screen.png`` (``import -window root``), ``main_window.png`` and ``overlay.png`` (Qt
``grab()``), plus ``geometry.json`` with both windows' frames. Used by
``tests/ui/test_ui_screenshots.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp()
    os.environ.setdefault("CAPTIONER_DATA_DIR", os.path.join(work, "data"))
    compositor = subprocess.Popen(["xcompmgr"]) if shutil.which("xcompmgr") else None

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    app = QApplication(sys.argv[:1])
    from captioner.events import Stats, TextDelta, TurnBoundary
    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings import Settings

    settings = Settings.from_file(os.path.join(work, "captioner.ini"))
    gui = CaptionerApp(settings)
    gui.show()
    win = gui.window

    def script() -> None:
        session = win.session
        for run, lines in enumerate(([("You", "Good morning everyone, thank you for joining the call today."),
                                      ("Meeting", "We will start with the quarterly report.")],
                                     [("Meeting", "Then we talk about the new release, and questions at the end."),
                                      ("You", "Please send your questions before Friday.")])):
            session.begin_run("default", ["You", "Meeting"], None)
            win.transcript_view.begin_run()
            t = 0.0
            for source, text in lines:
                for ev in (TextDelta(" " + text, t, t + 3.0, True, source), TurnBoundary(t + 3.2, source=source)):
                    win._on_event(ev)
                t += 4.0
            if run == 0:
                session.end_run()
                win.transcript_view.end_run()
        win._on_event(TextDelta(" And one more thing", 9.0, 10.0, True, "You"))
        win._on_event(TextDelta(" about the budget", 10.0, 11.0, False, "You"))
        win._on_event(Stats(rtf=0.42, backlog_s=0.3, source="You"))
        win.engine_state = "running"  # as the engine would say (no engine runs in this script)
        win._update_controls()
        win.run_bar.set_status("Captioning")
        win.messages.show_message("The transcript was not saved: the folder /mnt/usb is not writable. Choose "
                                  "another folder with Save as….", "error", "save")
        QTimer.singleShot(800, shoot)

    def shoot() -> None:
        app.processEvents()
        subprocess.run(["import", "-window", "root", os.path.join(out, "screen.png")], check=False)
        win.grab().save(os.path.join(out, "main_window.png"))
        gui.overlay.grab().save(os.path.join(out, "overlay.png"))
        f, o = win.frameGeometry(), gui.overlay.geometry()
        screen = win.screen().availableGeometry()
        with open(os.path.join(out, "geometry.json"), "w", encoding="utf-8") as fh:
            json.dump({"window_frame": [f.x(), f.y(), f.width(), f.height()],
                       "overlay": [o.x(), o.y(), o.width(), o.height()],
                       "screen": [screen.x(), screen.y(), screen.width(), screen.height()],
                       "overlay_text": gui.overlay.visible_text()}, fh)
        gui.overlay.show_notice("The audio file was not found. Choose a WAV, FLAC or OGG file with Browse…")
        app.processEvents()
        gui.overlay.grab().save(os.path.join(out, "overlay_notice.png"))
        gui.overlay.hide_notice()
        from captioner.ui.overlay import CaptionOverlay
        from captioner.ui.settings import Keys

        settings.set(Keys.OVERLAY_OPACITY, 0.1)
        empty = CaptionOverlay(settings)
        for name, size in (("overlay_hint_narrow.png", (300, 110)), ("overlay_hint_wide.png", (900, 110))):
            empty.resize(*size)
            empty.grab().save(os.path.join(out, name))
        win.engine_state = "idle"
        win.close()
        app.quit()

    QTimer.singleShot(500, script)
    code = app.exec()
    gui.shutdown()
    if compositor is not None:
        compositor.terminate()
        compositor.wait(5)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
