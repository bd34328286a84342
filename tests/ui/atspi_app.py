"""The captioner window for tests/ui/test_accessibility_events.py: a scripted captioning run.

``python atspi_app.py SECONDS`` (``QT_QPA_PLATFORM=xcb``, accessibility on) shows the main
window and the overlay on a fake engine (tests/ui/ui_fakes.py) whose pipeline replays a
scripted stream of what ``SECONDS`` s of live captioning send: levels 15 times a second, a
growing partial twice a second, a final word run every second, a turn boundary every 6.5 s,
voice activity, and stats whose backlog wanders round 1 s (as the issue measured). It prints
``ready``; on ``run`` it presses Start and prints ``fed LINES`` once every finished line is in
the transcript pane; on ``stop`` it presses Stop and prints ``stopped``; ``quit`` ends it.
"""

from __future__ import annotations

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


def main(argv: list[str]) -> int:
    seconds = float(argv[1])
    app = QApplication(argv[:1])
    from ui_fakes import fake_factories, speech, write_wav

    from captioner.engine.qt_worker import EngineController, EngineWorker
    from captioner.ui.main_window import MainWindow
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.recorder import TranscriptRecorder
    from captioner.ui.settings import Keys, Settings

    tmp = Path(tempfile.mkdtemp(prefix="atspi-app-"))
    settings = Settings.from_file(str(tmp / "captioner.ini"))
    write_wav(tmp / "talk.wav")
    bf, sf, _, record = fake_factories({"talk.wav": speech(["alpha"])})
    made: list[ScriptedLive] = []

    def pipeline_factory(backend, sources, on_event, turns=None):
        made.append(ScriptedLive(sources, on_event, seconds))
        return made[-1]

    controller = EngineController(EngineWorker(bf, sf, pipeline_factory))
    overlay = CaptionOverlay(settings)
    settings.set(Keys.SOURCE_MODE, "file")
    settings.set(Keys.FILE, str(tmp / "talk.wav"))
    win = MainWindow(settings, overlay, controller, TranscriptRecorder(journal_dir=tmp / "journal"))
    win.ask_unsaved = lambda: "discard"
    win.show()
    overlay.show()

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
