"""Hotwords on the built-in model (issue 28): recall of rare words, WER of the rest, step time.

Own set: :data:`SENTENCES` (32 sentences, 44 rare words: people's names from several
languages, invented product names, technical terms), rendered by espeak-ng in
:data:`VOICES` (one voice per sentence, in turn), each clip decoded in one pass as a
completed line is (``MoonshineModel.transcribe`` with the line's 0.2 s of end silence),
with no list and with :data:`RARE` as the list, for each boost in ``--boosts``:

* recall: share of the rare words' occurrences that appear in the text exactly as
  written (case-sensitive, whole word);
* WER of the other words: errors of jiwer's alignment on the lower-cased, punctuation-free
  texts, counting only reference words that are not rare words (and insertions not next
  to one), over the number of those words;
* identity: ``tests/speech.py``'s five ordinary sentences with an unrelated list of 100
  words (:func:`unrelated_words`): the token ids must be the same as with no list;
* step time: ``--time-runs`` alternating child processes decode the same clips with the
  code of ``--before-rev`` (exported with ``git archive``: today's decoder), and this
  tree with 0 and with 500 hotwords; median milliseconds per decoder run and per emitted
  token over clips (a decode that gives a steered match back runs the decoder more), the
  decoder runs counted (deterministic), and the microseconds of one biased choice
  (``Biasing.choose``) against one plain ``argmax`` over the 32,768 logits.

    python bench/hotwords.py --out bench/results/hotwords

``--readings`` measures the line path instead (issue 48.1): ``captioner transcribe`` -- every
line read as cut, framed and retimed, the surest reading kept -- of clips of nine names each,
espeak-ng and neural voices, with no list, the clip's list, another clip's list and the
unrelated list, by ``--before-rev``'s code and this tree side by side
(:mod:`bench.hotword_readings`)::

    python bench/hotwords.py --readings --before-rev HEAD --out bench/results/hotwords_readings

Prints JSON and writes ``OUT.json``; records ``os.getloadavg()`` (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

VOICES = ("en-us", "en-gb", "en-gb-scotland", "en-029")
SENTENCES = [
    "Please deploy Xylophorix on OpenShift before Thursday.",
    "Then call Siobhan and ask about the Kubernetes upgrade.",
    "Doctor Okonkwo will review the Nakamura contract tomorrow.",
    "Xiaoling moved the PostgreSQL database to the new cluster.",
    "Our Terraform scripts broke after the last Quantaloop release.",
    "Ask Szczepanski whether the Grafana dashboard is ready.",
    "The Zentrivo team wants Prometheus alerts on every server.",
    "Aoife and Ravindran presented the Brightlyne roadmap.",
    "We tested Istio with the Veltrona gateway last week.",
    "Kowalczyk said the Ansible playbook needs one more review.",
    "Ngozi will demo Kryptalis to the board on Monday.",
    "The Elasticsearch index grew after Bjornsson added new logs.",
    "Ferreira prefers Nimbusoft for the customer portal.",
    "Yamaguchi found a bug in the WebAssembly build.",
    "Send the Oravelle invoice to Lindqvist in Stockholm.",
    "Padraig wrote a Dockerfile for the Pyxora service.",
    "The Trellisync app crashed during the Tiihonen interview.",
    "Oyelaran will lead the Redis migration next quarter.",
    "Zuberi booked a flight to Nairobi for the Kafka summit.",
    "Abernathy approved the budget for Quantaloop.",
    "Siobhan asked Okonkwo to check the nginx logs.",
    "The Xylophorix demo runs on Kubernetes and Terraform.",
    "Mbeki and Xiaoling will visit the Zentrivo office.",
    "Please update the OAuth settings before Veltrona goes live.",
    "Lindqvist thinks Brightlyne is too expensive.",
    "Ravindran rewrote the Grafana plugin in one afternoon.",
    "Nakamura and Kowalczyk signed the Kryptalis agreement.",
    "We moved the Pyxora backups from PostgreSQL to Redis.",
    "Tiihonen reported that Istio slowed down the requests.",
    "Aoife will present Trellisync at the Ansible meetup.",
    "Ferreira and Ngozi reviewed the Nimbusoft contract.",
    "Bjornsson deployed Oravelle with OpenShift on Friday.",
]
RARE = ["Xylophorix", "OpenShift", "Siobhan", "Kubernetes", "Okonkwo", "Nakamura", "Xiaoling", "PostgreSQL",
        "Terraform", "Quantaloop", "Szczepanski", "Grafana", "Zentrivo", "Prometheus", "Aoife", "Ravindran",
        "Brightlyne", "Istio", "Veltrona", "Kowalczyk", "Ansible", "Ngozi", "Kryptalis", "Elasticsearch",
        "Bjornsson", "Ferreira", "Nimbusoft", "Yamaguchi", "WebAssembly", "Oravelle", "Lindqvist", "Padraig",
        "Dockerfile", "Pyxora", "Trellisync", "Tiihonen", "Oyelaran", "Redis", "Zuberi", "Kafka", "Abernathy",
        "nginx", "Mbeki", "OAuth"]
_SYLLABLES = ("ka", "zo", "tri", "vel", "mon", "qua", "rix", "dor", "lyn", "pex", "sul", "gan", "bro", "fen",
              "xi", "mur", "tal", "ov", "ber", "nik")


def synthetic_words(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct invented words of 2-4 syllables, capitalised (a long list, no real words)."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen = set()
    while len(out) < n:
        w = "".join(rng.choice(_SYLLABLES, int(rng.integers(2, 5)))).capitalize()
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def unrelated_words() -> list[str]:
    """100 hotwords none of which is in ``tests/speech.py``'s sentences: the rare words and invented ones."""
    return RARE + synthetic_words(100 - len(RARE), seed=11)


def clip(text: str, voice: str, folder: Path) -> np.ndarray:
    """espeak-ng speech of ``text`` in ``voice`` at 16 kHz ``[n] float32``, with 0.3 s of silence
    before (a line's pre-roll: Moonshine reads a clip that starts abruptly as nothing) and 0.2 s after."""
    import soundfile as sf
    import soxr

    path = folder / "clip.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", "160", "-w", str(path), text], check=True)
    audio, rate = sf.read(path, dtype="float32")
    audio = soxr.resample(audio, rate, 16000).astype(np.float32)
    return np.concatenate([np.zeros(4800, np.float32), audio, np.zeros(3200, np.float32)])


def _norm(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split()


def score(refs: list[str], hyps: list[str]) -> dict:
    """Hotword recall (exact, case-sensitive, whole word) and WER of the other words."""
    import jiwer

    found = total = 0
    errors = others = 0
    rare_norm = {w.lower() for w in RARE}
    for ref, hyp in zip(refs, hyps):
        for word in RARE:
            pat = re.compile(rf"(?<![\w]){re.escape(word)}(?![\w])")
            n = len(pat.findall(ref))
            if n:
                total += n
                found += min(n, len(pat.findall(hyp)))
        r, h = _norm(ref), _norm(hyp)
        rare_at = [w in rare_norm for w in r]
        others += sum(1 for x in rare_at if not x)
        if not h:
            errors += sum(1 for x in rare_at if not x)
            continue
        out = jiwer.process_words(" ".join(r), " ".join(h))
        for chunk in out.alignments[0]:
            if chunk.type in ("substitute", "delete"):
                errors += sum(1 for i in range(chunk.ref_start_idx, chunk.ref_end_idx) if not rare_at[i])
            elif chunk.type == "insert":
                i = chunk.ref_start_idx
                near = (i > 0 and rare_at[i - 1]) or (i < len(r) and rare_at[i])
                if not near:
                    errors += chunk.hyp_end_idx - chunk.hyp_start_idx
    return dict(recall=round(found / total, 4), found=found, occurrences=total,
                other_wer=round(errors / others, 4), other_errors=errors, other_words=others)


def quality(boosts: list[float]) -> dict:
    """Decode the set with no list and with :data:`RARE` at each boost; the identity check."""
    sys.path.insert(0, str(ROOT))
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import MoonshineModel

    model = MoonshineModel(default_model_dir())
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        clips = [clip(s, VOICES[i % len(VOICES)], Path(tmp)) for i, s in enumerate(SENTENCES)]
        sys.path.insert(0, str(ROOT / "tests"))
        from speech import SENTENCES as ORDINARY

        plain_clips = [clip(s, "en-us", Path(tmp)) for s in ORDINARY]
    runs = {"none": None, **{f"boost {b:g}": model.hotwords(RARE, b) for b in boosts}}
    for name, tree in runs.items():
        t0 = time.perf_counter()
        hyps = [model.tokenizer.decode(model.generate(c, bias=tree)) for c in clips]
        out[name] = dict(score(SENTENCES, hyps), seconds=round(time.perf_counter() - t0, 1), texts=hyps)
    unrelated = {}
    for b in boosts:
        tree = model.hotwords(unrelated_words(), b)
        same = [model.generate(c) == model.generate(c, bias=tree) for c in plain_clips]
        unrelated[f"boost {b:g}"] = dict(identical_clips=int(sum(same)), clips=len(same))
    out["unrelated_100_on_ordinary_speech"] = unrelated
    return out


def count_decoder_runs(model) -> list[int]:
    """Count ``model``'s decoder runs from now on: returns ``[n]``, ``n`` going up by one per
    ``run_with_iobinding`` call (set it back to 0 to count a stretch)."""
    runs = [0]
    real = model.decoder.run_with_iobinding

    def counted(*a, **k):
        runs[0] += 1
        return real(*a, **k)

    model.decoder.run_with_iobinding = counted
    return runs


def timing_child(n_words: int, repeats: int) -> dict:
    """(In a child, with this file's tree or an older one on the path.) Per-clip median ms per
    decoder run and per emitted token, decoding the same clips ``repeats`` times."""
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import MoonshineModel

    model = MoonshineModel(default_model_dir())
    tree = model.hotwords(synthetic_words(n_words)) if n_words else None
    runs = count_decoder_runs(model)
    sys.path.insert(0, str(ROOT / "tests"))
    from speech import SENTENCES as ORDINARY

    spent = [0.0, 0]  # seconds inside the biased choice, calls
    if tree is not None:
        from captioner.asr.moonshine.hotwords import Biasing

        plain_choose = Biasing.choose

        def timed(self, *a):
            t0 = time.perf_counter()
            try:
                return plain_choose(self, *a)
            finally:
                spent[0] += time.perf_counter() - t0
                spent[1] += 1

        Biasing.choose = timed
    per_run, per_token, clip_runs = [], [], []
    total_runs = total_tokens = 0
    with tempfile.TemporaryDirectory() as tmp:
        clips = [clip(s, VOICES[i % len(VOICES)], Path(tmp)) for i, s in enumerate(ORDINARY + SENTENCES[:5])]
    for c in clips:
        hidden = model.encode(c)
        budget = model.max_tokens(len(c))
        best = None
        for _ in range(repeats):
            runs[0] = 0
            t0 = time.perf_counter()
            tokens = model.decode(hidden, budget, tree) if tree is not None else model.decode(hidden, budget)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        per_run.append(1000 * best / max(1, runs[0]))
        per_token.append(1000 * best / max(1, len(tokens) + 1))
        total_runs += runs[0]
        clip_runs.append(runs[0])
        total_tokens += len(tokens) + 1
    z = np.random.default_rng(0).standard_normal(32768).astype(np.float32)
    t0 = time.perf_counter()
    for _ in range(1000):
        int(np.argmax(z))
    argmax_us = (time.perf_counter() - t0) * 1000
    return dict(ms_per_run=float(np.median(per_run)), ms_per_token=float(np.median(per_token)),
                decoder_runs=total_runs, tokens=total_tokens, argmax_us=argmax_us, clip_runs=clip_runs,
                choose_us=1e6 * spent[0] / spent[1] if spent[1] else 0.0)


def _export(before_rev: str, folder: Path) -> Path:
    """``before_rev``'s tree under ``folder/before``, with this script as ``bench/hotwords_child.py``."""
    before = folder / "before"
    before.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", before_rev], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
    (before / "bench").mkdir(exist_ok=True)
    (before / "bench" / "hotwords_child.py").write_text(Path(__file__).read_text())
    return before


def before_quality(before_rev: str, boost: float) -> dict:
    """The set decoded by ``before_rev``'s code (a child process) at ``boost``: the "before" column."""
    with tempfile.TemporaryDirectory() as tmp:
        before = _export(before_rev, Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(before), OMP_NUM_THREADS="1")
        res = subprocess.run([sys.executable, str(before / "bench" / "hotwords_child.py"), "--quality-only",
                              "--boosts", f"{boost:g}"], env=env, check=True, capture_output=True, text=True,
                             cwd=before)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return dict(rev=subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", before_rev], check=True,
                                   capture_output=True, text=True).stdout.strip(), **out)


def timing(before_rev: str, rounds: int, repeats: int) -> dict:
    """Alternate child processes: ``before_rev`` with no list, this tree with 0 and 500 hotwords."""
    with tempfile.TemporaryDirectory() as tmp:
        before = _export(before_rev, Path(tmp))
        kinds = {"before (0 words)": (before, 0), "after, 0 words": (ROOT, 0), "after, 500 words": (ROOT, 500)}
        samples: dict[str, list[dict]] = {k: [] for k in kinds}
        for _ in range(rounds):
            for name, (tree, n) in kinds.items():
                script = tree / "bench" / ("hotwords_child.py" if tree == before else "hotwords.py")
                env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
                res = subprocess.run([sys.executable, str(script), "--child", str(n), "--repeats", str(repeats)],
                                     env=env, check=True, capture_output=True, text=True, cwd=tree)
                samples[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
    out = {k: dict(ms_per_run=round(float(np.median([s["ms_per_run"] for s in v])), 3),
                   ms_per_token=round(float(np.median([s["ms_per_token"] for s in v])), 3),
                   decoder_runs=v[0].get("decoder_runs"), tokens=v[0].get("tokens"),
                   choice_us=round(float(np.median([s.get("choose_us") or s.get("argmax_us", 0) for s in v])), 1),
                   ordinary_runs=sum(v[0].get("clip_runs", [0] * 5)[:5]),
                   rounds=[{kk: round(vv, 3) for kk, vv in s.items() if kk != "clip_runs"} for s in v])
           for k, v in samples.items()}
    out["extra_decoder_runs_500"] = round(out["after, 500 words"]["decoder_runs"]
                                          / out["after, 0 words"]["decoder_runs"], 3)
    out["extra_decoder_runs_500_ordinary_only"] = round(out["after, 500 words"]["ordinary_runs"]
                                                        / max(1, out["after, 0 words"]["ordinary_runs"]), 3)
    base = out["before (0 words)"]["ms_per_run"]
    out["ratio_500_vs_before_per_run"] = round(out["after, 500 words"]["ms_per_run"] / base, 3)
    out["ratio_500_vs_before_per_token"] = round(out["after, 500 words"]["ms_per_token"]
                                                 / out["before (0 words)"]["ms_per_token"], 3)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boosts", default="2,4,6", help="comma-separated boosts to try (default 2,4,6)")
    p.add_argument("--before-rev", default="main", help="git revision of today's decoder (default main)")
    p.add_argument("--time-runs", type=int, default=3, help="alternating timing rounds (default 3)")
    p.add_argument("--repeats", type=int, default=3, help="decodes of each clip per timing round (best kept)")
    p.add_argument("--skip-quality", action="store_true")
    p.add_argument("--before-boost", type=float, default=6.0,
                   help="also decode the set with --before-rev's code at this boost (0: skip)")
    p.add_argument("--quality-only", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help="write OUT.json")
    p.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--readings", action="store_true",
                   help="the line path (captioner transcribe, every reading) on clips of names "
                        "(bench/hotword_readings.py)")
    p.add_argument("--clips", default="", help="with --readings: comma-separated clip names (default: all)")
    args = p.parse_args()
    if args.readings:
        sys.path.insert(0, str(ROOT))
        from bench.hotword_readings import run

        run(args.before_rev, [n for n in args.clips.split(",") if n], ("none", "names", "wrong", "unrelated"),
            args.out)
        return
    if args.child is not None:
        print(json.dumps(timing_child(args.child, args.repeats)))
        return
    if args.quality_only:
        print(json.dumps(quality([float(b) for b in args.boosts.split(",")])))
        return
    result: dict = dict(load_before=os.getloadavg(), voices=VOICES, sentences=len(SENTENCES), rare_words=len(RARE))
    if not args.skip_quality:
        if args.before_boost:
            result["quality_before"] = before_quality(args.before_rev, args.before_boost)
        result["quality"] = quality([float(b) for b in args.boosts.split(",")])
    if args.time_runs:
        result["step_time"] = timing(args.before_rev, args.time_runs, args.repeats)
    result["load_after"] = os.getloadavg()
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out + ".json").write_text(text + "\n")


if __name__ == "__main__":
    main()
