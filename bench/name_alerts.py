"""Name alerts (issue 49): every said word alerts, once, within 1 s of its final; no other word does.

Replays the default model's real final text of the 20-minute meeting (``bench/latency.py``'s
recorded event stream, ``bench/results/latency_20min_*.events.jsonl.gz``: each final delta with
the wall time ``t`` it reached the app) through :class:`captioner.transcript.alerts.AlertMatcher`,
three ways:

* ``words``: the deltas as the default model sent them (committed words, leading spaces);
* ``pieces``: each delta cut into pieces of 1-4 characters, 80 ms apart (how a token model --
  Audio8, the remote server -- sends text), to check that a word cut mid-way neither fires early
  nor fires as another word ("Mark" in "Marketing");
* ``lines``: each source's text up to each sentence end sent as one delta (a line model).

The listed words are words this meeting says (it names no people): days, months, "Help Desk"
(two words), and look-alikes that must never fire ("Mark" beside "Marketing", "Day" inside
"Thursday", "Jun" beside "June"). The expected count of each is read from the same text an
independent way (whitespace-split words, stripped of punctuation, compared case-folded). A held
match fires when a GUI timer would fire it (:meth:`AlertMatcher.next_due`).

Latency = wall time of the alert - wall time of the final delta that completed the word.
Prints JSON; ``--out FILE`` writes it too::

    python bench/name_alerts.py --out bench/results/name_alerts.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from captioner.events import TextDelta  # noqa: E402
from captioner.transcript.alerts import HOLD_S, AlertMatcher  # noqa: E402

EVENTS = ROOT / "bench" / "results" / "latency_20min_tailgap.after.events.jsonl.gz"
WORDS = ["June", "Thursday", "Friday", "Monday", "Saturday", "Help Desk", "Marketing", "weekly"]
#: look-alikes: said only inside or beside other words (their expected count is read from the text too)
NEVER = ["Mark", "Day", "Jun", "Help Des", "week"]


def expected_counts(text: str, words: list[str]) -> dict[str, int]:
    """Occurrences of each word in ``text``: whitespace-split tokens stripped of punctuation,
    compared case-folded; a multi-word entry matches consecutive tokens."""
    tokens = [t.strip(".,!?;:\"()'").casefold() for t in text.split()]
    tokens = [t[:-2] if t.endswith("'s") else t for t in tokens]
    out = {}
    for w in words:
        parts = w.casefold().split()
        out[w] = sum(tokens[i:i + len(parts)] == parts for i in range(len(tokens)))
    return out


def streams(events: list[dict]) -> dict[str, list[tuple[float, TextDelta]]]:
    """The three ways of sending the same final text: ``[(wall time, delta)]`` in time order."""
    finals = [e for e in events if e["final"]]
    words = [(e["t"], TextDelta(e["text"], e["start"], e["end"], True, e["source"])) for e in finals]
    pieces = []
    for t, d in words:
        cuts, i, k = [], 0, 0
        while i < len(d.text):
            n = 1 + (k * 7 + len(d.text)) % 4  # 1-4 characters, deterministic
            cuts.append(d.text[i:i + n])
            i, k = i + n, k + 1
        for j, piece in enumerate(cuts):
            pieces.append((t + 0.08 * j, TextDelta(piece, d.start, d.end, True, d.source)))
    pieces.sort(key=lambda p: p[0])
    lines, held = [], {}
    for t, d in words:
        text, start = held.get(d.source, ("", d.start))
        text += d.text
        if text.rstrip().endswith((".", "?", "!")):
            lines.append((t, TextDelta(text, start, d.end, True, d.source)))
            held.pop(d.source, None)
        else:
            held[d.source] = (text, start)
    return {"words": words, "pieces": pieces, "lines": lines}


def replay(stream: list[tuple[float, TextDelta]], words: list[str]) -> dict:
    """Feed ``stream`` as the GUI does: each delta at its wall time, a held match firing at
    :meth:`AlertMatcher.next_due` (the GUI's timer) unless a delta settles it first.

    Returns:
        ``got`` (alerts per word), ``latencies`` (s per alert: alert time - time of the delta
        that completed the word) and ``cpu_us_per_delta`` (matcher time per delta, µs).
    """
    m = AlertMatcher(words)
    got = {w: 0 for w in words}
    latencies: list[float] = []
    cpu = 0.0

    def held() -> dict[str, tuple]:  # source -> (its held alert, wall time it was first held)
        return {src: (st.held.alert, st.held.until - m.hold_s) for src, st in m._sources.items() if st.held}

    for t, delta in stream:
        due = m.next_due()
        if due is not None and due <= t:  # the timer fired before this delta came
            for a in m.due(due):
                got[a.word] += 1
                latencies.append(m.hold_s)
        before = held()
        c0 = time.perf_counter()
        alerts = m.feed(delta, t)
        cpu += time.perf_counter() - c0
        for a in alerts:
            got[a.word] += 1
            old = before.get(a.source)
            latencies.append(t - old[1] if old is not None and old[0] == a else 0.0)
    for a in m.flush():  # the end of the run
        got[a.word] += 1
        latencies.append(0.0)
    return {"got": got, "latencies": latencies, "cpu_us_per_delta": 1e6 * cpu / max(1, len(stream))}


def gui_cost(n: int = 40) -> dict:
    """Wall ms from a final delta reaching :class:`~captioner.ui.name_alerts.NameAlerts` to the
    overlay's banner being set (offscreen Qt; the D-Bus send is a no-op here, it runs on its own
    thread in the app)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from captioner.ui.name_alerts import NameAlerts
    from captioner.ui.overlay import CaptionOverlay
    from captioner.ui.settings import Keys, Settings

    app = QApplication.instance() or QApplication([])
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings.from_file(str(Path(tmp) / "s.ini"))
        settings.set(Keys.ALERT_WORDS, ["Maria"])
        overlay = CaptionOverlay(settings)
        overlay.resize(1000, 120)
        overlay.show()
        alerts = NameAlerts(settings, overlay, None, send=lambda *a: None)
        ms = []
        for i in range(n):
            t0 = time.perf_counter()
            alerts.on_event(TextDelta(f"Thanks Maria, point {i}.", i, i + 1.0, True, "Meeting"))
            assert overlay.alert_text()
            ms.append(1000 * (time.perf_counter() - t0))
            app.processEvents()
        overlay.close()
    ms.sort()
    return {"alerts": n, "ms_p50": round(statistics.median(ms), 2), "ms_max": round(ms[-1], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", default=str(EVENTS), help="a recorded event stream (.events.jsonl.gz)")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args()
    with gzip.open(args.events, "rt", encoding="utf-8") as f:
        events = [json.loads(line) for line in f]
    text = "".join(e["text"] for e in events if e["final"])
    listed = WORDS + NEVER
    expected = expected_counts(text, listed)
    result = {"events": os.path.relpath(args.events, ROOT), "finals": sum(e["final"] for e in events),
              "hold_s": HOLD_S, "loadavg": os.getloadavg(), "expected": expected, "ways": {}}
    for way, stream in streams(events).items():
        r = replay(stream, listed)
        lat = r["latencies"]
        missed = {w: expected[w] - r["got"][w] for w in listed if r["got"][w] < expected[w]}
        extra = {w: r["got"][w] - expected[w] for w in listed if r["got"][w] > expected[w]}
        result["ways"][way] = {
            "deltas": len(stream), "alerts": sum(r["got"].values()), "missed": missed, "not_said": extra,
            "latency_s": {"p50": statistics.median(lat) if lat else None,
                          "p95": sorted(lat)[int(0.95 * (len(lat) - 1))] if lat else None,
                          "max": max(lat) if lat else None, "immediate": sum(x == 0.0 for x in lat),
                          "held": sum(x > 0.0 for x in lat)},
            "cpu_us_per_delta": round(r["cpu_us_per_delta"], 1),
        }
    result["gui"] = gui_cost()
    text_out = json.dumps(result, indent=2)
    print(text_out)
    if args.out:
        Path(args.out).write_text(text_out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
