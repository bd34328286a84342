"""User-level benchmark: Ctrl-C during ``captioner transcribe`` of a long file, timed (the 2 s rule).

Renders about 6.5 minutes of multi-voice espeak-ng speech (a meeting's sentences, one voice
after another, 0.6 s apart), stores it as 48 kHz stereo 16-bit WAV (a recorder's file), runs
the real command on the default model in a child process, sends SIGINT after each of the
``--delays`` (seconds after the start; the first ~8 s load the models), and times the signal
until the process exits. For each run: the exit code, seconds, lines in ``-o``, and the last
line on stderr. ``--before DIR`` runs another checkout the same way, interleaved (before,
after, before, ...), so both see the same machine. Prints one JSON object::

    python bench/transcribe_ctrl_c.py [--before /path/to/checkout] [--delays 12 30 50] [--out F]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

ROOT = Path(__file__).resolve().parent.parent
VOICES = ("en-us", "en-gb", "en-us+f3", "en-gb-scotland", "en-029", "en-us+m3")
SENTENCES = ("Good morning everyone. The project meeting begins at ten o'clock. Please send the quarterly report "
             "to the whole team before Friday. Thank you all for coming today.",
             "Our cloud costs were higher than planned this month, so finance would like a short written "
             "explanation before the next review.")


def meeting(path: Path, minutes: float = 6.5) -> float:
    """Write the meeting to ``path`` (48 kHz stereo int16); returns its length in seconds."""
    parts, total, i = [], 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        while total < minutes * 60:
            wav = Path(tmp) / f"{i}.wav"
            subprocess.run(["espeak-ng", "-v", VOICES[i % len(VOICES)], "-s", "160", "-w", str(wav),
                            SENTENCES[i % len(SENTENCES)]], check=True)
            data, rate = sf.read(wav, dtype="float32")
            data = soxr.resample(data, rate, 48000)
            parts += [data, np.zeros(int(0.6 * 48000), np.float32)]
            total += (len(data) / 48000) + 0.6
            i += 1
    mono = np.concatenate(parts)
    sf.write(path, np.stack([mono, 0.8 * mono], axis=1), 48000, subtype="PCM_16")
    return len(mono) / 48000


def interrupted(tree: Path, audio: Path, delay: float, work: Path) -> dict:
    """One run of ``captioner transcribe`` in ``tree``, SIGINT ``delay`` s after its start."""
    out = work / f"out-{tree.name}-{delay:g}.txt"
    env = {**os.environ, "PYTHONPATH": str(tree), "CAPTIONER_DATA_DIR": str(work / "data")}
    proc = subprocess.Popen([sys.executable, "-m", "captioner.cli", "transcribe", str(audio), "-o", str(out),
                             "--speakers", "off"], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        pass
    t0 = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    lines = out.read_text(encoding="utf-8").splitlines() if out.exists() else []
    return {"delay_s": delay, "stop_s": round(time.monotonic() - t0, 2), "exit_code": proc.returncode,
            "lines_written": len([ln for ln in lines if ln.strip()]),
            "last_stderr": (err.strip().splitlines() or [""])[-1].replace(str(work), "<work>")[:160]}


def _commit(tree: Path) -> str:
    """The checkout's commit (short hash), or "" outside git."""
    run = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return run.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, help="another checkout, run interleaved with this one")
    ap.add_argument("--delays", type=float, nargs="+", default=[12, 30, 50])
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    args = ap.parse_args()
    trees = {"this checkout": ROOT} | ({"before": args.before.resolve()} if args.before else {})
    with tempfile.TemporaryDirectory(prefix="captioner-ctrl-c-") as tmp:
        work = Path(tmp)
        audio = work / "meeting48k.wav"
        seconds = meeting(audio)
        runs: dict[str, list] = {name: [] for name in trees}
        for delay in args.delays:
            for name, tree in reversed(list(trees.items())):
                runs[name].append(interrupted(tree, audio, delay, work))
    result = {"audio_s": round(seconds, 1), "audio": "48 kHz stereo int16, espeak-ng " + ", ".join(VOICES),
              "cpus": os.cpu_count(), "load_avg": [round(x, 2) for x in os.getloadavg()],
              "trees": {name: {"commit": _commit(tree), "runs": runs[name],
                               "stop_s_max": max(r["stop_s"] for r in runs[name])} for name, tree in trees.items()}}
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
