"""False name alerts when the capture starts inside a word (issue 49), before and after, in one run.

A name listed for alerts joins the hotwords, so the decoder is steered towards it. Live, a capture
that starts while someone talks gives the model a first line that begins inside a word; the model
can read such a clip as nothing (the end token first), and the hotword bonus used to fill that
empty first step with a listed name: "Siobhan, thanks" for "...ning everyone", four runs of four,
a false alert. Since then a reading the model ends at its first step is never steered into a
hotword (:mod:`captioner.asr.moonshine.hotwords`), and a line whose readings are all empty is read
again with the end token held back and without the list (:mod:`captioner.asr.moonshine.empty_lines`).

Clips: every sentence of espeak-ng ``set1``-``set4`` and the natural-voice ``nat4``, ``nat6quick``,
``nat12blend``, cut from ``start + off`` (``off`` in :data:`OFFSETS`: inside the first word or two)
to its end + 0.4 s (``bench/empty_lines.py``'s clips); and each set whole. The backend is the
built-in model with :data:`NAMES` as its hotword list (partials off,
so every line reads its readings in turn and the text does not depend on the machine's load), each
clip through ``StreamingSession`` fed 0.1 s blocks; every final line goes through the app's
:class:`~captioner.transcript.alerts.AlertMatcher` with :data:`NAMES`. Per configuration: clips
that alerted and the lines, the alerts split into false ones (the word is not in the sentence
said) and true ones (:func:`tally`: one sentence of ``nat6quick`` does say "Maria"), clips read as
nothing, and WER of the clips against ``bench/empty_lines.py``'s approximate reference (the words
after the cut).

Each configuration runs in its own child process: ``before`` the code of ``--before-rev``
(``git archive``), ``after`` the working tree::

    .venv-test/bin/python bench/alert_starts.py            # writes bench/results/alert_starts.json
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Names a user might list for alerts (their own and colleagues'); only "Maria" is said, in one
#: sentence of ``nat6quick``.
NAMES = ("Siobhan", "Maria", "Priya", "Tomasz", "Aoife", "Kenji")
OFFSETS = (0.15, 0.3, 0.45)
SETS = ("set1", "set2", "set3", "set4", "nat4", "nat6quick", "nat12blend")
BLOCK = 1600  # 0.1 s


def run_clip(backend, audio) -> tuple[list[str], list[str]]:
    """The final lines of ``audio`` and the alert words they raised."""
    from captioner.engine.session import StreamingSession
    from captioner.events import TextDelta
    from captioner.transcript.alerts import AlertMatcher

    session = StreamingSession(backend, "Meeting", turns=False)
    events = []
    for i in range(0, len(audio), BLOCK):
        events += session.feed(audio[i:i + BLOCK])
    events += session.end()
    matcher = AlertMatcher(NAMES)
    alerts = []
    for ev in events:
        if isinstance(ev, TextDelta) and ev.final:
            alerts += matcher.feed(ev, ev.end)
    alerts += matcher.due(float("inf"))
    lines = [e.text.strip() for e in events if isinstance(e, TextDelta) and e.final and e.text.strip()]
    return lines, [a.word for a in alerts]


def child(args) -> None:
    import jiwer

    from bench.empty_lines import mid_word_clips, norm, reference, speech_set  # this checkout's (no captioner import)

    sys.path.insert(0, args.code)
    from captioner.asr import load_backend

    backend = load_backend("default", hotwords=list(NAMES), partials=False)
    clips, whole = [], []
    refs, hyps = [], []
    t0 = time.perf_counter()
    for name in SETS:
        audio, sentences = speech_set(name)
        for i, s, off, a, b in mid_word_clips(sentences, OFFSETS):
            lines, alerts = run_clip(backend, audio[a:b])
            ref, _ = reference(s["text"], s["start"], s["end"], off)
            refs.append(norm(ref) or "-")
            hyps.append(norm(" ".join(lines)))
            if alerts or not lines:
                clips.append({"set": name, "sentence": i, "off": off, "text": " ".join(lines), "alerts": alerts,
                              "said": s["text"]})
        lines, alerts = run_clip(backend, audio)
        whole.append({"set": name, "alerts": alerts, "lines": len(lines)})
    n = len(refs)
    alerted = [c for c in clips if c["alerts"]]
    print(json.dumps({
        "clips": n, "clips_alerted": len(alerted), "alerts": sum(len(c["alerts"]) for c in alerted),
        "clips_empty": sum(1 for c in clips if not c["text"]),
        "wer": round(jiwer.wer(refs, hyps), 4), "alerted": alerted,
        "empty": [c for c in clips if not c["text"]], "whole_sets": whole,
        "wall_s": round(time.perf_counter() - t0, 1)}))


def tally(run: dict) -> dict:
    """Split a run's alerts into false ones (the word is not in what was said) and true ones."""
    from captioner.transcript.alerts import fold

    def said(word: str, text: str) -> bool:
        return f" {fold(word)} " in f" {' '.join(fold(text).replace(',', ' ').replace('.', ' ').split())} "

    false = [(c, w) for c in run.get("alerted", []) for w in c["alerts"] if not said(w, c["said"])]
    true = [(c, w) for c in run.get("alerted", []) for w in c["alerts"] if said(w, c["said"])]
    return {"false_alerts": len(false), "clips_with_false_alert": len({id(c) for c, _ in false}),
            "true_alerts": len(true), "false_by_word": {w: sum(1 for _, x in false if x == w) for w in NAMES}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before-rev", default="ba3c86c")
    ap.add_argument("--runs", default="before,after")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "alert_starts.json"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(ROOT), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    from bench.latency import export_rev

    result = {"names": NAMES, "offsets": OFFSETS, "sets": SETS, "before_rev": args.before_rev,
              "loadavg_start": [round(v, 2) for v in os.getloadavg()], "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for run in args.runs.split(","):
            if run == "before":
                (Path(tmp) / "before").mkdir(exist_ok=True)
                code = str(export_rev(args.before_rev, Path(tmp) / "before"))
            else:
                code = str(ROOT)
            out = subprocess.run([sys.executable, __file__, "--child", "--code", code], capture_output=True,
                                 text=True, cwd=ROOT)
            if out.returncode:
                result["runs"][run] = {"error": out.stderr[-2000:]}
                continue
            result["runs"][run] = {"code": f"git {args.before_rev}" if run == "before" else "working tree",
                                   **json.loads(out.stdout.strip().splitlines()[-1])}
    result["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    for run in result["runs"].values():
        if "alerted" in run:
            run["tally"] = tally(run)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: {m: v.get(m) for m in ("clips", "clips_alerted", "tally", "clips_empty", "wer")}
                      for k, v in result["runs"].items()}, indent=1))


if __name__ == "__main__":
    main()
