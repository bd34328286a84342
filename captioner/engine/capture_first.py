"""Capture first, load the model meanwhile: nothing said after Start is lost.

Loading a backend takes seconds (the built-in model: 1.9-2.3 s on a quiet machine,
4.9-5.5 s on a busy one, and 5-10 s more at first use, when
:mod:`captioner.asr.moonshine.prepare` builds its fast form). ``captioner listen`` and
the GUI therefore open the live sources (microphone, system audio) *first*, with a
queue large enough to hold everything captured while the model loads
(:data:`LOAD_QUEUE_S`), load the backend on a thread (:class:`BackgroundLoad`), and
only then start the live pipeline on the sources already running. The pipeline reads
the queued audio at once and decodes it as a backlog that drains ("catching up"), so
speech that began a moment after Start is captioned from its first word.

Files played as if live are not opened early: nothing is lost by starting them once the
model is ready.

Qt-free: the CLI uses it directly, the GUI's engine worker through a signal.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

import numpy as np

from captioner.native_calls import model_call

#: Seconds of audio each live source keeps while the model loads. The live pipeline keeps
#: at most this much backlog too (``LiveCaptioner.max_backlog_s``); 120 s of 48 kHz stereo
#: float32 is 46 MB per source at worst (a 16 kHz mono monitor: 7.7 MB): bounded, and far
#: beyond the slowest load measured (first use on a busy machine, about 15 s).
LOAD_QUEUE_S = 120.0

#: Source kinds that capture live audio (opened before the model loads).
LIVE_KINDS = ("microphone", "system")


def open_before_load(sources: Sequence[Any], queue_s: float = LOAD_QUEUE_S) -> list:
    """Start every live source of ``sources`` now, each with a queue of ``queue_s`` seconds.

    The live pipeline later starts the same source objects again (a no-op for a running
    source) and reads what they queued meanwhile.

    Args:
        sources: :class:`~captioner.audio.source.AudioSource` objects, not started.
        queue_s: capacity of each source's raw queue (s of native audio).

    Returns:
        The sources started (files are left for the pipeline to start).

    Raises:
        SourceError: a device cannot be opened; the sources already started are stopped.
    """
    started = []
    try:
        for s in sources:
            if getattr(s, "kind", "") not in LIVE_KINDS or not hasattr(s, "start"):
                continue
            s.max_queue_s = max(float(getattr(s, "max_queue_s", 0.0)), queue_s)
            s.start()
            started.append(s)
    except BaseException:
        close_sources(started)
        raise
    return started


def close_sources(sources: Sequence[Any]) -> None:
    """Stop ``sources`` (a failed or cancelled load); never raises."""
    for s in sources:
        try:
            s.stop()
        except Exception:  # noqa: BLE001 - closing must not hide the reason we close
            pass


def captured_s(sources: Sequence[Any]) -> float:
    """Seconds of audio waiting in the queues of ``sources`` (the worst one), 0.0 if none."""
    out = 0.0
    for s in sources:
        stats = getattr(s, "stats", None)
        if callable(stats):
            try:
                out = max(out, float(stats().queued_s))
            except Exception:  # noqa: BLE001 - a fake or closed source
                pass
    return out


def preview_levels(sources: Sequence[Any], seen: dict) -> list:
    """One :class:`~captioner.events.Level` per source that captured something new since the last
    call (``seen``: the caller's dict, source -> callbacks counted then), from the newest 50 ms
    of its queue: the level meters move from Start on, while nothing decodes yet."""
    from captioner.audio.levels import dbfs
    from captioner.events import Level

    out = []
    for s in sources:
        try:
            calls = s.callback_count
            if seen.get(id(s)) == calls:
                continue
            seen[id(s)] = calls
            x = s.recent(0.05)
        except Exception:  # noqa: BLE001 - a fake or closed source has no meter
            continue
        if x.size:
            x = np.where(np.isfinite(x), x, 0.0)
            out.append(Level(dbfs(float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))),
                             dbfs(float(np.max(np.abs(x)))), s.label))
    return out


class BackgroundLoad:
    """Runs ``load()`` (a backend factory: slow, imports onnxruntime/torch) on a daemon thread.

    The caller keeps its own thread free to capture and to answer Stop/Ctrl-C/Quit at once;
    a load that is no longer wanted is left to finish on its thread (a model load cannot be
    interrupted) and its result is closed or kept by whoever looks at it.

    Args:
        load: ``() -> backend``; may raise anything (kept in :attr:`error`).
        on_done: called on the loading thread with this object when the load ends.

    Attributes:
        backend: the loaded backend, or None.
        error: the exception the load raised (``KeyboardInterrupt`` included), or None.
        seconds: wall time of the load (s), set when done.
        done: set when the load has ended (either way).
    """

    def __init__(self, load: Callable[[], Any], on_done: Callable[["BackgroundLoad"], None] | None = None) -> None:
        self.backend: Any = None
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.done = threading.Event()
        self._load = load
        self._on_done = on_done
        self._thread = threading.Thread(target=self._run, name="captioner-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            # A load left running by Stop/Ctrl-C/Quit is inside ONNX Runtime: the process must not
            # finalise around it (it aborts, "terminate called without an active exception");
            # captioner.native_calls.exit_process ends the process instead (issue 30.2).
            with model_call():
                self.backend = self._load()
        except BaseException as exc:  # noqa: BLE001 - reported by the caller, never lost on this thread
            self.error = exc
        self.seconds = time.monotonic() - t0
        self.done.set()
        if self._on_done is not None:
            try:
                self._on_done(self)
            except Exception:  # noqa: BLE001
                import logging

                logging.getLogger(__name__).exception("model load callback failed")

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` s; True when the load has ended."""
        return self.done.wait(timeout)


__all__ = ["LIVE_KINDS", "LOAD_QUEUE_S", "BackgroundLoad", "captured_s", "close_sources", 
           "loading", "open_before_load", "preview_levels"]
