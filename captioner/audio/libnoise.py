"""Library noise to the log: PortAudio's and ALSA's own stderr lines never reach the terminal.

PortAudio's ALSA host API prints failed internal checks straight to file
descriptor 2 (``Expression 'ret' failed in 'src/hostapi/alsa/pa_linux_alsa.c',
line: 1736``), and libasound prints plugin errors the same way (``ALSA lib
pulse.c:242:(pulse_connect) PulseAudio: Unable to connect: Connection refused``),
e.g. on every reconnection attempt while a sound server restarts. Neither library
lets an application redirect them (PortAudio's log hook is not exported from
``libportaudio.so.2``), so :func:`route_library_noise_to_log` moves descriptor 2 onto
a pipe read by a daemon thread: lines that look like library noise go to this
module's logger, every other line is copied to the original stderr unchanged.
Python's own ``sys.stderr`` (and faulthandler) keep writing to the original
descriptor directly, so tracebacks and captioner's messages never wait on the thread.
At exit descriptor 2 is put back and the thread drained (at most 0.5 s), so the last
lines a library wrote are not lost.
"""

from __future__ import annotations

import atexit
import faulthandler
import io
import logging
import os
import re
import sys
import threading

log = logging.getLogger(__name__)

#: Lines (from C code writing to fd 2) that are library noise.
NOISE = re.compile(rb"^(Stream error: |Connection failure: |Expression '.*' failed in '|ALSA lib |PaAlsaStream|PaUnixThread|\s*$)")

_installed = False


def route_library_noise_to_log() -> bool:
    """Install the stderr filter once per process (a no-op on Windows or when fd 2 is closed).

    Returns:
        True when the filter is installed (now or before).
    """
    global _installed
    if _installed:
        return True
    if os.name != "posix":
        return False
    try:
        saved = os.dup(2)
        read_fd, write_fd = os.pipe()
    except OSError:
        return False
    try:
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    os.dup2(write_fd, 2)
    os.close(write_fd)
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    # faulthandler follows to the terminal only when it wrote to the process's own stderr; a test
    # runner that captures output keeps faulthandler on its own copy of the terminal (pytest does:
    # moved onto its capture, a crash's traceback was lost with the capture file)
    follow = faulthandler.is_enabled() and sys.stderr is sys.__stderr__
    sys.stderr = io.TextIOWrapper(
        io.FileIO(saved, "w", closefd=False), encoding=encoding, errors="backslashreplace", line_buffering=True
    )
    if follow:
        faulthandler.enable(file=sys.stderr)
    pump = threading.Thread(target=_pump, args=(read_fd, saved), name="captioner-stderr-filter", daemon=True)
    pump.start()
    atexit.register(_drain, pump, saved)
    _installed = True
    return True


def _drain(pump: threading.Thread, saved: int) -> None:
    """At exit: descriptor 2 back to the terminal (the pipe's last writer closes), then drain the pipe."""
    try:
        os.dup2(saved, 2)
    except OSError:
        return
    pump.join(0.5)  # a child process still holding the pipe must not delay the exit


def _pump(read_fd: int, out_fd: int) -> None:
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            if NOISE.match(line):
                if line.strip():
                    log.info("audio library: %s", line.decode("utf-8", "replace").rstrip())
            else:
                os.write(out_fd, line)


__all__ = ["NOISE", "route_library_noise_to_log"]
