"""User-level benchmark: what ``captioner listen --system`` keeps of speech that starts right after the command.

Issue 27.3. Each run starts the real command (a child process, the default model) against a
private PulseAudio (tests/pulse_server.py), plays espeak-ng speech into the system-audio sink
0.3 s after the command (``paplay --latency-msec=50``, as a meeting app plays), and stops it with
Ctrl-C once the second sentence is printed (or 12 s after "listening", or at a deadline). Measured:

* ``capture_s``: seconds from the command to the capture stream opened, taken from the sound
  server itself (pulsectl's event for the new record stream), so the same for any tree;
  ``capture_cpu_s``: the CPU seconds the command had used by then (what the wall time is on an
  idle machine, less its waits: a measure that a busy machine does not inflate);
* ``listening_s``: seconds from the command to the ``listening:`` line (model loaded, decoding);
* ``first_words_kept``: the fraction of the first sentence's words in the written transcript,
  and ``first_word_kept``: whether its first word is there.

Every tree runs with a *warm* model cache (prepared once before the runs) and an *empty* one
(``XDG_CACHE_HOME`` a new empty folder: the model is prepared at first use). ``--tree`` adds
another checkout (the "before", e.g. ``git archive`` of main to a temp folder), run in the same
session interleaved with this one. Prints one JSON object (also written with ``--out``)::

    python bench/start_capture.py --tree /tmp/before --tree-desc "git archive of main at 832ab09" --runs 2 \
        --out bench/results/start_capture.json

Needs pulseaudio, pactl, paplay, espeak-ng and pulsectl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.pulse_server import PulseServer  # noqa: E402

FIRST = "Welcome back to the weekly planning meeting."
SECOND = "Please send the report before Friday."
PLAY_AFTER_S = 0.3


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z ]+", " ", text.lower()).split()


def _cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, TypeError):
        return None


def _record_stream_opened(server: PulseServer, opened: threading.Event, stop: threading.Event) -> threading.Thread:
    """Set ``opened`` (with its time in ``opened.t``) when a new record stream appears on ``server``."""
    import pulsectl

    ready = threading.Event()

    def listen() -> None:
        with pulsectl.Pulse("start-capture-bench") as pulse:
            pulse.event_mask_set("source_output")

            def on_event(ev):
                if ev.t == "new" and not opened.is_set():
                    opened.t = time.monotonic()
                    opened.cpu = _cpu_s(getattr(opened, "pid", None))
                    opened.set()
                    raise pulsectl.PulseLoopStop

            pulse.event_callback_set(on_event)
            ready.set()
            while not stop.is_set() and not opened.is_set():
                pulse.event_listen(timeout=0.2)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(5)
    return thread


def _run(tree: Path, cache: Path, work: Path, speech: Path, server: PulseServer) -> dict:
    opened, stop = threading.Event(), threading.Event()
    watcher = _record_stream_opened(server, opened, stop)
    out = work / "out.txt"
    env = {**os.environ, **server.env, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1",
           "XDG_CACHE_HOME": str(cache), "CAPTIONER_DATA_DIR": str(work / "data")}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "captioner.cli", "listen", "--system", "-o", str(out)],
                            env=env, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    opened.pid = proc.pid
    printed: list[str] = []
    err: list[tuple[float, str]] = []
    threading.Thread(target=lambda: printed.extend(proc.stdout), daemon=True).start()
    threading.Thread(target=lambda: [err.append((time.monotonic() - t0, ln.rstrip())) for ln in proc.stderr],
                     daemon=True).start()
    threading.Event().wait(max(0.0, t0 + PLAY_AFTER_S - time.monotonic()))
    player = subprocess.Popen(["paplay", "-d", "meeting", "--latency-msec=50", str(speech)],
                              env={**os.environ, **server.env})
    deadline = t0 + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if any("friday" in line.lower() for line in printed):
            break
        listening = next((t for t, line in err if line.startswith("listening:")), None)
        if listening is not None and time.monotonic() - t0 > listening + 12:
            break
        threading.Event().wait(0.1)
    player.wait(30)
    proc.send_signal(signal.SIGINT)
    proc.wait(30)
    stop.set()
    watcher.join(2)
    said = _words(out.read_text(encoding="utf-8")) if out.exists() else []
    first = _words(FIRST)
    listening = next((t for t, line in err if line.startswith("listening:")), None)
    return {
        "capture_s": round(opened.t - t0, 3) if opened.is_set() else None,
        "capture_cpu_s": round(opened.cpu, 2) if opened.is_set() and opened.cpu is not None else None,
        "listening_s": round(listening, 3) if listening is not None else None,
        "first_words_kept": round(sum(w in said for w in first) / len(first), 3),
        "first_word_kept": bool(said) and said[0] == first[0],
        "prepared_at_first_use": any("Preparing the built-in model" in line for _, line in err),
        "transcript": " ".join(said),
        "exit_code": proc.returncode,
    }


def _summary(runs: list[dict]) -> dict:
    def med(key):
        values = [r[key] for r in runs if r[key] is not None]
        return round(statistics.median(values), 3) if values else None

    return {"capture_s_median": med("capture_s"), "capture_s_max": max((r["capture_s"] or 0) for r in runs),
            "capture_cpu_s_median": med("capture_cpu_s"),
            "listening_s_median": med("listening_s"), "first_words_kept_median": med("first_words_kept"),
            "first_word_kept": sum(r["first_word_kept"] for r in runs), "runs": len(runs)}


def plot(report: dict, path: Path) -> None:
    """Bars per tree and cache state: seconds to capture opened and to "listening", words kept (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [(tree, cache) for cache in ("warm", "empty") for tree in report["summary"]]
    labels = [f"{tree}\n{cache} cache" for tree, cache in cols]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    x = range(len(cols))
    cap = [report["summary"][t][c]["capture_s_median"] or 0 for t, c in cols]
    lis = [report["summary"][t][c]["listening_s_median"] or 0 for t, c in cols]
    ax1.bar([i - 0.2 for i in x], cap, 0.4, label="command -> capture opened")
    ax1.bar([i + 0.2 for i in x], lis, 0.4, label="command -> listening (model ready)")
    ax1.axhline(0.5, color="k", lw=0.8, ls="--", label="target 0.5 s (capture)")
    ax1.set_xticks(list(x), labels, fontsize=8)
    ax1.set_ylabel("seconds (median)")
    ax1.legend(fontsize=8)
    kept = [100 * (report["summary"][t][c]["first_words_kept_median"] or 0) for t, c in cols]
    ax2.bar(list(x), kept, 0.5, color="tab:green")
    ax2.set_xticks(list(x), labels, fontsize=8)
    ax2.set_ylabel("first sentence's words kept (%)")
    ax2.set_ylim(0, 105)
    load = report.get("loadavg_before", [0])[0]
    fig.suptitle(f"listen --system, speech 0.3 s after the command (load average {load:.0f}, "
                 f"{report.get('cpus')} CPUs)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # started as a background job (``cmd &``): the commands would inherit SIGINT ignored, and
        # ``listen`` keeps an inherited ignore (nohup semantics), so the Ctrl-C that ends each run
        # would never arrive; with a handler here, each child starts with the default action
        signal.signal(signal.SIGINT, signal.default_int_handler)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=None, help="another checkout to run too (the 'before')")
    ap.add_argument("--tree-name", default="before", help="its name in the JSON")
    ap.add_argument("--tree-desc", default=None, help="what that tree is, for the JSON (e.g. 'main at 832ab09')")
    ap.add_argument("--runs", type=int, default=2, help="runs per tree and cache state")
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here (and the PNG beside it)")
    ap.add_argument("--plot-only", type=Path, default=None, metavar="JSON",
                    help="only draw the PNG of an earlier run's JSON (beside it)")
    args = ap.parse_args()
    if args.plot_only is not None:
        plot(json.loads(args.plot_only.read_text(encoding="utf-8")), args.plot_only.with_suffix(".png"))
        return
    trees = {"after": ROOT}
    if args.tree is not None:
        trees = {args.tree_name: args.tree.resolve(), "after": ROOT}
    base = Path(tempfile.mkdtemp(prefix="captioner-start-bench-"))
    speech = base / "speech.wav"
    subprocess.run(["espeak-ng", "-s", "160", "-w", str(base / "raw.wav"), f"{FIRST} {SECOND}"], check=True)
    import numpy as np
    import soundfile as sf

    x, rate = sf.read(base / "raw.wav", dtype="float32")
    sf.write(speech, np.concatenate([x, np.zeros(int(1.5 * rate), np.float32)]), rate)
    warm = base / "warm-cache"
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", "from captioner.asr.moonshine.files import default_model_dir; "
                    "from captioner.asr.moonshine.prepare import prepare; prepare(default_model_dir())"],
                   env={**os.environ, "XDG_CACHE_HOME": str(warm), "PYTHONPATH": str(ROOT)}, check=True)
    prepare_s = time.monotonic() - t
    load_before = os.getloadavg()
    results: dict = {name: {"warm": [], "empty": []} for name in trees}
    server = PulseServer().start()
    try:
        for i in range(args.runs):
            for cache in ("warm", "empty"):
                for name, tree in trees.items():  # interleaved: the machine's load hits both alike
                    work = Path(tempfile.mkdtemp(dir=base))
                    folder = warm if cache == "warm" else work / "empty-cache"
                    folder.mkdir(exist_ok=True)
                    run = _run(tree, folder, work, speech, server)
                    print(f"{name} {cache} #{i + 1}: {json.dumps({k: v for k, v in run.items() if k != 'transcript'})}",
                          file=sys.stderr, flush=True)
                    results[name][cache].append(run)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    report = {
        "what": "captioner listen --system, espeak-ng speech played 0.3 s after the command into a private "
                "PulseAudio null sink; capture_s from the sound server's new-record-stream event",
        "first_sentence": FIRST,
        "trees": {name: ("this checkout" if name == "after" else f"{tree}" + (f" ({args.tree_desc})" if args.tree_desc else ""))
                  for name, tree in trees.items()},
        "warm_cache_prepare_s": round(prepare_s, 2),
        "loadavg_before": [round(v, 2) for v in load_before],
        "loadavg_after": [round(v, 2) for v in os.getloadavg()],
        "cpus": os.cpu_count(),
        "summary": {name: {cache: _summary(runs) for cache, runs in by.items()} for name, by in results.items()},
        "runs": results,
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
        plot(report, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
