"""The default model's re-read of a line every reading of which is empty (``captioner/asr/moonshine/empty_lines.py``).

Moonshine base-en returns the end token first on some clips that start inside a word (a live
capture started while someone talks): all five readings of the line
(``captioner/asr/moonshine/line_framing.py``) are empty and the line is lost. ``empty_lines``
reads such a line (>= ``MIN_S``) again with the end token held back for one token and keeps the
surest forced reading if its mean log-probability reaches ``FLOOR``. Every part below runs twice
on the same audio in one process with one loaded backend: ``before`` (:class:`Recorder` with
``enabled`` False: the line reader's re-read returns nothing, as before it existed) and ``after``:

1. **mid_word**: each sentence of the espeak-ng sets ``set1``-``set4`` (``bench/voice_sets.py``)
   and the natural-voice sets ``nat4``, ``nat6quick``, ``nat12blend``
   (``bench/natural_voices.py``), cut from ``start + off`` to ``end + 0.4`` s (never past 0.05 s
   before the next sentence starts) for ``off`` in ``--offsets`` (default 0.15, 0.3, 0.45 s:
   inside the first word or two). Reference: the sentence's words less the first ``k``, ``k`` =
   ``off`` over the sentence's mean word duration, rounded, at least 1 (approximate). Per set and
   pooled: clips, empty outputs, WER (jiwer after ``tests.speech.normalize_words``), lines the
   re-read filled (``LineReader.forced``), and each filled line's text and score. ``after`` is read
   first; ``before`` is read again where a line read empty and on every :data:`CHECK_EVERY`-th
   clip, and is otherwise ``after`` (the same code ran: :func:`both`; ``determinism_mismatches``
   counts checked clips that differ anyway);
2. **whole**: each set whole, WER before/after against its joined sentences, lines filled; the
   moonshine-voice wheel's recordings (``beckett``, ``two_cities``, ``endgame``): same text, or
   the word diff;
3. **non_speech**: every sound of ``bench/sound_clips.py`` (``CLIPS``: at its ``level_db``;
   ``DISTRACTORS``: at -23 dBFS RMS) alone, 1 s of a -60 dBFS noise floor before and 2 s after:
   clips whose output has words, before/after, and the new texts with their forced scores.
   The hedgewars voice-pack sounds (``Hello``, ``Oops``, ``Amazing``, ...) are spoken words and
   are counted apart (``speech_like``). ``before`` as in part 1;
4. **floor**: every forced reading the re-read made (the surest of its five, whatever its score:
   the floor is applied after the choice, so any floor's outcome follows from these), on speech
   (part 1 and 2, with ``right``: the forced text's WER against the clip's reference <= 0.5) and
   on non-speech, and per candidate floor the right/wrong fills on speech and the fills on
   non-speech it would keep.

Every transcription goes through the session path, ``StreamingSession(backend, "x",
turns=False)`` fed 0.1 s blocks, then ``end()``; the backend is ``load_backend("default",
partials=False)``: the line reader reads each line's framings in turn, so the text does not
depend on the machine's load (live, the reading budget's cap and the partial thread's timing
would make ``before`` and ``after`` differ by load; at the budget's ``ALL`` level the live text
of a line is the same). ``empty_lines.reread_empty`` is wrapped (as ``line_framing`` calls it)
to record its five readings; the module itself is unchanged.

Run::

    .venv-test/bin/python bench/empty_lines.py            # writes bench/results/empty_lines.json
    .venv-test/bin/python bench/empty_lines.py --offsets 0.2,0.4 --every 2 --parts mid_word
    .venv-test/bin/python bench/empty_lines.py --rescore   # part 1's summaries and part 4 again, no model

Needs espeak-ng, the bench extra (natural voices, moonshine-voice's assets) and the Debian sound
packages of ``bench/sound_clips.py`` (installed, cached, or ``apt-get download``).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATE = 16000
BLOCK = 1600  # 0.1 s
OFFSETS = (0.15, 0.3, 0.45)
ESPEAK_SETS = ("set1", "set2", "set3", "set4")
NATURAL_SETS = ("nat4", "nat6quick", "nat12blend")
RECORDED = ("beckett", "two_cities", "endgame")
TAIL_S = 0.4
#: a forced reading is "right" when its WER against the clip's reference is at most this
RIGHT_WER = 0.5
#: parts 1 and 3 run ``before`` on every clip where a line read empty, and on every this-many-th clip
#: besides (a check that the runs skipped would have given the same text: :func:`both`)
CHECK_EVERY = 4
FLOORS = (-0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9, -1.0, -1.2, -1.5)


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


# -- audio ----------------------------------------------------------------------------------------
def espeak_set(name: str) -> tuple[np.ndarray, list[dict]]:
    """Set ``name``'s audio ``[n] float32`` and sentences (``text``, ``start``, ``end`` s), cached
    beside ``bench/sounds.py``'s copy (``cache_dir()/speech/NAME.wav`` and ``NAME.json``)."""
    import soundfile as sf

    from bench.sound_clips import cache_dir
    from bench.voice_sets import render_set

    path = cache_dir() / "speech" / f"{name}.wav"
    meta = path.with_suffix(".json")
    if not (path.is_file() and meta.is_file()):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{name}.{os.getpid()}.tmp.wav")
        sentences = render_set(name, tmp)  # deterministic: the same file sounds.py renders
        os.replace(tmp, path)
        meta.write_text(json.dumps(sentences, indent=1), encoding="utf-8")
    return sf.read(path, dtype="float32")[0], json.loads(meta.read_text(encoding="utf-8"))


def speech_set(name: str) -> tuple[np.ndarray, list[dict]]:
    """Audio and sentences of an espeak-ng or natural-voice set."""
    if name.startswith("nat"):
        import soundfile as sf

        from bench.natural_voices import natural

        wav, sentences, _ = natural(name)
        return sf.read(wav, dtype="float32")[0], sentences
    return espeak_set(name)


def rms_db(x: np.ndarray) -> float:
    loud = x[np.abs(x) > 0.02 * max(float(np.abs(x).max()), 1e-9)]
    return 20 * np.log10(max(float(np.sqrt(np.mean(loud ** 2))), 1e-9))


def alone(x: np.ndarray, level_db: float, rng: np.random.Generator) -> np.ndarray:
    """``x`` at ``level_db`` dBFS RMS with 1 s of -60 dBFS noise before and 2 s after
    (``bench/sounds.py``'s ``distractor_bench``)."""
    y = x * 10 ** ((level_db - rms_db(x)) / 20)
    a = rng.normal(0, 1e-3, len(y) + 3 * RATE).astype(np.float32)
    a[RATE:RATE + len(y)] += y
    return np.clip(a, -1, 1)


# -- text ----------------------------------------------------------------------------------------
def norm(text: str) -> str:
    from tests.speech import normalize_words

    return normalize_words(text)


def wer(ref: str, hyp: str) -> float:
    import jiwer

    return round(float(jiwer.wer(norm(ref), norm(hyp))), 4)


def corpus_wer(refs: list[str], hyps: list[str]) -> float | None:
    import jiwer

    pairs = [(norm(r), norm(h)) for r, h in zip(refs, hyps) if norm(r)]
    if not pairs:
        return None
    return round(100 * float(jiwer.wer([r for r, _ in pairs], [h for _, h in pairs])), 2)


def word_diff(a: str, b: str) -> list[str]:
    """Word-level differences ``-old`` / ``+new`` between two texts."""
    wa, wb = a.split(), b.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if op != "equal":
            out.append(f"-[{' '.join(wa[i1:i2])}] +[{' '.join(wb[j1:j2])}]")
    return out


def home_relative(path: Path) -> str:
    """``path`` as written in a results file: ``~/...`` under the home folder (no machine's own paths)."""
    try:
        return "~/" + str(Path(path).relative_to(Path.home()))
    except ValueError:
        return str(path)


# -- the backend and its re-read -----------------------------------------------------------------
class Recorder:
    """Wraps ``line_framing.reread_empty`` (the name the line reader calls) to record each call:
    the line's length, the five forced readings ``(text, score)``, the surest of them whatever
    its score (what ``FLOOR`` is held against) and what the call returned. With :attr:`enabled`
    False it returns ``None`` without reading (the ``before`` runs: no line is read again)."""

    def __init__(self) -> None:
        from captioner.asr.moonshine import empty_lines, line_framing

        self.line_framing = line_framing
        self.original = empty_lines.reread_empty
        self.calls: list[dict] = []
        self.enabled = True
        line_framing.reread_empty = self.wrapped

    def wrapped(self, scored, clip, kw, sample_rate, *args, **kwargs):
        from captioner.asr.moonshine.framings import surest

        if not self.enabled:
            return None
        readings: list[tuple[str, float]] = []

        def recording(audio, **kw2):
            text, score = scored(audio, **kw2)
            readings.append((text.strip(), float(score)))
            return text, score

        out = self.original(recording, clip, kw, sample_rate, *args, **kwargs)
        rec = {"line_s": round(len(clip) / sample_rate, 2), "readings": [[t, round(s, 3)] for t, s in readings],
               "kept": out is not None}
        if readings:
            best = surest(readings, len(clip), sample_rate)
            rec["best"], rec["score"] = best[0], round(best[1], 3)
        else:  # shorter than MIN_S: not read again
            rec["best"], rec["score"] = "", None
        self.calls.append(rec)
        return out


def transcribe(backend, audio: np.ndarray) -> tuple[str, list[str]]:
    """The joined final text and the final lines of ``audio`` through a fresh
    ``StreamingSession(backend, "x", turns=False)`` fed 0.1 s blocks."""
    from captioner.engine.session import StreamingSession
    from captioner.events import TextDelta

    session = StreamingSession(backend, "x", turns=False)
    events = []
    for i in range(0, len(audio), BLOCK):
        events += session.feed(audio[i:i + BLOCK])
    events += session.end()
    lines = [e.text.strip() for e in events if isinstance(e, TextDelta) and e.final and e.text.strip()]
    return " ".join(lines), lines


def both(backend, rec: Recorder, audio: np.ndarray, check: bool = True) -> dict:
    """``audio`` read with the re-read on (``after``) and off (``before``): texts, lines, and the
    re-read's calls. The ``before`` run is skipped when ``check`` is false and the ``after`` run
    called the re-read for no line (no line read empty): both runs then go through the same code
    (``reread_empty`` is reached only for an empty line), so ``before`` is ``after``
    (``before_run: false``; the runs with ``check`` test that the decoding is deterministic)."""
    reader = backend._reader
    out: dict = {}
    for key, enabled in (("after", True), ("before", False)):
        if not enabled and not check and not out["rereads"]:
            out.update(before=out["after"], before_lines=out["after_lines"], before_forced=0, before_run=False)
            break
        rec.enabled = enabled
        n_calls, forced = len(rec.calls), reader.forced
        text, lines = transcribe(backend, audio)
        out[key] = text
        out[f"{key}_lines"] = lines
        out[f"{key}_forced"] = reader.forced - forced
        if enabled:
            out["rereads"] = rec.calls[n_calls:]
        else:
            out["before_run"] = True
    return out


# -- part 1: mid-word starts ---------------------------------------------------------------------
def reference(text: str, start: float, end: float, off: float) -> tuple[str, int]:
    words = text.split()
    per_word = (end - start) / max(1, len(words))
    k = max(1, int(round(off / per_word)))
    return " ".join(words[k:]), k


def mid_word_clips(sentences: list[dict], offsets: tuple[float, ...], every: int = 1):
    """The mid-word clips of a set: for every ``every``-th sentence (``text``, ``start``, ``end`` s)
    and each offset, ``(index, sentence, off, a, b)`` with ``a``/``b`` the clip's first and end
    sample: from ``start + off`` to ``end +`` :data:`TAIL_S`, never past 0.05 s before the next
    sentence starts (``bench/alert_starts.py`` cuts the same clips)."""
    for i, s in enumerate(sentences):
        if i % every:
            continue
        stop = s["end"] + TAIL_S
        if i + 1 < len(sentences):
            stop = min(stop, sentences[i + 1]["start"] - 0.05)
        for off in offsets:
            yield i, s, off, int((s["start"] + off) * RATE), int(stop * RATE)


def mid_word(backend, rec: Recorder, sets: list[str], offsets: tuple[float, ...], every: int) -> dict:
    clips: list[dict] = []
    t0 = time.perf_counter()
    for name in sets:
        audio, sentences = speech_set(name)
        for i, s, off, a, b in mid_word_clips(sentences, offsets, every):
            ref, k = reference(s["text"], s["start"], s["end"], off)
            r = both(backend, rec, audio[a:b], check=len(clips) % CHECK_EVERY == 0)
            clips.append({"set": name, "sentence": i, "off": off, "clip_s": round((b - a) / RATE, 2),
                          "words_dropped": k, "ref": ref, **r})
        log(f"mid_word {name}: {sum(c['set'] == name for c in clips)} clips, {time.perf_counter() - t0:.0f} s")
    return derive_mid_word({"offsets_s": list(offsets), "every": every, "tail_s": TAIL_S,
                            "wall_s": round(time.perf_counter() - t0, 1), "clips": clips}, sets)


def overlap(ref: str, text: str) -> float | None:
    """Share of ``text``'s words (normalised) found in ``ref`` (each reference word once)."""
    import collections

    words = norm(text).split()
    if not words:
        return None
    left = collections.Counter(norm(ref).split())
    hits = 0
    for w in words:
        if left[w] > 0:
            left[w] -= 1
            hits += 1
    return round(hits / len(words), 3)


def derive_mid_word(out: dict, sets: list[str]) -> dict:
    """Part 1's numbers from its ``clips`` (each forced reading's ``wer_vs_ref``, ``overlap`` and
    ``right``; per set, per offset and pooled summaries; the filled and changed clips)."""
    clips = out["clips"]
    for c in clips:
        for call in c["rereads"]:
            if call["score"] is not None:
                call["wer_vs_ref"] = wer(c["ref"], call["best"]) if norm(c["ref"]) else None
                call["overlap"] = overlap(c["ref"], call["best"])
                call["right"] = call["wer_vs_ref"] is not None and call["wer_vs_ref"] <= RIGHT_WER
    out["per_set"] = {name: summary([c for c in clips if name == "pooled" or c["set"] == name])
                      for name in [*sets, "pooled"]}
    out["per_offset"] = {str(off): summary([c for c in clips if c["off"] == off]) for off in out["offsets_s"]}
    out["filled"] = [{"set": c["set"], "sentence": c["sentence"], "off": c["off"], "ref": c["ref"],
                      "lines_after": len(c["after_lines"]), "text": call["best"], "score": call["score"],
                      "wer_vs_ref": call["wer_vs_ref"], "overlap": call["overlap"], "readings": call["readings"]}
                     for c in clips for call in c["rereads"] if call["kept"]]
    out["changed"] = [{"set": c["set"], "sentence": c["sentence"], "off": c["off"], "ref": c["ref"],
                       "before": c["before"], "after": c["after"]} for c in clips if c["before"] != c["after"]]
    out["clips"] = clips  # last in the file
    return out


def summary(cs: list[dict]) -> dict:
    refs = [c["ref"] for c in cs]
    calls = [call for c in cs for call in c["rereads"]]
    return {"clips": len(cs),
            "empty_before": sum(not norm(c["before"]) for c in cs),
            "empty_after": sum(not norm(c["after"]) for c in cs),
            "wer_before_pct": corpus_wer(refs, [c["before"] for c in cs]),
            "wer_after_pct": corpus_wer(refs, [c["after"] for c in cs]),
            "changed": sum(c["before"] != c["after"] for c in cs),
            "lines_filled": sum(c["after_forced"] for c in cs),
            "rereads": sum(call["score"] is not None for call in calls),
            "empty_lines_too_short": sum(call["score"] is None for call in calls),
            "filled_right": sum(bool(call.get("right")) for call in calls if call["kept"]),
            **checks(cs)}


def checks(cs: list[dict]) -> dict:
    """How many ``before`` runs were read, and how many of those with no empty line differ from
    ``after`` (a skipped ``before`` run would then not be ``after``: should be 0)."""
    return {"before_runs": sum(c["before_run"] for c in cs),
            "determinism_mismatches": sum(c["before_run"] and not c["rereads"] and c["before"] != c["after"]
                                          for c in cs)}


# -- part 2: whole sets --------------------------------------------------------------------------
def whole(backend, rec: Recorder, sets: list[str]) -> dict:
    out: dict = {}
    t0 = time.perf_counter()
    for name in sets:
        audio, sentences = speech_set(name)
        ref = " ".join(s["text"] for s in sentences)
        r = both(backend, rec, audio)
        out[name] = {"audio_s": round(len(audio) / RATE, 1), "wer_before_pct": round(100 * wer(ref, r["before"]), 2),
                     "wer_after_pct": round(100 * wer(ref, r["after"]), 2), "lines": len(r["after_lines"]),
                     "lines_filled": r["after_forced"], "identical": r["before"] == r["after"],
                     "diff": word_diff(r["before"], r["after"]), "rereads": r["rereads"]}
        log(f"whole {name}: {time.perf_counter() - t0:.0f} s")
    from bench.sounds import speech_audio

    for name in RECORDED:
        audio = speech_audio(name)
        r = both(backend, rec, audio)
        out[name] = {"audio_s": round(len(audio) / RATE, 1), "lines": len(r["after_lines"]),
                     "lines_filled": r["after_forced"], "identical": r["before"] == r["after"],
                     "diff": word_diff(r["before"], r["after"]), "rereads": r["rereads"], "text_after": r["after"]}
        log(f"whole {name}: {time.perf_counter() - t0:.0f} s")
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    return out


# -- part 3: non-speech --------------------------------------------------------------------------
SPEECH_LIKE = "hedgewars"


def non_speech(backend, rec: Recorder) -> dict:
    from bench.sound_clips import CLIPS, DISTRACTORS, cache_dir

    rng = np.random.default_rng(3)
    rows, failed = [], []
    t0 = time.perf_counter()
    for kind, items in (("event", CLIPS), ("everyday", DISTRACTORS)):
        for item in items:
            try:
                x = item.load()
            except Exception as exc:  # noqa: BLE001 - a package that cannot be fetched offline
                failed.append({"sound": item.name, "error": f"{type(exc).__name__}: {exc}"[:200]})
                continue
            level = getattr(item, "level_db", -23.0)
            r = both(backend, rec, alone(np.asarray(x, np.float32), level, rng), check=len(rows) % CHECK_EVERY == 0)
            rows.append({"kind": kind, "sound": item.name, "origin": item.origin, "sound_s": round(len(x) / RATE, 2),
                         "level_db": level, "speech_like": item.name.startswith(SPEECH_LIKE), **r})
        log(f"non_speech {kind}: {len(rows)} sounds, {time.perf_counter() - t0:.0f} s")

    def count(rs):
        return {"sounds": len(rs), "with_words_before": sum(bool(norm(r["before"])) for r in rs),
                "with_words_after": sum(bool(norm(r["after"])) for r in rs),
                "lines_filled": sum(r["after_forced"] for r in rs),
                "rereads": sum(c["score"] is not None for r in rs for c in r["rereads"]), **checks(rs)}

    plain = [r for r in rows if not r["speech_like"]]
    return {"cache": home_relative(cache_dir()), "failed_to_load": failed,
            "non_speech": count(plain), "speech_like": count([r for r in rows if r["speech_like"]]),
            "new_words": [{"sound": r["sound"], "before": r["before"], "after": r["after"],
                           "forced": [{"text": c["best"], "score": c["score"]} for c in r["rereads"] if c["kept"]]}
                          for r in rows if r["before"] != r["after"]],
            "with_words": [{"sound": r["sound"], "speech_like": r["speech_like"], "before": r["before"],
                            "after": r["after"]} for r in rows if norm(r["after"]) or norm(r["before"])],
            "rows": rows, "wall_s": round(time.perf_counter() - t0, 1)}


# -- part 4: the floor ---------------------------------------------------------------------------
def floor_choice(result: dict) -> dict:
    speech = [{"set": c["set"], "sentence": c["sentence"], "off": c["off"], "text": call["best"],
               "score": call["score"], "wer_vs_ref": call.get("wer_vs_ref"), "overlap": call.get("overlap"),
               "right": bool(call.get("right"))}
              for c in result.get("mid_word", {}).get("clips", []) for call in c["rereads"] if call["score"] is not None]
    whole_calls = [{"set": name, "text": call["best"], "score": call["score"]}
                   for name, v in result.get("whole", {}).items() if isinstance(v, dict)
                   for call in v.get("rereads", []) if call["score"] is not None]
    rows = result.get("non_speech", {}).get("rows", [])
    noise = [{"sound": r["sound"], "speech_like": r["speech_like"], "text": call["best"], "score": call["score"]}
             for r in rows for call in r["rereads"] if call["score"] is not None]
    plain = [n for n in noise if not n["speech_like"]]

    def kept(rs, floor):
        return [r for r in rs if r["text"] and r["score"] >= floor]

    table = []
    for floor in FLOORS:
        table.append({"floor": floor, "speech_right": len([r for r in kept(speech, floor) if r["right"]]),
                      "speech_wrong": len([r for r in kept(speech, floor) if not r["right"]]),
                      "whole_sets": len(kept(whole_calls, floor)),
                      "non_speech": len(kept(plain, floor)),
                      "speech_like": len(kept([n for n in noise if n["speech_like"]], floor))})
    top_noise = max((n["score"] for n in plain if n["text"]), default=None)
    return {"speech": sorted(speech, key=lambda r: -r["score"]), "whole_sets": whole_calls,
            "non_speech": sorted(noise, key=lambda r: -r["score"]),
            "highest_non_speech_score": top_noise, "table": table}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "empty_lines.json"))
    ap.add_argument("--parts", default="mid_word,whole,non_speech")
    ap.add_argument("--offsets", default=",".join(map(str, OFFSETS)), help="seconds into each sentence, comma list")
    ap.add_argument("--every", type=int, default=1, help="part 1 reads every N-th sentence")
    ap.add_argument("--sets", default=",".join(ESPEAK_SETS + NATURAL_SETS))
    ap.add_argument("--rescore", action="store_true",
                    help="recompute the derived numbers (part 1's summaries, part 4) of --out's saved clips; no model")
    args = ap.parse_args()
    if args.rescore:
        result = json.loads(Path(args.out).read_text(encoding="utf-8"))
        if "mid_word" in result:
            names = [k for k in result["mid_word"]["per_set"] if k != "pooled"]
            result["mid_word"] = derive_mid_word(result["mid_word"], names)
        result["floor_choice"] = floor_choice(result)
        write(result, args.out)
        return
    parts = set(args.parts.split(","))
    sets = [s for s in args.sets.split(",") if s]
    offsets = tuple(float(v) for v in args.offsets.split(","))

    from captioner.asr import load_backend
    from captioner.asr.moonshine import empty_lines

    result: dict = {"loadavg_start": [round(v, 2) for v in os.getloadavg()],
                    "min_s": empty_lines.MIN_S, "floor": empty_lines.FLOOR, "right_wer": RIGHT_WER,
                    "backend": "load_backend('default', partials=False): StreamingSession(turns=False), 0.1 s blocks"}
    t0 = time.perf_counter()
    backend = load_backend("default", partials=False)
    result["load_s"] = round(time.perf_counter() - t0, 1)
    rec = Recorder()
    try:
        if "mid_word" in parts:
            result["mid_word"] = mid_word(backend, rec, sets, offsets, args.every)
        if "whole" in parts:
            result["whole"] = whole(backend, rec, sets)
        if "non_speech" in parts:
            result["non_speech"] = non_speech(backend, rec)
    finally:
        rec.line_framing.reread_empty = rec.original
    result["floor_choice"] = floor_choice(result)
    result["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    result["bench_wall_s"] = round(time.perf_counter() - t0, 1)
    write(result, args.out)


def write(result: dict, out: str) -> None:
    """Write ``result`` to ``out`` and print it without its per-clip rows."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    brief = {k: v for k, v in result.items() if k not in ("mid_word", "whole", "non_speech", "floor_choice")}
    if "mid_word" in result:
        brief["mid_word"] = {k: v for k, v in result["mid_word"].items() if k not in ("clips", "changed")}
    if "whole" in result:
        brief["whole"] = {k: ({kk: vv for kk, vv in v.items() if kk not in ("rereads", "text_after")}
                              if isinstance(v, dict) else v) for k, v in result["whole"].items()}
    if "non_speech" in result:
        brief["non_speech"] = {k: v for k, v in result["non_speech"].items() if k not in ("rows", "with_words")}
    brief["floor_choice"] = {k: v for k, v in result["floor_choice"].items() if k not in ("speech",)}
    print(json.dumps(brief, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
