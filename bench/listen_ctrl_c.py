"""User-level benchmark: ``captioner listen --system -o out.srt`` with the default model, Ctrl-C timed.

Each scenario starts a private PulseAudio (tests/pulse_server.py), plays espeak-ng speech into
its default output, runs the real command (a child process, default model) and, after what the
scenario does to the sound server, sends SIGINT and times it until the process exits:

* ``speech``: nothing happens (the model is as far behind as the CPU makes it);
* ``switch``: a 16 kHz mono output appears, becomes the default and takes the playback;
* ``suspend``: ``pactl suspend-sink`` for 4 s, then back;
* ``freeze``: SIGSTOP of the daemon, Ctrl-C 3 s later while it is still frozen;
* ``restart``: SIGKILL of the daemon, started again 3 s later.

For each: the exit code, Ctrl-C -> exit seconds, whether ``out.srt`` was written (cues), the
journal closed, and the terminal's notice lines (what the user was told, once each?).
``--tree DIR`` runs another checkout (before/after in one session). Needs pulseaudio, pactl,
paplay, espeak-ng. Prints one JSON object::

    python bench/listen_ctrl_c.py [--tree /path/to/other/checkout] [--scenario freeze ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pulse_server import PulseServer  # noqa: E402

SCENARIOS = ("speech", "switch", "suspend", "freeze", "restart")
TEXT = ("The quarterly meeting starts now. We discuss the budget, the hiring plan and the new office. "
        "Please keep your questions until the end. ") * 6


def _scenario(name: str, tree: Path, work: Path, speech: Path) -> dict:
    srv = PulseServer().start()
    env = {**os.environ, **srv.env, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    out = work / f"{name}.srt"
    cmd = [sys.executable, "-m", "captioner.cli", "listen", "--system", "-o", str(out),
           "--journal-dir", str(work / f"journal-{name}")]
    proc = subprocess.Popen(cmd, env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines: list[str] = []
    readers = [threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True),
               threading.Thread(target=lambda: [err_lines.append(line.rstrip()) for line in proc.stderr], daemon=True)]
    for r in readers:
        r.start()
    player = None
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("listening:") for line in err_lines):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("listen did not start: " + "\n".join(err_lines[-5:]))
            time.sleep(0.05)
        player = srv.play("meeting", speech)
        time.sleep(6.0)
        if name == "switch":
            srv.add_sink("headset")
            srv.set_default_sink("headset")
            srv.move_playback(player, "headset")
            time.sleep(5.0)
        elif name == "suspend":
            srv.suspend_sink("meeting")
            time.sleep(4.0)
            srv.suspend_sink("meeting", False)
            time.sleep(3.0)
        elif name == "freeze":
            srv.freeze()
            time.sleep(3.0)
        elif name == "restart":
            srv.kill()
            player.kill()
            time.sleep(3.0)
            srv.start()
            player = srv.play("meeting", speech)
            time.sleep(5.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
            took = round(time.monotonic() - t0, 3)
        except subprocess.TimeoutExpired:
            took = None
            proc.kill()
            proc.wait()
    finally:
        if player is not None:
            player.kill()
        srv.stop()
        for r in readers:
            r.join(5)
    cues = out.read_text(encoding="utf-8").count(" --> ") if out.exists() else None
    journals = list((work / f"journal-{name}").glob("*.jsonl"))
    closed = bool(journals) and json.loads(journals[0].read_text(encoding="utf-8").splitlines()[-1]).get("type") == "close"
    told = [line for line in err_lines if line.startswith("[") or line.startswith("stopping")
            or line.startswith("captioner:")]
    return {"scenario": name, "rc": proc.returncode, "ctrl_c_to_exit_s": took, "srt_cues": cues,
            "journal_closed": closed, "terminal": told,
            "other_stderr": [line for line in err_lines if line not in told and not line.startswith(
                ("autosave journal", "listening:", "transcript written"))]}


def main() -> None:
    """Run the scenarios and print the JSON object."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default=str(ROOT), help="checkout to run (default: this one)")
    ap.add_argument("--scenario", action="append", choices=SCENARIOS, help="default: all")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="captioner-listen-bench-"))
    speech = work / "speech.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(speech), TEXT], check=True)
    runs = [_scenario(name, Path(args.tree), work, speech) for name in args.scenario or SCENARIOS]
    print(json.dumps({"tree": args.tree, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
