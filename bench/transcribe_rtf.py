"""``captioner transcribe`` speed, before and after, side by side in one invocation (issue 30.3).

Renders the synthetic meetings (``bench/meeting_audio.py``; 2 and 20 minutes by default),
exports the *before* tree with ``git archive REV`` and runs ``python -m captioner.cli
transcribe FILE -o out.json`` of each tree on each file as a fresh process, alternating
before/after. Each run is probed from inside (``--probe``: the same CLI with a few functions
wrapped, nothing changed) for:

* ``wall_s`` / ``rtf``: from just before the process is started to its exit, over the
  audio length (start-up included);
* ``startup_to_read_s``: from the process start to the first audio read (``load_audio``),
  ``startup_cpu_to_read_s`` the process's CPU seconds by then; ``startup_to_decode_s``: to
  the first chunk submitted to the engine;
* ``cpu_s``: user + system CPU of the process; ``threads``: CPU seconds per thread name;
* ``smart_turn_calls``: end-of-turn classifier runs;
* ``identical``: the after transcript (text, times, turn marks) equals the before one.

Each tree prepares the default model once, untimed, in its own cache folder
(``XDG_CACHE_HOME``), before the timed runs. The machine's load average is recorded with every run (2 shared cores: wall times move
with the load, CPU seconds much less).

    python bench/transcribe_rtf.py                # before = main, 2 + 20 minutes
    python bench/transcribe_rtf.py --minutes 2 --before 832ab09
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def probe(argv: list[str]) -> None:
    """Run the CLI with probes; writes the measurements as JSON to ``$RTF_PROBE_OUT``."""
    import atexit
    import resource
    import threading

    t0 = float(os.environ["RTF_T0"])
    marks: dict[str, float] = {}
    thread_cpu: dict[str, float] = {}
    counts = {"smart_turn_calls": 0}

    run = threading.Thread.run

    def timed_run(self):  # CPU of threads that end before the process
        try:
            run(self)
        finally:
            thread_cpu[self.name] = thread_cpu.get(self.name, 0.0) + time.thread_time()

    threading.Thread.run = timed_run

    import captioner.cli as cli
    import captioner.commands.transcribe as tr
    import captioner.engine.batcher as batcher
    import captioner.engine.turn_models as tm

    load = tr.load_audio

    def load_audio(*a, **k):
        marks.setdefault("read", time.time())
        marks.setdefault("read_cpu", time.process_time())
        return load(*a, **k)

    tr.load_audio = load_audio
    submit = batcher.BatchEngine.submit

    def first_submit(self, *a, **k):
        marks.setdefault("decode", time.time())
        return submit(self, *a, **k)

    batcher.BatchEngine.submit = first_submit
    call = tm.SmartTurn.__call__

    def counted(self, audio):
        counts["smart_turn_calls"] += 1
        return call(self, audio)

    tm.SmartTurn.__call__ = counted

    def report() -> None:
        tick = os.sysconf("SC_CLK_TCK")
        for t in threading.enumerate():
            if t is threading.main_thread() or t.native_id is None:
                continue
            try:
                fields = Path(f"/proc/self/task/{t.native_id}/stat").read_text().rsplit(")", 1)[1].split()
                thread_cpu[t.name] = thread_cpu.get(t.name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
            except OSError:
                pass
        thread_cpu["MainThread"] = time.thread_time()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        out = {
            "startup_to_read_s": marks.get("read", float("nan")) - t0,
            "startup_to_decode_s": marks.get("decode", float("nan")) - t0,
            "startup_cpu_to_read_s": marks.get("read_cpu", float("nan")),
            "cpu_s": ru.ru_utime + ru.ru_stime,
            "threads": {k: round(v, 2) for k, v in sorted(thread_cpu.items(), key=lambda kv: -kv[1])},
            **counts,
        }
        Path(os.environ["RTF_PROBE_OUT"]).write_text(json.dumps(out))

    atexit.register(report)
    sys.argv = ["captioner", *argv]
    code = cli.main(argv)
    sys.exit(code)


def transcript(path: Path) -> dict:
    d = json.loads(path.read_text())
    d.pop("metadata", None)
    return d


def run_tree(tree: Path, audio: Path, out: Path, seconds: float, cache: Path | None = None) -> dict:
    """One timed ``transcribe`` of ``audio`` by ``tree``; ``cache``: its own ``XDG_CACHE_HOME``
    (each tree keeps its prepared model there: one tree's preparation deletes another recipe's
    copy in a shared cache, which would put a model build inside every timed run)."""
    probe_out = out.with_suffix(".probe.json")
    env = dict(os.environ, PYTHONPATH=str(tree), RTF_PROBE_OUT=str(probe_out), OMP_NUM_THREADS="2",
               QT_QPA_PLATFORM="offscreen")
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    load_before = os.getloadavg()
    env["RTF_T0"] = repr(time.time())
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / "transcribe_rtf.py"), "--probe", "transcribe", str(audio),
                           "-o", str(out)], env=env, cwd=str(tree), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{tree}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    res = json.loads(probe_out.read_text())
    return {"wall_s": round(wall, 2), "rtf": round(wall / seconds, 4), **{k: (round(v, 3) if isinstance(v, float)
            else v) for k, v in res.items()}, "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--probe":
        probe(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, nargs="+", default=[2.0, 20.0])
    ap.add_argument("--before", default="main", help="git revision of the 'before' tree (default: main)")
    ap.add_argument("--runs", type=int, default=1, help="before/after pairs per file")
    ap.add_argument("--out", default=str(HERE / "results" / "transcribe_rtf.json"))
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from meeting_audio import make_meeting

    work = Path(tempfile.mkdtemp(prefix="transcribe_rtf_"))
    before = work / "before"
    before.mkdir()
    rev = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    results = {"before": rev, "after": f"{head} (this checkout)", "cpus": os.cpu_count(), "files": []}
    trees = (("before", before), ("after", ROOT))
    caches = {name: work / f"cache-{name}" for name, _ in trees}
    import numpy as np
    import soundfile as sf

    warm = work / "warm.wav"  # each tree prepares its model in its own cache once, untimed
    sf.write(str(warm), np.zeros(16000, np.float32), 16000)
    for name, tree in trees:
        run_tree(tree, warm, work / f"warm_{name}.json", 1.0, caches[name])
    for minutes in args.minutes:
        audio = work / f"meeting_{minutes:g}min.wav"
        make_meeting(audio, minutes)
        seconds = sf.info(str(audio)).duration
        entry = {"minutes": minutes, "audio_s": round(seconds, 1), "runs": []}
        for k in range(args.runs):
            pair = {}
            for name, tree in trees:
                out = work / f"{name}_{minutes:g}_{k}.json"
                pair[name] = run_tree(tree, audio, out, seconds, caches[name])
                print(f"{minutes:g} min {name}: {json.dumps(pair[name])}", file=sys.stderr)
            pair["identical"] = transcript(work / f"before_{minutes:g}_{k}.json") == transcript(
                work / f"after_{minutes:g}_{k}.json")
            entry["runs"].append(pair)
        results["files"].append(entry)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
