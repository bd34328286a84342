"""Drive the real app on a real display: play a speech file as a live source, screenshot the overlay.

Run by ``tests/gui_screenshot.sh`` (which starts Xvfb, a compositor and a window to
cover). Uses the real parts: CaptionerApp (main window, overlay, tray), the
EngineController on its QThread with the default backend, the file source and the
live pipeline. Takes one screenshot while captions are live and one after the file has
played and Stop was pressed,
with ``import -window root`` (ImageMagick), and prints a JSON summary.

Usage: python tests/gui_screenshot.py WAV OUT_DIR
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from captioner.ui.app import CaptionerApp
from captioner.ui.settings import Keys, Settings

#: Give up (and still screenshot) after this many seconds of playback.
MAX_WAIT_S = 90.0


def main() -> int:
    wav, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    app = QApplication(sys.argv[:1])
    settings = Settings.from_file(os.path.join(tempfile.mkdtemp(), "captioner.ini"))
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, wav)
    settings.set(Keys.BACKEND, "default")
    settings.set(Keys.OVERLAY_LINES, 2)
    settings.set(Keys.OVERLAY_FONT_SIZE, 26)
    settings.set(Keys.OVERLAY_OPACITY, 0.55)
    gui = CaptionerApp(settings)
    gui.window.move(40, 40)
    gui.window.resize(760, 600)
    gui.show()
    gui.overlay.restore_geometry()
    summary: dict = {"shots": []}
    t0 = time.monotonic()

    def shot(name: str) -> None:
        path = os.path.join(out_dir, name)
        subprocess.run(["import", "-window", "root", path], check=True)
        g = gui.overlay.geometry()
        summary["shots"].append({"file": path, "overlay_text": gui.overlay.visible_text(),
                                 "overlay_rect": [g.x(), g.y(), g.width(), g.height()],
                                 "at_s": round(time.monotonic() - t0, 1)})

    state = {"live_shot": False}

    def poll() -> None:
        lines = gui.overlay.visible_lines()
        segments = len(gui.window.recorder.transcript.segments)
        has_partial = any(v.partial for v in lines)
        timed_out = time.monotonic() - t0 > MAX_WAIT_S
        at = os.environ.get("LIVE_SHOT_AT_S")  # a fixed moment of playback instead (turn cases)
        due = time.monotonic() - t0 >= float(at) if at else segments >= 1 and has_partial  # final text with a live partial tail (one turn may be one segment)
        if not state["live_shot"] and (due or timed_out):
            state["live_shot"] = True
            shot("overlay_live.png")
            return
        if state["live_shot"] and not state.get("stop_pressed") and (
            time.monotonic() - t0 > MAX_WAIT_S or any(code == "source_ended" for _, _, code in gui.window.messages.messages())
        ):
            state["stop_pressed"] = True
            gui.window.stop()  # the file has been played: Stop must keep its last words
            return
        if state["live_shot"] and gui.window.engine_state == "idle":
            timer.stop()
            app.processEvents()
            shot("overlay_after_stop.png")
            summary["transcript"] = gui.window.transcript_view.toPlainText()
            summary["status"] = gui.window.run_bar.status_label.text()
            summary["messages"] = gui.window.messages.messages()
            app.quit()

    timer = QTimer()
    timer.setInterval(100)
    timer.timeout.connect(poll)
    timer.start()
    QTimer.singleShot(0, gui.window.start)
    app.aboutToQuit.connect(gui.shutdown)
    app.exec()
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0 if len(summary["shots"]) == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
