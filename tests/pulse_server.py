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

The failures a desktop sees are reproduced with :meth:`PulseServer.add_sink` /
:meth:`remove_sink` / :meth:`set_default_sink` / :meth:`move_playback` (an output
appears, becomes the default, takes the playback, the first one goes),
:meth:`suspend_sink` (``pactl suspend-sink``), :meth:`freeze` / :meth:`thaw`
(SIGSTOP / SIGCONT of the daemon) and :meth:`kill` + :meth:`start` (a sound-server
restart on the same socket).
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
        Also restarts it after :meth:`kill` (same socket, same sinks).

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
            self._saved.setdefault(key, os.environ.get(key))
            os.environ[key] = value
        return self

    # -- what happens on a desktop ----------------------------------------------------------------------
    def add_sink(self, name: str, rate: int = 16000, channels: int = 1) -> int:
        """Load a null sink ``name`` (16 kHz mono by default, like a headset in call mode);
        returns its module index."""
        out = self.pactl("load-module", "module-null-sink", f"sink_name={name}", f"rate={rate}", f"channels={channels}")
        return int(out.strip())

    def remove_sink(self, name: str) -> None:
        """Unload the null-sink module of sink ``name`` (its monitor disappears with it)."""
        for line in self.pactl("list", "short", "modules").splitlines():
            cols = line.split("\t")
            if len(cols) >= 3 and cols[1] == "module-null-sink" and f"sink_name={name}" in cols[2].split():
                self.pactl("unload-module", cols[0])
                return
        raise KeyError(f"no null sink {name!r}")

    def set_default_sink(self, name: str) -> None:
        """``pactl set-default-sink name``."""
        self.pactl("set-default-sink", name)

    def move_playback(self, player: subprocess.Popen, sink: str) -> None:
        """Move the sink-input of ``player`` (a :meth:`play` process) to ``sink``."""
        for line in self.pactl("list", "sink-inputs").split("Sink Input #")[1:]:
            if f'application.process.id = "{player.pid}"' in line:
                self.pactl("move-sink-input", line.split()[0], sink)
                return
        raise KeyError(f"no sink-input of pid {player.pid}")

    def suspend_sink(self, name: str, suspend: bool = True) -> None:
        """``pactl suspend-sink name 1|0``: the sink and its monitor stop (or go on)."""
        self.pactl("suspend-sink", name, "1" if suspend else "0")

    def freeze(self) -> None:
        """SIGSTOP the daemon: every client call waits until :meth:`thaw`."""
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT the daemon."""
        os.kill(self.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL the daemon and wait until it is gone (start() brings it back)."""
        pid, self.pid = self.pid, None
        if pid is None:
            return
        os.kill(pid, signal.SIGCONT)  # a frozen daemon must be able to die
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        for leftover in (self.socket, Path(self.env["PULSE_RUNTIME_PATH"]) / "pid"):
            leftover.unlink(missing_ok=True)

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
                os.kill(self.pid, signal.SIGCONT)  # a frozen daemon cannot handle SIGTERM
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
