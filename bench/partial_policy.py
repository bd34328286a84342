"""Which partial tail to show: replay a meeting's live re-decodes through the backend's code.

Choosing how much of each re-decode the default model shows (:mod:`captioner.asr.moonshine.steady_tail`)
trades flicker against latency; a live run per candidate costs real time. This script takes
the re-decodes ``bench/agreement_policy.py`` recorded (per line: the re-decode times, costs
and texts, the line's one-pass text) and feeds them through the real
``MoonshineBackend._apply_partial`` / ``_lines`` (a stand-in model returns the recorded
texts), with the wall clock simulated as a live run would see it: a re-decode's result at
its start + cost + 50 ms, a line's final at its end + 0.1 s + its decode cost. It then
measures, per tail policy:

* erasure (``captioner/transcript/erasure.py``, the same code ``bench/latency.py`` uses);
* partial latency: event time minus the end of the audio the shown text covers (the
  partial event's ``end``), p50/p95, as ``bench/latency.py`` measures it;
* first-shown latency per final word: when the word (as it finally reads) first appeared
  on screen at its place, minus its audio end (character position across the line);
* WER of the final text (must not change: the tail policy only changes what is shown).

    python bench/partial_policy.py --replays bench/results/agreement_policy_20min_onnx.replays.json \\
        --out bench/results/partial_policy_20min

Estimates for ranking policies; ``bench/latency.py`` measures the live numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


class _Recorded:
    """Stand-in model: ``transcribe`` returns the text set last."""

    text = ""

    def transcribe(self, audio):
        return self.text


class RawTail:
    """The tail as it was before issue 27: every re-decode's whole tail, as it reads."""

    words: list = []

    def reset(self):
        pass

    def remember(self, clip_s, words):
        return []

    def update(self, rest, previous, committed=0, ages=None):
        self.words = list(rest)
        return len(rest)

    def text(self):
        return " ".join(self.words)


def replay(lines, replays, tail_factory) -> list[tuple[float, object]]:
    """``(wall s, event)`` of the meeting replayed through the backend with a tail policy."""
    import numpy as np

    from captioner.asr.moonshine.backend import MoonshineBackend
    from captioner.asr.moonshine.line_state import LineState
    from captioner.asr.moonshine.lines import LineEvent
    from captioner.asr.moonshine.partial_worker import PartialJob
    from captioner.asr.moonshine.repeats import collapse_repeats

    model = _Recorded()
    be = MoonshineBackend(model=model, vad=object(), partials=False)
    sr = 16000
    state = LineState(lines=None, speech=None)
    out: list[tuple[float, object]] = []
    for i, ((ls, le, text), rep) in enumerate(zip(lines, replays)):
        be._lines(state, [LineEvent(i, int(ls * sr))])
        state.tail = tail_factory()
        for t, cost, hyp in rep["hyps"]:
            wall = t + cost + 0.05
            if wall >= le:
                break  # the line closed first: its result is discarded
            job = PartialJob(state.key, np.zeros(0, np.float32), (i, ls, t - ls, t))
            job.text, job.cost_s = collapse_repeats(hyp), cost
            out += [(wall, ev) for ev in be._apply_partial(state, job)]
        model.text = text
        closed = be._lines(state, [LineEvent(i, int(ls * sr), int(le * sr))])
        out += [(le + 0.1 + rep["final_cost"], ev) for ev in closed]
    be.close()
    return out


def word_ends(lines) -> list[float]:
    """Stream time (s) each word of the one-pass lines ends: its character position across its line."""
    ends = []
    for ls, le, text in lines:
        total, pos = max(1, len(text.strip())), 0
        for w in text.split():
            pos += len(w) + (1 if pos else 0)
            ends.append(ls + (le - ls) * min(1.0, pos / total))
    return ends


def evaluate(lines, replays, tail_factory, ref: str) -> dict:
    import jiwer
    import numpy as np

    from captioner.events import TextDelta
    from tests.speech import normalize_words

    spec = __import__("importlib.util").util.spec_from_file_location(
        "_erasure", ROOT / "captioner" / "transcript" / "erasure.py")
    er = __import__("importlib.util").util.module_from_spec(spec)
    sys.modules[spec.name] = er
    spec.loader.exec_module(er)
    records = replay(lines, replays, tail_factory)
    r = er.erasure(records)
    lat = [t - ev.end for t, ev in records if isinstance(ev, TextDelta) and not ev.final and ev.text.strip()]
    final = "".join(ev.text for _, ev in records if isinstance(ev, TextDelta) and ev.final)
    shown = [t - e for t, e in zip(er.first_shown(records).get("", []), word_ends(lines)) if t is not None]
    q = lambda v, p: round(float(np.percentile(v, p)), 3) if v else None  # noqa: E731
    return {"erasure": round(r.ratio, 3), "erasure_normalised": round(er.erasure(records, normalise=True).ratio, 3),
            "erased_words": r.erased_words, "final_words": r.final_words,
            "partial_events": len(lat), "partial_p50": q(lat, 50), "partial_p95": q(lat, 95),
            "first_shown_p50": q(shown, 50), "first_shown_p95": q(shown, 95),
            "wer": round(jiwer.wer(normalize_words(ref), normalize_words(final)), 4)}


def _relative(path: str) -> str:
    """``path`` relative to the checkout when it lies inside it (results name no worktree)."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replays", default=str(ROOT / "bench/results/agreement_policy_20min_onnx.replays.json"))
    ap.add_argument("--minutes", type=float, default=20.0, help="the meeting the replays were made of")
    ap.add_argument("--ages", default="none,0,0.5,1.0,1.2,1.5", help="comma list of SteadyTail age_s values ('none': off)")
    ap.add_argument("--every", default="1,4", help="comma list: replay every k-th re-decode (k > 1: a loaded "
                    "machine, where the budget sheds partials)")
    ap.add_argument("--gaps", default="0,0.5", help="comma list of SteadyTail min_gap_s values (s of audio between "
                    "the two re-decodes whose agreement shows a word; 0: the previous re-decode)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    import tempfile

    from bench.meeting_audio import make_meeting
    from captioner.asr.moonshine.steady_tail import SteadyTail

    data = json.loads(Path(args.replays).read_text())
    lines, replays = [tuple(x) for x in data["lines"]], data["replays"]
    with tempfile.TemporaryDirectory() as tmp:
        ref = " ".join(u.text for u in make_meeting(Path(tmp) / "m.wav", args.minutes, seed=10))
    results = {}
    for k in (int(x) for x in args.every.split(",")):
        reps = [{"hyps": r["hyps"][::k], "final_cost": r["final_cost"]} for r in replays]
        suffix = "" if k == 1 else f", every {k}th re-decode"
        policies = [("raw", None)] + [(a, float(g)) for g in args.gaps.split(",") for a in args.ages.split(",")]
        for a, gap in policies:
            age = None if a in ("none", "raw") else float(a)
            name = ("raw (before)" if a == "raw" else f"steady, age_s={a}, min_gap_s={gap:g}") + suffix
            factory = RawTail if a == "raw" else (lambda age=age, gap=gap: SteadyTail(age_s=age, min_gap_s=gap))
            results[name] = evaluate(lines, reps, factory, ref)
            print(json.dumps({name: results[name]}), flush=True)
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(
            {"command": "python bench/partial_policy.py " + " ".join(sys.argv[1:]), "replays": _relative(args.replays),
             "note": "simulated wall clock from recorded re-decode times and costs (see the docstring)",
             "loadavg": [round(x, 1) for x in __import__("os").getloadavg()],
             "policies": results}, indent=1))
        plot_curve(results, Path(args.out).with_suffix(".png"))


def plot_curve(results: dict, path: Path) -> None:
    """Age of the words shown (partial p50 and p95) against erasure, one curve per ``min_gap_s``
    (the points are the ``age_s`` values) with the raw tail alone: ``path`` (PNG). Issue 40.2's
    target (p95 <= 1.1 s, p50 <= 0.7 s, erasure <= 0.3) is drawn as a box."""
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    curves: dict[str, list] = {}
    for name, r in results.items():
        m = re.match(r"steady, age_s=([^,]+), min_gap_s=([0-9.]+)$", name)
        if m:
            curves.setdefault(m.group(2), []).append((r["erasure"], r["partial_p95"], r["partial_p50"], m.group(1)))
        elif name == "raw (before)":
            ax.plot([r["erasure"]], [r["partial_p95"]], "kx", label="raw tail (p95)")
    for gap, pts in curves.items():
        pts.sort()
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"min_gap_s={gap}: p95")
        ax.plot([p[0] for p in pts], [p[2] for p in pts], "s--", color=line.get_color(), label=f"min_gap_s={gap}: p50")
        for e, p95, _p50, age in pts:
            ax.annotate(f"age_s={age}", (e, p95), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.add_patch(plt.Rectangle((0, 0), 0.3, 1.1, fill=False, ls=":", color="green"))
    ax.set(xlabel="erasure (words taken back per final word)", ylabel="age of the words shown (s)",
           title="Steady tail: age of the words shown against erasure (replayed)", xlim=(0, 0.8))
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
