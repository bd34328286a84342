"""The real app (CaptionerApp) on the xcb platform with a fake engine, for the global-shortcut test.

Run as ``python global_shortcut_app.py WORKDIR`` with ``DISPLAY`` set. It prints one line per fact,
flushed, for the test to read:

- ``ready {"mechanism": ..., "problems": {...}, "messages": [...]}`` once the windows are up;
- ``state <idle|loading|running|stopping>`` on every engine state change;
- ``overlay <true|false>`` / ``click_through <true|false>`` when those toggle.

It quits on ``quit`` on its standard input (or when that closes).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtCore import QObject, QTimer, Signal  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


def say(*parts) -> None:
    print(*parts, flush=True)


class StdinWatcher(QObject):
    """Reads stdin on a thread; ``quit`` (or EOF) asks the app to quit through a queued signal."""

    quit_requested = Signal()

    def start(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.strip() == "quit":
                break
        from captioner.engine.qt_emit import emit

        emit(self.quit_requested)


def main() -> int:
    work = Path(sys.argv[1])
    os.environ["CAPTIONER_DATA_DIR"] = str(work / "data")
    os.environ["CAPTIONER_CONFIG_DIR"] = str(work / "config")
    app = QApplication(["captioner-test"])
    from ui_fakes import fake_factories, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.app import CaptionerApp
    from captioner.ui.settings import Keys, Settings

    settings = Settings.from_file(str(work / "captioner.ini"))
    wav = work / "talk.wav"
    write_wav(wav)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(wav))
    bf, sf, pf, _record = fake_factories({"talk.wav": speech(["alpha", "bravo"])})
    gui = CaptionerApp(settings, EngineController(EngineWorker(bf, sf, pf)))
    win = gui.window
    win.controller.state_changed.connect(lambda s: say("state", s))
    win.overlay_action.toggled.connect(lambda on: say("overlay", json.dumps(on)))
    win.click_through_action.toggled.connect(lambda on: say("click_through", json.dumps(on)))
    watcher = StdinWatcher()
    watcher.quit_requested.connect(app.quit)
    watcher.start()
    gui.show()

    def ready() -> None:
        g = win.shortcuts.global_shortcuts
        say("ready", json.dumps({"mechanism": g.name, "problems": win.shortcuts.global_problems,
                                 "messages": [text for text, _sev, _code in win.messages.messages()],
                                 "overlay": win.overlay_action.isChecked()}))

    QTimer.singleShot(0, ready)
    code = app.exec()
    gui.shutdown()
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
