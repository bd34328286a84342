"""The GUI's responsiveness over a session, before and after a change, side by side (issue 30.4).

Runs ``bench/soak.py`` (the whole app: pane, overlay, journal, autosave; the default model) for
``--wall-s`` seconds at one pace, once on another checkout (``--before``, e.g. ``git archive`` of
the branch point: its ``captioner`` with this checkout's harness) and once on this checkout,
one after the other, and merges the two into ``OUT.json`` under the pace's name (a run of
another pace keeps what is there), then plots every pace in ``OUT.png``.

Paces: ``1x`` (the file source at real time: what a user's live session does) and ``fast``
(``--speed 30``: as fast as the model keeps up, ~5x real time on 2 cores, so the same wall time
covers five times the audio and every per-event cost five times as often).

``--busy N`` keeps N other processes spinning during both runs (a loaded machine: the user's
other programs), stored under ``PACE+busyN``; ``--before-own-harness`` adds a run of the
``--before`` checkout with its own ``bench/soak.py``.

Per run it keeps the GUI thread's 50 ms ``PreciseTimer`` lateness per minute of audio (p50, p99,
max), the first minute and the last complete one, the machine's load average at the start and
the end (a shared 2-core machine: the load is part of the result), and RSS.

    git archive 22286fc | tar -x -C "$(mktemp -d)"   # the checkout to compare with, as --before DIR
    python bench/soak_lateness.py --before DIR --pace 1x --wall-s 210
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PACES = {"1x": 1.0, "fast": 30.0}


def run_one(tree: str | None, pace: str, wall_s: float, own_harness: bool = False) -> dict:
    out = Path(tempfile.mkdtemp(prefix="soak-lateness-")) / "run"
    harness = Path(tree) if own_harness and tree else HERE
    cmd = [sys.executable, str(harness / "bench" / "soak.py"), "--hours", "8", "--speed", str(PACES[pace]),
           "--sample-s", "60", "--max-wall-s", str(wall_s), "--out", str(out)]
    if tree:
        cmd += ["--tree", tree]
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.setdefault("OMP_NUM_THREADS", "2")
    subprocess.run(cmd, check=True, env=env, cwd=HERE, stdout=subprocess.DEVNULL)
    result = json.loads(out.with_suffix(".json").read_text())
    samples = result["samples"]
    full = [s for s in samples[:-1] if s["ticks"] > 0]  # the last sample is Stop's partial window
    keep = ("audio_s", "wall_s", "late_p50_ms", "late_p99_ms", "late_max_ms", "ticks", "VmRSS", "load1")
    first, last = (full[0], full[-1]) if full else ({}, {})
    return {
        "tree": tree or "this checkout",
        "harness": str(harness / "bench" / "soak.py"),
        "audio_s": result["audio_s"],
        "wall_s": result["wall_s"],
        "audio_per_wall": result["audio_per_wall"],
        "loadavg_start": result["loadavg_start"],
        "loadavg_end": result["loadavg_end"],
        "minute_1": {k: first.get(k) for k in ("late_p50_ms", "late_p99_ms", "late_max_ms", "load1")},
        "end": {k: last.get(k) for k in ("audio_s", "late_p50_ms", "late_p99_ms", "late_max_ms", "load1")},
        "p99_minutes_over_50ms": sum(1 for s in full if s["late_p99_ms"] > 50.0),
        "minutes": len(full),
        "errors": result["errors"],
        "samples": [{k: s.get(k) for k in keep} for s in samples],
    }


def plot(data: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paces = sorted(data["paces"])
    fig, axes = plt.subplots(len(paces), 1, figsize=(9, 3.6 * len(paces)), squeeze=False)
    for ax, pace in zip(axes[:, 0], paces):
        for label, colour in (("before_own_harness", "grey"), ("before", "tab:blue"), ("after", "tab:green")):
            run = data["paces"][pace].get(label)
            if not run:
                continue
            s = [x for x in run["samples"][:-1] if x["ticks"]]
            m = [x["audio_s"] / 60 for x in s]
            load = run["loadavg_start"][0], run["loadavg_end"][0]
            ax.plot(m, [x["late_p99_ms"] for x in s], "-", color=colour,
                    label=f"{label} p99 (load {load[0]:.1f}-{load[1]:.1f})")
            ax.plot(m, [x["late_p50_ms"] for x in s], "--", color=colour, lw=0.8, label=f"{label} p50")
        ax.axhline(50, color="red", lw=0.8, ls=":", label="50 ms target")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_ylabel("GUI timer lateness, ms")
        ax.set_xlabel("audio played, minutes")
        busy = data["paces"][pace].get("busy_processes", 0)
        ax.set_title(f"pace {pace}: default model, whole app, per minute of audio"
                     + (f", {busy} other processes spinning" if busy else ""))
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="checkout of the branch point (its captioner package)")
    ap.add_argument("--pace", choices=sorted(PACES), required=True)
    ap.add_argument("--wall-s", type=float, default=210.0, help="wall seconds per run (Stop after)")
    ap.add_argument("--out", default="bench/results/soak_lateness")
    ap.add_argument("--busy", type=int, default=0,
                    help="keep this many other processes spinning meanwhile (a loaded machine)")
    ap.add_argument("--before-own-harness", action="store_true",
                    help="also run the --before checkout with its own bench/soak.py")
    args = ap.parse_args()
    out = Path(args.out)
    path = out.with_suffix(".json")
    data = json.loads(path.read_text()) if path.exists() else {"paces": {}}
    data["what"] = ("GUI thread timer lateness (50 ms PreciseTimer) per minute of audio, bench/soak.py with the "
                    "default model, before/after issue 30.4; 'before' is the --before checkout's captioner run "
                    "by this checkout's harness")
    data["cpus"] = os.cpu_count()
    spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        runs = {}
        if args.before_own_harness:
            runs["before_own_harness"] = run_one(args.before, args.pace, args.wall_s, own_harness=True)
        runs["before"] = run_one(args.before, args.pace, args.wall_s)
        runs["after"] = run_one(None, args.pace, args.wall_s)
    finally:
        for p in spin:
            p.kill()
            p.wait()
    key = args.pace + (f"+busy{args.busy}" if args.busy else "")
    data["paces"][key] = {"speed": PACES[args.pace], "wall_s_per_run": args.wall_s, "busy_processes": args.busy,
                          **runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    try:
        plot(data, out.with_suffix(".png"))
    except ImportError as exc:
        print(f"no plot: {exc}", file=sys.stderr)
    for label, run in runs.items():
        print(label, json.dumps({k: run[k] for k in ("loadavg_start", "loadavg_end", "minute_1", "end",
                                                   "p99_minutes_over_50ms", "minutes", "audio_s")}))


if __name__ == "__main__":
    main()
