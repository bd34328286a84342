"""Which reading of a completed line to keep: replay the lines ``captioner transcribe`` cuts (issue 40.1).

The final text of a line is decided by :class:`captioner.asr.moonshine.line_framing.LineReader`. This
script records the clips the file path cuts from ``bench/voice_sets.py``'s sets and from the
meeting of ``bench/meeting_audio.py`` (the real ``captioner transcribe``, its line pool
patched to keep each clip), then reads every clip with each candidate policy and scores the
joined text (WER, normalised as ``bench/voice_sets.py`` does) and the CPU seconds it took:

* ``two``: the two framings of issue 27 (``FURTHER_RATES = ()``);
* ``rates=A+B+..``: ``LineReader`` with ``FURTHER_RATES = (A, B, ..)``: a line both
  framings leave unsure is also read played at those rates, the surest reading kept;
* ``beam=K``: the two framings, each read with a beam search of width ``K`` (score: sum of
  token log-probabilities over the length, end token included) instead of greedily;
* ``frames``: four framings (silence before/after: 0/0, 0.25/0.6, 0.1/0.3, 0.5/1.0 s).

    python bench/final_reading.py --inputs set1,set2,set3,meeting20 \\
        --policies two,rates=0.9+1.1,rates=0.9+1.1+1.2,beam=3,frames --out bench/results/final_reading

Writes ``OUT.json``. The clips are the same for every policy, so differences are the policy's.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def record_lines(name: str, tmp: Path) -> tuple[str, list[tuple[np.ndarray, bool]]]:
    """Reference text and the clips ``captioner transcribe`` reads of input ``name``
    (``setN`` of ``bench/voice_sets.py`` or ``meetingM``: an M-minute meeting)."""
    from bench import voice_sets as vs
    from bench.meeting_audio import make_meeting
    from captioner import cli
    from captioner.asr.moonshine import line_pool

    wav = tmp / f"{name}.wav"
    if name.startswith("meeting"):
        ref = " ".join(u.text for u in make_meeting(wav, float(name[7:] or 20)))
    else:
        ref = " ".join(u["text"] for u in vs.render_set(name, wav))
    clips: list = []
    submit = line_pool.LinePool.submit

    def keep(self, clip, at_end=False):
        clips.append((np.array(clip, np.float32), bool(at_end)))
        return submit(self, clip, at_end)

    line_pool.LinePool.submit = keep
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cli.main(["transcribe", str(wav), "--format", "txt", "--speakers", "off"])
    finally:
        line_pool.LinePool.submit = submit
    return ref, clips


def beam_reader(model, width: int):
    """``transcribe_scored``-like reading with a beam of ``width`` (decoder runs on numpy feeds)."""
    from captioner.asr.moonshine.tokenizer import END, START

    dec = model.decoder
    names = [o.name.replace("present", "past_key_values") for o in dec.get_outputs()[1:]]
    self_names = [n for n in names if ".decoder." in n]

    def log_softmax(x):
        x = x - x.max(-1, keepdims=True)
        return x - np.log(np.exp(x).sum(-1, keepdims=True))

    def read(audio, **_):
        if len(audio) < 1600:
            return "", 0.0
        hidden, budget = model.encode(audio), model.max_tokens(len(audio))
        feeds = {"encoder_hidden_states": hidden, "input_ids": np.array([[START]], np.int64),
                 "use_cache_branch": np.array([False]), **{n: model._empty for n in model._past}}
        out = dec.run(None, feeds)
        cross = {n: v for n, v in zip(names, out[1:]) if ".encoder." in n}
        cache = [v for n, v in zip(names, out[1:]) if ".decoder." in n]
        beams, done = [([], [], cache, out[0][0, -1])], []
        for _step in range(budget):
            cands = []
            for bi, (toks, lps, _c, logits) in enumerate(beams):
                lp = log_softmax(logits)
                cands += [(sum(lps) + float(lp[t]), bi, int(t), float(lp[t])) for t in np.argsort(-lp)[:width]]
            cands.sort(reverse=True)
            grown = []
            for _s, bi, t, lp in cands:
                toks, lps, c, _ = beams[bi]
                if t == END:
                    done.append((toks, lps + [lp]))
                else:
                    grown.append((toks + [t], lps + [lp], c))  # c: this beam's cache, a batch of 1
                if len(grown) >= width:
                    break
            if not grown or len(done) >= width:
                break
            n = len(grown)
            feeds = {"encoder_hidden_states": np.repeat(hidden, n, 0), "use_cache_branch": np.array([True]),
                     "input_ids": np.array([[g[0][-1]] for g in grown], np.int64),
                     **{k: np.repeat(v, n, 0) for k, v in cross.items()},
                     **{k: np.concatenate([g[2][i] for g in grown]) for i, k in enumerate(self_names)}}
            out = dec.run(None, feeds)
            new = [v for k, v in zip(names, out[1:]) if ".decoder." in k]
            beams = [(g[0], g[1], [x[i:i + 1] for x in new], out[0][i, -1]) for i, g in enumerate(grown)]
        done = done or [(b[0], b[1]) for b in beams]
        toks, lps = max(done, key=lambda d: sum(d[1]) / len(d[1]))
        return model.tokenizer.decode(toks), float(np.mean(lps))

    return read


def policy_reader(model, policy: str):
    """``read(clip, at_end) -> text`` of ``policy`` (see the module docstring)."""
    from captioner.asr.moonshine import line_framing as lf
    from captioner.asr.moonshine.repeats import collapse_repeats

    if policy == "two" or policy.startswith("rates="):
        rates = () if policy == "two" else tuple(float(r) for r in policy[6:].split("+"))

        def read(clip, at_end):
            old, lf.FURTHER_RATES = lf.FURTHER_RATES, rates
            try:
                return lf.LineReader(model).read(clip, at_end)
            finally:
                lf.FURTHER_RATES = old
        return read
    if policy.startswith("beam="):
        scored = beam_reader(model, int(policy[5:]))
    elif policy == "frames":
        scored = model.transcribe_scored
    else:
        raise SystemExit(f"unknown policy {policy!r}")
    frames = [(0.0, 0.0), (0.25, 0.6)] if policy != "frames" else [(0, 0), (0.25, 0.6), (0.1, 0.3), (0.5, 1.0)]

    def read_frames(clip, at_end):
        sr = lf.SAMPLE_RATE
        if at_end:
            clip = np.concatenate([clip, np.zeros(int(lf.END_PAD_S * sr), np.float32)])
        readings = []
        for i, (lead, tail) in enumerate(frames):
            pad = [np.zeros(int(lead * sr), np.float32), clip, np.zeros(int(tail * sr), np.float32)]
            text, score = scored(np.concatenate(pad))
            readings.append((text.strip(), score))
            if i == 0 and readings[0][0] and score >= lf.SURE_LOGPROB:
                break
        return collapse_repeats(lf.surest(readings, len(clip), sr)[0])
    return read_frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="set1,set2,set3,meeting20")
    ap.add_argument("--policies", default="two,rates=0.9+1.1,rates=0.9+1.1+1.2,beam=3,frames")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    from bench.voice_sets import wer
    from captioner.asr.moonshine.files import default_model_dir
    from captioner.asr.moonshine.model import shared_model

    model = shared_model(default_model_dir())
    result: dict = {"command": "python bench/final_reading.py " + " ".join(sys.argv[1:]),
                    "loadavg_start": [round(x, 2) for x in os.getloadavg()], "inputs": {}}
    with tempfile.TemporaryDirectory() as tmpd:
        for name in args.inputs.split(","):
            ref, clips = record_lines(name, Path(tmpd))
            row = result["inputs"][name] = {"lines": len(clips), "policies": {}}
            for policy in args.policies.split(","):
                read = policy_reader(model, policy)
                t0 = time.process_time()
                text = " ".join(re.sub(r"\s+", " ", read(c, e)).strip() for c, e in clips)
                cpu = time.process_time() - t0
                row["policies"][policy] = {"wer": wer(ref, text), "cpu_s": round(cpu, 1),
                                           "cpu_ms_per_line": round(1000 * cpu / max(1, len(clips)))}
                print(json.dumps({name: {policy: row["policies"][policy]}}), flush=True)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.out:
        Path(args.out).with_suffix(".json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
