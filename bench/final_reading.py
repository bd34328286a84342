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

For issue 48.2, :func:`cached_readings` reads every line of an input in all five ways once
(:func:`read_all`: text, token ids, per-token log-probabilities) and caches them on disk, so
``bench/reading_choice.py`` scores choices among the readings offline; :func:`input_audio` also
gives the natural-voice sets and real speech.
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


#: Real recorded speech (``beckett``: moonshine-cpp's ``test-data/beckett.wav``; ``cities`` and
#: ``endgame``: moonshine-voice's ``assets``): reference texts where one is known. Neither
#: package ships a transcript; ``cities`` is the opening of Dickens' *A Tale of Two Cities*
#: (public domain) as far as the 44 s recording reads it, ``beckett`` the 12-word line of
#: *Worstward Ho* it reads; ``endgame`` (a two-actor scene of Beckett's *Endgame*) has none
#: here: its readings are recorded, its WER is not scored.
REAL_REFERENCES: dict[str, str | None] = {
    "beckett": "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.",
    "cities": "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
              "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
              "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
              "of despair, we had everything before us, we had nothing before us, we were all going direct "
              "to Heaven, we were all going direct the other way -- in short, the period was so far like the "
              "present period, that some of its noisiest authorities insisted on its being received, for "
              "good or for evil, in the superlative degree of comparison only.",
    "endgame": None,
}


def input_audio(name: str, tmp: Path) -> tuple[str | None, Path]:
    """Reference text (None where unknown) and a 16 kHz WAV of input ``name``: ``setN`` of
    ``bench/voice_sets.py``, ``meetingM`` (an M-minute meeting of ``bench/meeting_audio.py``),
    a set of ``bench/natural_voices.py`` (``nat4``, ..., ``nat_meeting``: 20 minutes; cached,
    rendered once if missing), ``natfresh`` (:func:`fresh_natural`), ``quick`` (the espeak-ng
    quick-turns set of ``bench/speakers.py``) or real speech (:data:`REAL_REFERENCES`)."""
    wav = tmp / f"{name}.wav"
    if name.startswith("meeting"):
        from bench.meeting_audio import make_meeting

        return " ".join(u.text for u in make_meeting(wav, float(name[7:] or 20))), wav
    if name == "natfresh":
        return fresh_natural(wav), wav
    if name in REAL_REFERENCES or name.startswith("nat") or name == "quick":
        from bench.speakers import render

        wav, utts = render("one" if name == "beckett" else name, tmp, 20)
        ref = REAL_REFERENCES[name] if name in REAL_REFERENCES else " ".join(u["text"] for u in utts)
        return ref, wav
    from bench import voice_sets as vs

    return " ".join(u["text"] for u in vs.render_set(name, wav)), wav


def fresh_natural(wav: Path, minutes: float = 5.0, seed: int = 46) -> str:
    """Write ``natfresh`` to ``wav``: the first ``minutes`` of ``bench/natural_voices.py``'s
    meeting generator with another ``seed`` (other voices, speeds, pauses and templated
    sentences than ``nat_meeting``), cached beside the natural-voice sets; returns its text."""
    import shutil

    import soundfile as sf

    from bench import natural_voices as nv

    base = nv.cache_dir() / f"natfresh-{seed}-{minutes:g}-{nv.RECIPE.split()[0]}"
    if not base.with_suffix(".json").exists():
        gen, lines, t = nv._meeting_lines(seed), [], nv.LEAD_IN_S
        while True:
            line = next(gen)
            audio = nv._render_line(line)
            if t + len(audio) / nv.RATE > minutes * 60:
                break
            lines.append((line, audio))
            t += len(audio) / nv.RATE + line.gap
        signal, sentences = nv._assemble([x for x, _ in lines], [a for _, a in lines], 7)
        sf.write(base.with_suffix(".wav"), signal, nv.RATE, subtype="PCM_16")
        base.with_suffix(".json").write_text(json.dumps(sentences), encoding="utf-8")
    shutil.copyfile(base.with_suffix(".wav"), wav)
    return " ".join(u["text"] for u in json.loads(base.with_suffix(".json").read_text(encoding="utf-8")))


def record_lines(name: str, tmp: Path, decode: bool = True
                 ) -> tuple[str | None, list[tuple[np.ndarray, bool]], str | None]:
    """Reference text, the clips ``captioner transcribe`` reads of input ``name``
    (:func:`input_audio`) and, with ``decode``, its one-pass text (``--format txt``); without
    ``decode`` the lines are only cut (each read as ""; the VAD cuts the same lines whatever
    their text) and the text is None."""
    from concurrent.futures import Future

    from captioner import cli
    from captioner.asr.moonshine import line_pool

    ref, wav = input_audio(name, tmp)
    clips: list = []
    submit = line_pool.LinePool.submit

    def keep(self, clip, at_end=False):
        clips.append((np.array(clip, np.float32), bool(at_end)))
        if decode:
            return submit(self, clip, at_end)
        done: Future = Future()
        done.set_result("")
        return done

    line_pool.LinePool.submit = keep
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            cli.main(["transcribe", str(wav), "--format", "txt", "--speakers", "off"])
    finally:
        line_pool.LinePool.submit = submit
    return ref, clips, (out.getvalue() if decode else None)


def reading_audio(clip: np.ndarray, at_end: bool) -> list[np.ndarray]:
    """The audio of each reading of a line (``[n] float32`` 16 kHz), in the order
    :class:`~captioner.asr.moonshine.line_framing.LineReader` reads them: as cut, framed, then
    retimed at each of ``FURTHER_RATES`` (``at_end``: with ``END_PAD_S`` of silence first)."""
    from captioner.asr.moonshine import line_framing as lf

    if at_end:
        clip = np.concatenate([clip, np.zeros(int(lf.END_PAD_S * lf.SAMPLE_RATE), np.float32)])
    return [clip, lf.framed(clip), *(lf.retimed(clip, rate) for rate in lf.FURTHER_RATES)]


def read_all(model, clip: np.ndarray, at_end: bool) -> list[dict]:
    """Every reading of a line (:func:`reading_audio`), greedy and without hotwords, as the
    file path reads it: ``{"text", "ids", "lp"}`` each (``lp``: the natural-log probability of
    every token, the end token's last when it was reached; ``text`` stripped). The mean of
    ``lp`` is ``transcribe_scored``'s score."""
    out = []
    for audio in reading_audio(clip, at_end):
        lp: list[float] = []
        ids = model.generate(audio, logprobs=lp)
        out.append({"text": model.tokenizer.decode(ids).strip(), "ids": [int(i) for i in ids],
                    "lp": [round(float(x), 5) for x in lp]})
    return out


def readings_cache_key(model, clips: list[tuple[np.ndarray, bool]]) -> str:
    """Hash of what the readings of ``clips`` depend on: the clips, the framing constants and
    the prepared decoder's file name (its recipe)."""
    import hashlib

    from captioner.asr.moonshine import line_framing as lf

    h = hashlib.sha256()
    dec = model.prepared.decoder
    h.update(json.dumps([lf.FRAME_LEAD_S, lf.FRAME_TAIL_S, list(lf.FURTHER_RATES), lf.END_PAD_S,
                         Path(dec).name if isinstance(dec, str) else len(dec),
                         bool(model.prepared.int8_decoder)]).encode())
    for clip, at_end in clips:
        h.update(np.ascontiguousarray(clip, np.float32).tobytes())
        h.update(b"1" if at_end else b"0")
    return h.hexdigest()[:12]


def cached_readings(model, name: str, cache: Path, tmp: Path, check: bool = False) -> dict:
    """Input ``name``'s lines and all their readings (:func:`read_all`), decoded once and kept
    in ``cache/NAME-KEY.json`` (:func:`readings_cache_key`): ``{"ref", "lines": [{"n",
    "at_end", "readings"}], "transcribe"}``; ``transcribe`` is the one-pass text of
    ``captioner transcribe`` when ``check`` asked for it (the sanity check of the replay)."""
    ref, clips, _ = record_lines(name, tmp, decode=False)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}-{readings_cache_key(model, clips)}.json"
    text = None
    if check and not (path.exists() and json.loads(path.read_text(encoding="utf-8")).get("transcribe")):
        _, _, text = record_lines(name, tmp, decode=True)
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        data["ref"] = ref  # the reference may be newer than the readings
        if text is not None:
            data["transcribe"] = text
            path.write_text(json.dumps(data), encoding="utf-8")
        return data
    t0 = time.process_time()
    lines = [{"n": int(len(c)), "at_end": e, "readings": read_all(model, c, e)} for c, e in clips]
    data = {"name": name, "ref": ref, "lines": lines, "transcribe": text,
            "cpu_s": round(time.process_time() - t0, 1)}
    tmp_path = path.with_suffix(f".{os.getpid()}.tmp")
    tmp_path.write_text(json.dumps(data), encoding="utf-8")
    os.replace(tmp_path, path)
    return data


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
            ref, clips, _ = record_lines(name, Path(tmpd))
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
