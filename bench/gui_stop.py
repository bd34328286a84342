"""GUI Stop time over the real live pipeline: a model caught up, 10 s behind, or hung in a call.

Runs ``EngineController``/``EngineWorker`` (Qt worker thread) with ``LiveCaptioner`` and a file
source, fake models from ``tests/audio_fakes.py`` (one word per 100 ms chunk; "behind" costs
50 ms per chunk and the file is read as fast as possible; "hung" blocks forever after its
second word), presses Stop and times it until ``stopped()`` reaches the GUI thread. Prints
JSON: seconds per case, ``null`` when Stop had not returned after 6 s. Run from the repo root:

    QT_QPA_PLATFORM=offscreen python bench/gui_stop.py

The process exits with ``os._exit`` (a hung model thread is left behind on purpose).
"""

import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.getcwd())

import soundfile as sf  # noqa: E402
from PySide6.QtCore import QCoreApplication, QEventLoop  # noqa: E402

from captioner.audio.filesource import FileSource  # noqa: E402
from captioner.engine.qt_controller import EngineController  # noqa: E402
from captioner.engine.qt_worker import (  # noqa: E402
    EngineConfig,
    EngineWorker,
    SourceSpec,
    default_pipeline_factory,
)
from captioner.events import TextDelta  # noqa: E402
from tests.audio_fakes import FakeBackend, tone  # noqa: E402

app = QCoreApplication.instance() or QCoreApplication([])


class Slow(FakeBackend):
    def step(self, rows):
        time.sleep(0.05)  # simulated compute: half real time
        return super().step(rows)


class Hang(FakeBackend):
    def step(self, rows):
        if any(r.state is not None and r.state["k"] >= 2 for r in rows):
            threading.Event().wait()
        return super().step(rows)


def spin_until(pred, limit):
    end = time.monotonic() + limit
    while not pred() and time.monotonic() < end:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
    return pred()


def one(kind, wav):
    be = {"caught_up": FakeBackend(batch_size=1), "behind_10s": Slow(batch_size=1), "hung": Hang(batch_size=1)}[kind]
    realtime = kind != "behind_10s"

    def sources(specs, b):
        return [FileSource(wav, label="M", realtime=realtime, target_rate=16000)]

    ctl = EngineController(EngineWorker(lambda c: be, sources, default_pipeline_factory))
    words, stopped = [], []
    ctl.event.connect(lambda e: words.append(e) if isinstance(e, TextDelta) and e.final else None)
    ctl.stopped.connect(lambda: stopped.append(1))
    ctl.start(EngineConfig(sources=(SourceSpec("file", "M"),)))
    spin_until(lambda: len(words) >= 2, 10)
    if kind == "hung":
        spin_until(lambda: False, 0.3)  # let it block inside the call
    t0 = time.monotonic()
    ctl.stop()
    return round(time.monotonic() - t0, 3) if spin_until(lambda: bool(stopped), 6.0) else None


def main():
    wav = os.path.join(tempfile.mkdtemp(), "tone.wav")
    sf.write(wav, tone(12.0, 16000), 16000)
    print(json.dumps({k + "_stop_s": one(k, wav) for k in ("caught_up", "behind_10s", "hung")}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
