"""The captioner window for tests/ui/test_accessibility_events.py: a scripted captioning run.

``python atspi_app.py SECONDS`` (``QT_QPA_PLATFORM=xcb``, accessibility on) shows the main
window and the overlay on a fake engine (tests/ui/ui_fakes.py) whose pipeline replays a
scripted stream of what ``SECONDS`` s of live captioning send: levels 15 times a second, a
growing partial twice a second, a final word run every second, a turn boundary every 6.5 s,
voice activity, and stats whose backlog wanders round 1 s (as the issue measured). It prints
``ready``; on ``run`` it presses Start and prints ``fed LINES`` once every finished line is in
the transcript pane; ``lines`` prints the pane's segment lines (JSON), ``settings`` opens the
Settings dialog and prints ``settings``; on ``stop`` it presses Stop and prints ``stopped``;
``focus``, ``focusables`` and ``winid`` tell what has the keyboard (JSON; the window's X id);
``quit`` ends it.
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from PySide6.QtCore import QSocketNotifier, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from captioner.events import Level, Stats, TextDelta, TurnBoundary, VoiceActivity  # noqa: E402

WORDS = ("we will look at the numbers for the next quarter and decide what we can do with the remaining "
         "budget before the end of the week").split()


def layout_top(w) -> int:
    """``w``'s top in its window as if every scroll area (a form that scrolls) were tall enough to
    show all of its content: its place in the layout, top to bottom."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QScrollArea

    window = w.window()
    y = w.mapTo(window, QPoint(0, 0)).y()
    for area in window.findChildren(QScrollArea):
        if not area.isVisible() or area.widget() is None:
            continue
        if area.isAncestorOf(w):  # inside: where it is in the unscrolled content
            y += area.verticalScrollBar().value()
        elif area.mapTo(window, QPoint(0, area.height())).y() <= y:  # below the area: pushed down
            y += area.verticalScrollBar().maximum()
    return y


def scripted_stream(label: str, seconds: float) -> tuple[list, int]:
    """The events of ``seconds`` s of captioning for source ``label``, and how many lines close."""
    events, lines = [], 0
    turn_words: list[str] = []
    shown = 0
    for tick in range(int(seconds * 15)):  # 15 level updates per second
        t = tick / 15
        rms = -35.0 + 10.0 * math.sin(t * 3.0)
        events.append(Level(rms, rms + 8.0, label))
        if tick % 2 == 0:
            events.append(VoiceActivity(t, 0.9 if int(t) % 7 < 6 else 0.05, "speaking" if int(t) % 7 < 6 else "pause",
                                        label))
        if tick % 15 == 14:  # a final word run every second
            word = " " + WORDS[int(t) % len(WORDS)] + " " + WORDS[(int(t) + 1) % len(WORDS)]
            turn_words.append(word)
            events.append(TextDelta(word, t - 0.5, t, True, label))
            shown = 0
        elif tick % 7 == 3:  # the partial grows twice a second
            shown += 1
            events.append(TextDelta(" " + " ".join(WORDS[:shown]), t - 0.2, t, False, label))
        if tick % 8 == 0:  # stats twice a second, the backlog wandering round 1 s
            events.append(Stats(step_ms=80.0, rtf=0.9, backlog_s=1.0 + 0.45 * math.sin(t * 1.3), audio_s=t,
                                source=label))
        if tick % int(6.5 * 15) == int(6.5 * 15) - 1 and turn_words:
            events.append(TextDelta("", t, t, False, label))
            events.append(TurnBoundary(t, "semantic", 0.9, label))
            events.append(VoiceActivity(t, 0.0, "turn_over", label))
            turn_words, lines = [], lines + 1
    return events, lines


class ScriptedLive:
    """A pipeline (the LiveCaptioner shape the worker drives) that replays :func:`scripted_stream`."""

    def __init__(self, sources, on_event, seconds: float) -> None:
        self.label = sources[0].label
        self.events, self.lines = scripted_stream(self.label, seconds)
        self.on_event = on_event
        self.error = None
        self.fed_all = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def is_running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        for ev in self.events:
            self.on_event(ev)
        self.fed_all.set()
        self._stop.wait()

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool:
        self._stop.set()
        self._thread.join(10)
        return True

    def backlog_s(self) -> float:
        return 0.0


def widget_name(widget) -> str:
    """What a screen reader calls ``widget`` (Qt's accessible name; its class when it has none)."""
    from PySide6.QtGui import QAccessible

    iface = QAccessible.queryAccessibleInterface(widget)
    return (iface.text(QAccessible.Text.Name) if iface is not None else "") or type(widget).__name__


def main(argv: list[str]) -> int:
    seconds = float(argv[1])
    app = QApplication(argv[:1])
    from ui_fakes import fake_factories, file_window, speech, write_wav

    from captioner.engine.qt_controller import EngineController
    from captioner.engine.qt_worker import EngineWorker
    from captioner.ui.settings import Settings

    tmp = Path(tempfile.mkdtemp(prefix="atspi-app-"))
    settings = Settings.from_file(str(tmp / "captioner.ini"))
    write_wav(tmp / "talk.wav")
    bf, sf, _, record = fake_factories({"talk.wav": speech(["alpha"])})
    made: list[ScriptedLive] = []

    def pipeline_factory(backend, sources, on_event, turns=None):
        made.append(ScriptedLive(sources, on_event, seconds))
        return made[-1]

    controller = EngineController(EngineWorker(bf, sf, pipeline_factory))
    dialogs: list = []
    win, overlay = file_window(settings, controller, tmp)
    overlay.show()

    def open_settings() -> None:  # as the app does (captioner.ui.app.CaptionerApp.open_settings)
        from captioner.ui.settings_dialog import SettingsDialog

        dialogs.append(SettingsDialog(settings, win, shortcut_status="Desktop-wide"))
        dialogs[-1].open()

    win.settings_action.triggered.connect(open_settings)

    def pane_lines() -> int:
        return sum(1 for line in win.transcript_view.toPlainText().splitlines() if line.startswith("["))

    def when(predicate, then) -> None:
        if predicate():
            then()
        else:
            QTimer.singleShot(20, lambda: when(predicate, then))

    def command() -> None:
        what = sys.stdin.readline().strip()
        if what == "run":
            win.start_button.click()
            when(lambda: made and made[-1].fed_all.is_set() and pane_lines() >= made[-1].lines,
                 lambda: print("fed", made[-1].lines, flush=True))
        elif what == "lines":  # the pane's segment lines, as JSON
            print(json.dumps([ln for ln in win.transcript_view.toPlainText().splitlines() if ln.startswith("[")]),
                  flush=True)
        elif what == "settings":  # the Settings dialog, open beside the window
            from captioner.ui.settings_dialog import SettingsDialog

            dialogs.append(SettingsDialog(settings, win, shortcut_status="Desktop-wide"))
            dialogs[-1].show()
            when(lambda: dialogs[-1].windowHandle() is not None and dialogs[-1].windowHandle().isExposed(),
                 lambda: print("settings", flush=True))
        elif what == "focus":  # the focused widget: accessible name, class, global rect, unscrolled top (JSON)
            w = app.focusWidget()
            top = w.mapToGlobal(w.rect().topLeft()) if w is not None else None
            print(json.dumps(None if w is None else {
                "name": widget_name(w),
                "class": type(w).__name__, "window": w.window().windowTitle(),
                "rect": [top.x(), top.y(), w.width(), w.height()], "top": layout_top(w),
                "shown": not w.visibleRegion().isEmpty()}), flush=True)
        elif what == "focusables":  # every shown widget of the active window that Tab can reach
            from PySide6.QtCore import Qt as _Qt
            from PySide6.QtWidgets import QWidget

            top = app.activeWindow() or win
            print(json.dumps(sorted({type(w).__name__ + ":" + widget_name(w)
                                     for w in top.findChildren(QWidget) if w.isVisibleTo(top) and w.isEnabled()
                                     and w.focusPolicy() & _Qt.FocusPolicy.TabFocus and w.focusProxy() is None})),
                  flush=True)
        elif what == "winid":
            print(int((app.activeWindow() or win).winId()), flush=True)
        elif what == "stop":
            win.start_button.click()
            when(lambda: win.engine_state == "idle", lambda: print("stopped", flush=True))
        elif what in ("quit", ""):
            controller.shutdown(5000)
            app.quit()

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(command)
    when(lambda: win.windowHandle() is not None and win.windowHandle().isExposed(),
         lambda: print("ready", flush=True))
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
