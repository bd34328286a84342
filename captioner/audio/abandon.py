"""Calls into the audio library that may block forever, run on a thread that can be abandoned.

A frozen sound server (``kill -STOP``, a stuck PipeWire) makes PortAudio's
``abort()``/``close()``/``Pa_OpenStream`` and every pulsectl operation wait for an
answer that may never come (issue #22: the capture thread blocked in ``abort()``
and Ctrl-C did nothing). :func:`call_with_timeout` runs such a call on a daemon
thread and gives up waiting after ``timeout_s``; the thread is left to finish (or
not) by itself. Once a call has been abandoned, sounddevice's exit handler
(``Pa_Terminate``, which closes every stream and would block the same way) is
unregistered so the process can still exit, and :func:`abandoned` says that
re-initialising PortAudio (:func:`captioner.audio.portaudio.rescan`) is unsafe.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import sys
import threading
from typing import Any, Callable

log = logging.getLogger(__name__)

_lock = threading.Lock()
_in_flight: dict[int, str] = {}  # abandoned calls that have not returned yet: id -> name
_ids = itertools.count(1)

#: Seconds a device source's ``start()`` waits for the device to open (a frozen server never answers).
OPEN_TIMEOUT_S = 3.0
#: Seconds a close waits for ``abort()``/``close()`` before abandoning them (Stop must
#: return within 2 s in every state, with the decoder's drain after it).
CLOSE_WAIT_S = 0.3


class CallTimeout(TimeoutError):
    """An audio-library call did not return within its timeout and was abandoned."""


def abandoned() -> list[str]:
    """Names of abandoned calls still blocked now (empty when none)."""
    with _lock:
        return sorted(_in_flight.values())


def call_with_timeout(fn: Callable[[], Any], timeout_s: float, name: str) -> Any:
    """Run ``fn()`` on a daemon thread; return its result or re-raise its exception.

    Args:
        fn: the blocking call (no arguments; close over them).
        timeout_s: seconds to wait (> 0).
        name: what the call is, for the log and :func:`abandoned`.

    Raises:
        CallTimeout: ``fn`` did not return within ``timeout_s``; it keeps running
            on its thread, which nobody waits for.
        Exception: whatever ``fn`` raised.
    """
    done = threading.Event()
    box: dict[str, Any] = {}
    call_id = next(_ids)

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc
        finally:
            done.set()
            with _lock:
                if _in_flight.pop(call_id, None) is not None:
                    log.info("abandoned audio call %s returned after all", name)

    thread = threading.Thread(target=run, name=f"captioner-audio-{name}", daemon=True)
    thread.start()
    if not done.wait(timeout_s):
        with _lock:
            if not done.is_set():
                box["abandoned"] = True
                _in_flight[call_id] = name
        if box.get("abandoned"):
            # the user is told what it means (a stalled or frozen server) by the source; this is detail
            log.info("audio call %s did not return within %.1f s; abandoned", name, timeout_s)
            _unregister_portaudio_exit()
            raise CallTimeout(f"{name} did not return within {timeout_s:.1f} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def abandon_stream(stream: Any, wait_s: float = CLOSE_WAIT_S) -> None:
    """``abort()`` and ``close()`` a PortAudio ``stream``, waiting at most ``wait_s`` (then abandoned)."""
    if stream is None:
        return

    def close() -> None:
        try:
            stream.abort()
        except Exception:  # noqa: BLE001 - the device may already be gone
            pass
        try:
            stream.close()
        except Exception:  # noqa: BLE001
            pass

    try:
        call_with_timeout(close, wait_s, "abort")
    except CallTimeout:
        pass


def _unregister_portaudio_exit() -> None:
    """Stop ``Pa_Terminate`` from running at exit (it would wait on the blocked stream)."""
    sd = sys.modules.get("sounddevice")
    handler = getattr(sd, "_exit_handler", None)
    if handler is not None:
        atexit.unregister(handler)


__all__ = ["CLOSE_WAIT_S", "OPEN_TIMEOUT_S", "CallTimeout", "abandon_stream", "abandoned", "call_with_timeout"]
