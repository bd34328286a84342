"""How long the caption overlay's paint holds the GUI thread while captions arrive (issue 30.4).

Feeds a ``CaptionOverlay`` (default settings: 28 pt, 2 lines, offscreen, 1100 px wide) the
events of a fast speaker -- two partials then a final per word, 300 events -- and times a
full paint (``QWidget.grab``) after each one: what the app does at every partial. Prints JSON
(p50/p90/max ms, the load average); ``--tree`` times another checkout's ``captioner``
(e.g. ``git archive`` of the branch point), so before and after run side by side::

    QT_QPA_PLATFORM=offscreen python bench/overlay_paint.py --tree /tmp/before --out bench/results/overlay_paint
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

HERE = Path(__file__).resolve().parent.parent
WORDS = ("the quarterly numbers look good but we should talk about hiring before the next review "
         "and the budget for travel is still open so please send your estimates by friday").split()


def measure(events: int = 300) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])  # noqa: F841 - kept alive for the widgets
    from captioner.events import TextDelta
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.settings import Settings

    settings = Settings.from_file(os.path.join(tempfile.mkdtemp(), "c.ini"))
    ov = CaptionOverlay(settings)
    ov.setGeometry(50, 50, 1100, ov.preferred_height())
    ov.show()
    times, t = [], 0.0
    for k in range(events):
        word = WORDS[(k // 3) % len(WORDS)]
        if k % 3 == 2:
            ov.apply_event(TextDelta(" " + word, t, t + 0.3, True, "Meeting"))
            t += 0.3
        else:
            ov.apply_event(TextDelta(" " + word[: len(word) * (k % 3 + 1) // 2], t, t + 0.2, False, "Meeting"))
        t0 = time.perf_counter()
        ov.grab()
        times.append(1000.0 * (time.perf_counter() - t0))
    times.sort()
    return {"paints": len(times), "p50_ms": round(times[len(times) // 2], 2),
            "p90_ms": round(times[int(0.9 * len(times))], 2), "max_ms": round(times[-1], 2),
            "load1": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", help="also time this checkout's captioner (before)")
    ap.add_argument("--out", help="write OUT.json")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: measure the captioner on sys.path
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure()))
        return
    result = {"what": __doc__.split("\n\n")[0], "cpus": os.cpu_count()}
    for label, tree in (("before", args.tree), ("after", str(HERE))):
        if tree is None:
            continue
        env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), QT_QPA_PLATFORM="offscreen")
        out = subprocess.run([sys.executable, __file__, "--one"], env=env, check=True, capture_output=True, text=True)
        result[label] = json.loads(out.stdout.strip().splitlines()[-1])
        result[label]["tree"] = tree if label == "before" else "this checkout"
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
