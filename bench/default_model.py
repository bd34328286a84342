"""Speed of the embedded default model (Moonshine base-en): the shipped graphs against captioner's.

Two parts, before and after side by side in one invocation (both see the same machine load):

* ``--part model`` (in this process, one intra-op thread each): the shipped ``.ort`` graphs
  run directly with onnxruntime against the prepared ONNX form
  (``captioner/asr/moonshine/prepare.py``) -- encoder for 4 s of audio, the first decoder
  step (no cache) and a decoder step with the KV cache (medians), greedy tokens identical on
  every clip, the preparation's time and disk, resident memory of the loaded model, and
  batching two equal-length clips in one call (B=2) against two calls (B=1);
* ``--part transcribe``: ``captioner transcribe`` of the benchmark meeting
  (``bench/meeting_audio.py``) in a child process for the code of ``--before-rev`` (exported
  from git) and for the working tree: wall time, real-time factor, peak RSS and WER.

    python bench/default_model.py --minutes 20 --out bench/results/default_model_20min

Prints JSON and writes ``OUT.json`` and ``OUT.png``.
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def greedy(enc, dec, audio: np.ndarray, max_tokens: int, batch: int = 1):
    """Plain greedy decoding (numpy in/out) of ``batch`` copies of ``audio``; returns
    (tokens of row 0, encoder s, first step s, later step times s)."""
    x = np.repeat(audio[None].astype(np.float32), batch, 0)
    t0 = time.perf_counter()
    hidden = enc.run(None, {"input_values": x})[0]
    t_enc = time.perf_counter() - t0
    past = {i.name: np.zeros((batch, 8, 0, 52), np.float32) for i in dec.get_inputs() if i.name.startswith("past")}
    names = [o.name for o in dec.get_outputs()]
    last = np.ones((batch, 1), np.int64)
    tokens, steps, first = [], [], 0.0
    for step in range(max_tokens):
        t0 = time.perf_counter()
        out = dec.run(None, {"input_ids": last, "encoder_hidden_states": hidden, **past,
                             "use_cache_branch": np.array([step > 0])})
        dt = time.perf_counter() - t0
        if step == 0:
            first = dt
        else:
            steps.append(dt)
        last = out[0][:, -1].argmax(-1).reshape(batch, 1).astype(np.int64)
        if int(last[0, 0]) == 2:
            break
        tokens.append(int(last[0, 0]))
        for name, value in zip(names[1:], out[1:]):
            if step == 0 or ".decoder." in name:
                past[name.replace("present", "past_key_values")] = value
    return tokens, t_enc, first, steps


def part_model(clips: list[np.ndarray]) -> dict:
    import onnxruntime as ort

    from captioner.asr.moonshine import prepare as prep
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import MoonshineModel
    from captioner.asr.moonshine.ort_options import session_options

    src = default_model_dir()
    with tempfile.TemporaryDirectory() as cache:
        t0 = time.perf_counter()
        prepared = prep.prepare(src, cache)
        prepare_s = time.perf_counter() - t0
        disk_mb = sum(p.stat().st_size for p in Path(prepared.cache_dir).iterdir()) / 1e6
        out: dict = {"prepare_s": round(prepare_s, 2), "prepared_disk_mb": round(disk_mb, 1),
                     "shipped_disk_mb": round(sum((src / f"{g}.ort").stat().st_size for g in prep.GRAPHS) / 1e6, 1)}
        four = np.concatenate(clips)[: 4 * 16000]
        for label, paths in (("shipped_ort", [str(src / f"{g}.ort") for g in prep.GRAPHS]),
                             ("prepared_onnx", [prepared.encoder, prepared.decoder])):
            r0 = rss_mb()
            enc, dec = (ort.InferenceSession(p, session_options(), providers=["CPUExecutionProvider"]) for p in paths)
            encs = [greedy(enc, dec, four, 0)[1] for _ in range(7)]
            firsts, steps, toks = [], [], []
            for clip in clips:
                t, _, f, s = greedy(enc, dec, clip, int(np.ceil(len(clip) / 16000 * 6.5)))
                toks.append(t)
                firsts.append(f)
                steps += s
            loaded = rss_mb() - r0  # after decoding: the mapped weights are resident by now
            b2 = {}
            for batch in (1, 2):
                per_tok = []
                for clip in clips[:4]:
                    t, te, f, s = greedy(enc, dec, clip, int(np.ceil(len(clip) / 16000 * 6.5)), batch)
                    per_tok.append((te + f + sum(s)) / max(1, len(t)) / batch)
                b2[f"B{batch}_ms_per_token_per_clip"] = round(1000 * float(np.median(per_tok)), 2)
            out[label] = {
                "encoder_4s_ms": round(1000 * float(np.median(encs)), 1),
                "first_step_ms": round(1000 * float(np.median(firsts)), 1),
                "step_ms_median": round(1000 * float(np.median(steps)), 2),
                "step_ms_p95": round(1000 * float(np.percentile(steps, 95)), 2),
                "steps": len(steps),
                "rss_after_decoding_mb": round(loaded, 1),
                **b2,
            }
            out[label]["_tokens"] = toks
            del enc, dec
        same = [a == b for a, b in zip(out["shipped_ort"].pop("_tokens"), out["prepared_onnx"].pop("_tokens"))]
        out["tokens_identical_clips"] = f"{sum(same)}/{len(same)}"
        m = MoonshineModel(src, prepared=prepared)
        t0 = time.perf_counter()
        text = [m.transcribe(c) for c in clips]
        out["captioner_loop_s_per_audio_s"] = round((time.perf_counter() - t0) / (sum(map(len, clips)) / 16000), 4)
        out["sample_text"] = text[0]
    return out


def strip_stamps(text: str) -> str:
    """The words of a ``--format txt`` transcript: its ``[hh:mm:ss]`` line stamps removed."""
    import re

    return re.sub(r"^\[[\d:]+\]\s*", "", text, flags=re.M)


def part_transcribe(wav: Path, ref: str, before_rev: str, tmp: Path) -> list[dict]:
    import jiwer

    from bench.latency import export_rev
    from tests.speech import normalize_words

    audio_s = float(__import__("soundfile").info(str(wav)).duration)
    before = export_rev(before_rev, Path(tempfile.mkdtemp(dir=tmp)))
    results = []
    for name, code in (("before", before), ("after", ROOT)):
        out = tmp / f"{name}.txt"
        env = dict(os.environ, PYTHONPATH=str(code), CAPTIONER_DATA_DIR=str(tmp / f"data-{name}"))
        cmd = [sys.executable, "-m", "captioner", "transcribe", str(wav), "--format", "txt", "-o", str(out)]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=str(code), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err = proc.stderr.read().decode(errors="replace")
        if status != 0:
            raise SystemExit(f"{name} transcribe failed: {err[-2000:]}")
        hyp = strip_stamps(out.read_text(encoding="utf-8"))
        results.append({"config": name, "code": f"git {before_rev}" if name == "before" else "working tree",
                        "wall_s": round(wall, 1), "rtf": round(wall / audio_s, 3),
                        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "max_rss_mb": round(usage.ru_maxrss / 1024, 1),
                        "wer": round(jiwer.wer(normalize_words(ref), normalize_words(hyp)), 4)})
        print(json.dumps(results[-1]), file=sys.stderr)
    return results


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    m = report.get("model")
    if m:
        keys = ("encoder_4s_ms", "first_step_ms", "step_ms_median")
        x = np.arange(len(keys))
        for i, label in enumerate(("shipped_ort", "prepared_onnx")):
            axes[0].bar(x + 0.38 * i, [m[label][k] for k in keys], 0.38, label=label)
        axes[0].set_xticks(x + 0.19, keys)
        axes[0].set(title="model calls, one thread (ms)", yscale="log")
        axes[0].legend()
    t = report.get("transcribe")
    if t:
        axes[1].bar([r["config"] for r in t], [r["rtf"] for r in t], color=["grey", "tab:green"])
        for i, r in enumerate(t):
            axes[1].text(i, r["rtf"], f"RTF {r['rtf']}\nWER {100 * r['wer']:.1f} %\n{r['max_rss_mb']:.0f} MB",
                         ha="center", va="bottom", fontsize=8)
        axes[1].set(title=f"captioner transcribe, {report['minutes']:g}-minute meeting", ylabel="real-time factor")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=2.0, help="length of the meeting for --part transcribe")
    ap.add_argument("--part", default="model,transcribe", help="comma list of: model, transcribe")
    ap.add_argument("--before-rev", default="3e6d95f", help="git revision of the 'before' transcribe run")
    ap.add_argument("--out", default="bench/results/default_model", help="output path without suffix")
    args = ap.parse_args()
    from bench.meeting_audio import make_meeting
    from captioner.audio.fileio import load_audio

    report: dict = {"command": "python bench/default_model.py " + " ".join(sys.argv[1:]), "minutes": args.minutes,
                    "cpu_count": os.cpu_count(), "loadavg_before": os.getloadavg(),
                    "note": "2-core development machine shared with other work: timings are noisy"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        wav = tmp / "meeting.wav"
        utts = make_meeting(wav, args.minutes, seed=10)
        parts = args.part.split(",")
        if "model" in parts:
            audio = load_audio(str(wav), 16000)
            clips = [audio[int(u.start * 16000) : int(u.end * 16000) + 4000] for u in utts[:12]]
            report["model"] = part_model(clips)
            print(json.dumps(report["model"]), file=sys.stderr)
        if "transcribe" in parts:
            report["transcribe"] = part_transcribe(wav, " ".join(u.text for u in utts), args.before_rev, tmp)
    report["loadavg_after"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    plot(report, out.with_suffix(".png"))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
