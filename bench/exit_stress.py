"""Exit stress: the real commands and the GUI end with status 0, every time (issue 30.2).

``captioner listen --file speech.wav -o out.txt`` used to end with status 134 ("terminate called
without an active exception") about 1 run in 6, 1 in 2 with a core kept busy: the partial
re-decode thread was still inside ONNX Runtime when the interpreter finalised (see
``captioner/native_calls.py``). This runs, with the default model on one espeak-ng sentence
(4.6 s, so a partial re-decode is often running when the file ends):

* ``listen``: ``python -m captioner.cli listen --file speech.wav -o out.txt`` (real time);
* ``transcribe``: ``python -m captioner.cli transcribe speech.wav -o out.txt``;
* ``gui``: the app through ``captioner.cli.main()`` (offscreen, file source, autostart), quit
  with its Quit action at a different moment each cycle: while the model loads, at the first
  caption, a few captions in, at the end of the file.

Each run gets fresh config and data folders. A run counts as good when it exits 0 and writes
its output (the GUI: a journal holding text, except a quit while loading). ``--tree DIR``
adds another checkout (e.g. ``main`` exported with ``git archive``), run interleaved with this
one; ``--hog`` keeps one core busy (a shell loop) meanwhile. Prints one JSON object, also
written to ``--out``::

    python bench/exit_stress.py [--listen 50] [--transcribe 50] [--gui 20] [--tree DIR] [--hog]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.speech import SENTENCES, espeak  # noqa: E402

#: Seconds after which a run counts as hung (killed, a failure).
RUN_TIMEOUT_S = 120.0

GUI_DRIVER = r"""
import sys
from PySide6.QtCore import QTimer
from captioner.ui import app as gui_app
from captioner.ui.main_window import MainWindow
from captioner.ui.settings import Keys, Settings
from captioner.ui.settings import SETTINGS_FILE
import os

MainWindow.ask_unsaved = lambda self: "discard"  # Quit with unsaved text: no dialog (the journal keeps it)
settings = Settings.from_file(os.path.join(os.environ["CAPTIONER_CONFIG_DIR"], SETTINGS_FILE))
settings.set(Keys.SOURCE_MODE, "file")
settings.set(Keys.FILE, {wav!r})
settings.sync()
when = {when!r}  # "loading", or how many caption updates to wait for
shown = gui_app.CaptionerApp.show

def show(self):
    shown(self)
    quit_ = lambda: QTimer.singleShot(0, self.window.quit_action.trigger)
    if when == "loading":
        QTimer.singleShot(0, quit_)
        return
    seen = [0]
    def on_delta(_ev):
        seen[0] += 1
        if seen[0] == when:
            print("quit after", seen[0], "caption updates", flush=True)
            quit_()
    self.window.controller.text_delta.connect(on_delta)
    self.window.controller.stopped.connect(quit_)  # the file ended first

gui_app.CaptionerApp.show = show
run_gui = gui_app.run_gui
gui_app.run_gui = lambda *a, **k: run_gui(*a, **{{**k, "autostart": True}})
from captioner.cli import main
sys.argv = ["captioner"]
sys.exit(main())
"""

#: When the GUI cycles press Quit (in turn).
GUI_MOMENTS = ("loading", 1, 4, 10_000)


def _speech(work: Path) -> Path:
    return espeak(SENTENCES[0], work / "speech.wav")


def _one(kind: str, i: int, tree: Path, wav: Path, work: Path) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix=f"{kind}-{i}-", dir=work))
    env = {**os.environ, "PYTHONPATH": str(tree), "CAPTIONER_CONFIG_DIR": str(run_dir / "config"),
           "CAPTIONER_DATA_DIR": str(run_dir / "data"), "XDG_RUNTIME_DIR": str(run_dir),
           "QT_QPA_PLATFORM": "offscreen", "PYTHONUNBUFFERED": "1"}
    out = run_dir / "out.txt"
    moment = None
    if kind == "listen":
        cmd = [sys.executable, "-m", "captioner.cli", "listen", "--file", str(wav), "-o", str(out)]
    elif kind == "transcribe":
        cmd = [sys.executable, "-m", "captioner.cli", "transcribe", str(wav), "-o", str(out)]
    else:
        moment = GUI_MOMENTS[i % len(GUI_MOMENTS)]
        (run_dir / "config").mkdir(parents=True)
        cmd = [sys.executable, "-c", GUI_DRIVER.format(wav=str(wav), when=moment)]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        rc, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, stderr = "timeout", (exc.stderr or b"").decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    took = time.monotonic() - t0
    if kind == "gui":
        texts = [p for p in (run_dir / "data").rglob("*.jsonl") if '"text"' in p.read_text(encoding="utf-8", errors="replace")]
        wrote = bool(texts) or moment == "loading"
    else:
        wrote = out.exists() and bool(out.read_text(encoding="utf-8").strip())
    result = {"kind": kind, "rc": rc, "s": round(took, 2), "wrote": wrote}
    if moment is not None:
        result["quit_at"] = moment
    if rc != 0 or not wrote:
        result["stderr_tail"] = stderr[-600:]
    shutil.rmtree(run_dir, ignore_errors=True)
    return result


def _summary(runs: list[dict]) -> dict:
    codes = collections.Counter(str(r["rc"]) for r in runs)
    secs = [r["s"] for r in runs]
    return {
        "runs": len(runs),
        "exit_0_and_written": sum(1 for r in runs if r["rc"] == 0 and r["wrote"]),
        "exit_codes": dict(sorted(codes.items())),
        "aborts_134": sum(1 for r in runs if r["rc"] in (134, -6)),
        "s_mean": round(sum(secs) / len(secs), 2) if secs else 0.0,
        "s_max": max(secs, default=0.0),
        "failures": [r for r in runs if r["rc"] != 0 or not r["wrote"]][:10],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", type=int, default=50)
    ap.add_argument("--transcribe", type=int, default=50)
    ap.add_argument("--gui", type=int, default=20)
    ap.add_argument("--tree", type=Path, help="another checkout to run interleaved with this one (before)")
    ap.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "exit_stress.json")
    args = ap.parse_args(argv)
    trees = {"this checkout": ROOT}
    if args.tree:
        trees[f"--tree {args.tree.name}"] = args.tree.resolve()
    work = Path(tempfile.mkdtemp(prefix="exit-stress-"))
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if args.hog else None
    load_before = os.getloadavg()
    t0 = time.monotonic()
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    try:
        wav = _speech(work)
        plan = [("listen", i) for i in range(args.listen)] + [("transcribe", i) for i in range(args.transcribe)] \
            + [("gui", i) for i in range(args.gui)]
        for kind, i in plan:
            for name, tree in trees.items():  # interleaved: both trees see the same load
                r = _one(kind, i, tree, wav, work)
                runs[name].append(r)
                print(f"{name}: {kind} {i}: rc {r['rc']} in {r['s']} s", file=sys.stderr, flush=True)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "benchmark": "exit_stress",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "hog": args.hog,
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.monotonic() - t0, 1),
        "trees": {name: {kind: _summary([r for r in rs if r["kind"] == kind])
                         for kind in ("listen", "transcribe", "gui") if any(r["kind"] == kind for r in rs)}
                  for name, rs in runs.items()},
    }
    text = json.dumps(result, indent=2)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    mine = result["trees"]["this checkout"]
    return 0 if all(s["exit_0_and_written"] == s["runs"] for s in mine.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
