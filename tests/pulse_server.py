"""A private PulseAudio daemon for tests and benchmarks, started and stopped by pid.

It runs as the current user (root in CI containers: ``-n`` skips the default
script, so only the modules named here load; ``--system`` is *not* used) with its
own runtime directory, so it never touches a user's sound server:

* sink ``meeting`` (null sink; its monitor ``meeting.monitor`` is "system audio"
  and, as the default sink, the pre-selected system-audio source);
* sink ``micsink`` + ``module-virtual-source`` ``virtmic`` on its monitor: a
  microphone that is not a monitor, fed with ``paplay -d micsink``.

The exact command (DESIGN section 5, plus the virtual microphone)::

    XDG_RUNTIME_DIR=$D PULSE_RUNTIME_PATH=$D/pulse pulseaudio -n --daemonize=yes \\
        --exit-idle-time=-1 --disallow-exit=yes --use-pid-file=yes \\
        --load="module-native-protocol-unix auth-anonymous=1" \\
        --load="module-null-sink sink_name=meeting" --load="module-null-sink sink_name=micsink" \\
        --load="module-virtual-source source_name=virtmic master=micsink.monitor" \\
        --load=module-always-sink
    pactl set-default-sink meeting
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

REQUIRED = ("pulseaudio", "pactl", "paplay")


def missing_tools() -> list[str]:
    """Binaries this needs that are not on PATH."""
    return [t for t in REQUIRED if shutil.which(t) is None]


class PulseServer:
    """Start with :meth:`start`, stop with :meth:`stop` (kills the daemon by its pid).

    Attributes:
        env: environment for clients (``PULSE_SERVER``, ``XDG_RUNTIME_DIR``, ...).
        pid: the daemon's pid once started.
    """

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="captioner-pulse-"))
        rt = self.dir / "runtime"
        rt.mkdir(mode=0o700)
        self.socket = rt / "pulse" / "native"
        self.env = {
            "XDG_RUNTIME_DIR": str(rt),
            "PULSE_RUNTIME_PATH": str(rt / "pulse"),
            "PULSE_SERVER": f"unix:{self.socket}",
            "PULSE_STATE_PATH": str(self.dir / "state"),
        }
        self.pid: int | None = None
        self._saved: dict[str, str | None] = {}

    def start(self) -> "PulseServer":
        """Start the daemon (returns when it accepts clients) and point this process at it.

        Raises:
            RuntimeError: the daemon did not start (stderr included).
        """
        env = {**os.environ, **self.env}
        cmd = [
            "pulseaudio", "-n", "--daemonize=yes", "--exit-idle-time=-1", "--disallow-exit=yes",
            "--use-pid-file=yes", "--log-target=stderr",
            "--load=module-native-protocol-unix auth-anonymous=1",
            "--load=module-null-sink sink_name=meeting",
            "--load=module-null-sink sink_name=micsink",
            "--load=module-virtual-source source_name=virtmic master=micsink.monitor",
            "--load=module-always-sink",
        ]
        # --daemonize=yes returns once the daemon is ready (its parent waits for it)
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
        pid_file = Path(self.env["PULSE_RUNTIME_PATH"]) / "pid"
        if res.returncode != 0 or not pid_file.exists():
            raise RuntimeError(f"pulseaudio did not start (exit {res.returncode}): {res.stderr[-2000:]}")
        self.pid = int(pid_file.read_text().split()[0])
        self.pactl("set-default-sink", "meeting")
        for key, value in self.env.items():
            self._saved[key] = os.environ.get(key)
            os.environ[key] = value
        return self

    def pactl(self, *args: str) -> str:
        """Run pactl against this server; returns stdout."""
        return subprocess.run(
            ["pactl", *args], env={**os.environ, **self.env}, capture_output=True, text=True, check=True, timeout=10
        ).stdout

    def play(self, sink: str, wav: str | os.PathLike) -> subprocess.Popen:
        """Start ``paplay -d sink wav`` against this server."""
        return subprocess.Popen(["paplay", "-d", sink, str(wav)], env={**os.environ, **self.env})

    def stop(self) -> None:
        """Kill the daemon by pid, restore the environment, remove the runtime dir."""
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved.clear()
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGTERM)
                deadline = time.monotonic() + 5.0
                while time.monotonic() < deadline:  # not our child: poll until it is gone
                    os.kill(self.pid, 0)
                    time.sleep(0.02)
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pid = None
        shutil.rmtree(self.dir, ignore_errors=True)
