"""Hotwords through the line path (issue 48.1): clips of names, ``captioner transcribe`` with and without the list.

``bench/hotwords.py`` decodes single sentences in one pass; this measures what a user gets:
``captioner transcribe`` (the line path: lines cut by the VAD, each read as cut, framed and
retimed, the surest reading kept: :mod:`captioner.asr.moonshine.line_framing`) of clips that
each hold nine rare words (people's names from several languages, invented product names,
technical terms) in three or four sentences read by one voice, with 0.7-1.1 s pauses. Voices:
espeak-ng (four accents) and the neural voices of ``bench/natural_voices.py`` (Kokoro voices and
a blend, Piper's joe). The clips marked ``held_back`` were evaluated only at the end, never tuned on.

Each clip is transcribed by the code of ``--before-rev`` (``git archive``: today's code) and by
this working tree, side by side, in child processes that each load the model once and run
``captioner.cli.main(["transcribe", ...])`` on every clip of one list kind:

* ``none``: no list; ``names``: the clip's own nine words (what a user would type for that
  meeting); ``wrong``: the next clip's nine words (none of them said: what a list of words
  nobody says costs);
* ``unrelated``: ``bench/hotwords.py``'s 100 unrelated words, on the name clips and on two
  clips of ``tests/speech.py``'s ordinary sentences (:func:`ordinary_clips`): the text must be
  the same as with no list.

Per clip: names right (exact, case-sensitive, whole word; of 9) without and with the list,
WER (``tests.speech.normalize_words``, jiwer) without and with it, and the texts::

    python bench/hotwords.py --readings --out bench/results/hotwords_readings

Measured 2026-12-08 (2 cores shared with other work, load 5-7; ``--before-rev`` f6fe82d, which
chose among readings by their plain mean log-probability; results in
``bench/results/hotwords_readings.json``), names right of 9 / WER without -> with the list:

* tuning clips (6): before 28 of 54, mean WER 48.2 -> 42.4 %; after 40 of 54, 48.2 -> 23.8 %;
* held back: ``contract_m3`` (espeak-ng en-us+m3) before 3, 38.2 -> 35.3 %; after 4, 38.2 -> 32.4 %
  (no reading of any of its lines spells the other five names: "Keymar" for Caoimhe);
  ``lab_blend`` (Kokoro blend) before 7, 31.3 -> 15.6 %; after 9, 31.3 -> 6.3 %;
* no list: the same text before and after on all ten clips; the unrelated list on the two
  ordinary clips: the same text as no list, before and after; on the name clips (rare names
  beside other rare names) it wrote 7 of its words where none was said (before: 1), another
  clip's nine names 1 (before: 0); mean WER with it 49.8 -> 50.4 % (tuning), 36.3 % both (held back).

Clips are rendered deterministically and cached as ``RECIPE/NAME-KEY.wav`` (16 kHz PCM_16) in
``bench/natural_voices.py``'s cache folder; the key covers texts, voices, seeds and :data:`RECIPE`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

#: Bump when anything that changes the audio changes.
RECIPE = "hotword-clips-1"
RATE = 16000
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class NameClip:
    """One clip: ``sentences`` read by ``voice`` (an espeak-ng voice, or a ``bench/natural_voices.py``
    voice when ``natural``), holding the rare words ``names`` (written as the reference writes
    them: the hotword list)."""

    name: str
    voice: str
    natural: bool
    sentences: tuple[str, ...]
    names: tuple[str, ...]
    held_back: bool = False
    seed: int = 0


CLIPS: tuple[NameClip, ...] = (
    NameClip("desk_us", "en-us", False, (
        "Good morning, this is Marisol from the Velquora help desk.",
        "Thandiwe and Gunnarsson moved the Cassandra cluster last night.",
        "Please ask Oduya to check the Zephyrine gateway today.",
        "Przybylski will fix the Jenkins pipeline after lunch.",
    ), ("Marisol", "Velquora", "Thandiwe", "Gunnarsson", "Cassandra", "Oduya", "Zephyrine", "Przybylski",
        "Jenkins"), seed=1),
    NameClip("travel_alpha", "jf_alpha", True, (
        "Saoirse is flying to Reykjavik on Tuesday.",
        "She will meet Dmitrievna at the Lumitrex office.",
        "Nkechi prepared the Kibana charts for the review.",
        "Castellanos wants the Grapholine demo before Hiroshi leaves.",
    ), ("Saoirse", "Reykjavik", "Dmitrievna", "Lumitrex", "Nkechi", "Kibana", "Castellanos", "Grapholine",
        "Hiroshi"), seed=2),
    NameClip("workshop_scot", "en-gb-scotland", False, (
        "Eilidh booked the Quorvane workshop for next week.",
        "Adebayo and Wojciechowski will present the Helixor roadmap.",
        "The Memcached servers need a patch before Friday.",
        "Ask Ingrid Solberg about the Tavrix contract.",
    ), ("Eilidh", "Quorvane", "Adebayo", "Wojciechowski", "Helixor", "Memcached", "Ingrid", "Solberg",
        "Tavrix"), seed=3),
    NameClip("team_joe", "joe", True, (
        "Hello everyone, Tomasz here from the Brevanta team.",
        "Chiamaka fixed the Jupyter notebooks on Monday.",
        "Later, Ramanathan tested the Solvexa app with Pulumi.",
        "Yusuf will send the Orbiqa invoice tomorrow.",
    ), ("Tomasz", "Brevanta", "Chiamaka", "Jupyter", "Ramanathan", "Solvexa", "Pulumi", "Yusuf", "Orbiqa"),
        seed=4),
    NameClip("release_029", "en-029", False, (
        "Kwabena wants the Drovix release out by Thursday.",
        "Margarethe and Olumide reviewed the Terragrunt modules.",
        "The Zyntera portal went down during the Beaumont call.",
        "Please tell Anneliese that Fluentd is fixed.",
    ), ("Kwabena", "Drovix", "Margarethe", "Olumide", "Terragrunt", "Zyntera", "Beaumont", "Anneliese",
        "Fluentd"), seed=5),
    NameClip("factory_kumo", "jm_kumo", True, (
        "Rasmussen opened a ticket about the Kelvora sensors.",
        "Ayodele and Nakashima will visit the Plexiton factory in Monterrey.",
        "The Clickhouse tables grew after Bogdanova added new logs.",
        "Svetlana will check them tomorrow.",
    ), ("Rasmussen", "Kelvora", "Ayodele", "Nakashima", "Plexiton", "Monterrey", "Clickhouse", "Bogdanova",
        "Svetlana"),
        seed=6),
    # held back: evaluated only at the end
    NameClip("contract_m3", "en-us+m3", False, (
        "Hi, this is Caoimhe calling about the Vantrelo contract.",
        "Obinna and Lindgren finished the Ceph migration yesterday.",
        "Next, Tsvetkova will review the Mirabyte budget with the team.",
        "Please ask Haruki whether Tekton still fails.",
    ), ("Caoimhe", "Vantrelo", "Obinna", "Lindgren", "Ceph", "Tsvetkova", "Mirabyte", "Haruki", "Tekton"),
        held_back=True, seed=7),
    NameClip("lab_blend", "jf_tebukuro+jm_kumo", True, (
        "Good afternoon, Benedikt speaking from the Orlanza lab.",
        "Folasade and Kowalski calibrated the Quintrel scanner on Friday.",
        "The Redpanda consumers lag whenever Jiwoo runs the Nextflow jobs.",
        "Ximena will summarize the results.",
    ), ("Benedikt", "Orlanza", "Folasade", "Kowalski", "Quintrel", "Redpanda", "Jiwoo", "Nextflow", "Ximena"),
        held_back=True, seed=8),
)


def ordinary_clips() -> tuple[NameClip, ...]:
    """``tests/speech.py``'s five ordinary sentences (no rare word) as two clips, espeak-ng en-us
    and Kokoro's jf_gongitsune: the speech on which an unrelated list must change nothing."""
    from tests.speech import SENTENCES

    return (NameClip("ordinary_us", "en-us", False, tuple(SENTENCES), (), seed=11),
            NameClip("ordinary_gongitsune", "jf_gongitsune", True, tuple(SENTENCES), (), seed=12))


def clip_key(clip: NameClip) -> str:
    """Cache key of ``clip``'s audio (its whole recipe)."""
    blob = json.dumps([RECIPE, asdict(clip)], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def _sentence(clip: NameClip, i: int, text: str, folder: Path) -> np.ndarray:
    """One sentence of ``clip``: ``[n] float32`` at 16 kHz (espeak-ng at 150-170 wpm, or a neural voice)."""
    rng = np.random.default_rng(clip.seed * 100 + i)
    if clip.natural:
        from bench.natural_voices import synth

        return synth(text, clip.voice, round(float(rng.uniform(0.95, 1.08)), 3), clip.seed * 1000 + i)
    from bench.meeting_audio import _espeak

    audio = _espeak(text, clip.voice, int(rng.integers(150, 171)), folder / "s.wav")
    peak = float(np.abs(audio).max()) + 1e-9
    return audio * min(1.0, 0.5 / peak)


def render_clip(clip: NameClip, cache: str | Path | None = None) -> Path:
    """``clip``'s 16 kHz mono WAV (rendered once, then cached): 0.5 s of lead-in, the sentences
    with 0.7-1.1 s pauses (seeded), 0.8 s after the last, a 1e-3 gaussian noise floor."""
    import soundfile as sf

    from bench.natural_voices import cache_dir

    folder = cache_dir(cache) / RECIPE
    folder.mkdir(parents=True, exist_ok=True)
    wav = folder / f"{clip.name}-{clip_key(clip)}.wav"
    if wav.exists():
        return wav
    rng = np.random.default_rng(clip.seed)
    parts = [np.zeros(int(0.5 * RATE), np.float32)]
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(clip.sentences):
            gap = 0.8 if i == len(clip.sentences) - 1 else float(rng.uniform(0.7, 1.1))
            parts += [_sentence(clip, i, text, Path(tmp)).astype(np.float32), np.zeros(int(gap * RATE), np.float32)]
    audio = np.concatenate(parts)
    audio += np.random.default_rng(clip.seed).normal(0, 1e-3, len(audio)).astype(np.float32)
    tmp_path = wav.with_name(wav.name + f".{os.getpid()}.tmp.wav")
    sf.write(tmp_path, np.clip(audio, -1, 1), RATE, subtype="PCM_16")
    os.replace(tmp_path, wav)
    return wav


def reference(clip: NameClip) -> str:
    """The clip's reference text (its sentences joined)."""
    return " ".join(clip.sentences)


def names_found(clip: NameClip, hyp: str) -> list[str]:
    """The names of ``clip`` that ``hyp`` holds exactly as written (case-sensitive, whole word),
    as often as the reference says them."""
    ref = reference(clip)
    found = []
    for word in clip.names:
        pat = re.compile(rf"(?<![\w]){re.escape(word)}(?![\w])")
        if pat.findall(hyp):
            found += [word] * min(len(pat.findall(ref)), len(pat.findall(hyp)))
    return found


def name_count(clip: NameClip) -> int:
    """Occurrences of the clip's names in its reference."""
    ref = reference(clip)
    return sum(len(re.findall(rf"(?<![\w]){re.escape(w)}(?![\w])", ref)) for w in clip.names)


def wer(ref: str, hyp: str) -> float:
    """Word error rate (0..1) after ``tests.speech.normalize_words``."""
    import jiwer

    from tests.speech import normalize_words

    return round(jiwer.wer(normalize_words(ref), normalize_words(hyp)), 4)


# -- the line path in child processes --------------------------------------------------------------
def _strip(txt: str) -> str:
    """The words of a ``--format txt`` transcript (no ``[hh:mm:ss]`` stamps, no speaker names)."""
    return " ".join(re.sub(r"^\[[0-9:.]+\]\s*(Speaker \d+: )?", "", ln) for ln in txt.splitlines()).strip()


def child(job: str) -> None:
    """(In a child, with this tree or an older one on the path.) ``captioner transcribe`` of each
    run of the JSON job file ``job`` (``[{"wav", "words"}]``; ``words`` null: no list) in this
    one process (the model loads once); prints ``[{"text", "seconds"}]`` as JSON."""
    from captioner.cli import main as cli

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, run in enumerate(json.loads(Path(job).read_text(encoding="utf-8"))):
            argv = ["transcribe", run["wav"], "--format", "txt", "--speakers", "off", "-o", f"{tmp}/{i}.txt"]
            if run["words"]:
                Path(f"{tmp}/{i}.words").write_text("\n".join(run["words"]) + "\n", encoding="utf-8")
                argv += ["--hotwords-file", f"{tmp}/{i}.words"]
            t0 = time.perf_counter()
            code = cli(argv)
            if code != 0:
                raise SystemExit(f"captioner transcribe failed ({code}): {argv}")
            out.append({"text": _strip(Path(f"{tmp}/{i}.txt").read_text(encoding="utf-8")),
                        "seconds": round(time.perf_counter() - t0, 2)})
    sys.stdout.flush()
    print(json.dumps(out), flush=True)
    os._exit(0)  # the texts are out: skip interpreter teardown (issue 30.2)


def _export(rev: str, folder: Path) -> Path:
    """``rev``'s tree under ``folder``, with this file as ``bench/hotword_readings_child.py``."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=data, check=True)
    (folder / "bench").mkdir(exist_ok=True)
    (folder / "bench" / "hotword_readings_child.py").write_text(Path(__file__).read_text(encoding="utf-8"))
    return folder


def _run_child(tree: Path, runs: list[dict], job: Path) -> list[dict]:
    job.write_text(json.dumps(runs), encoding="utf-8")
    script = tree / "bench" / ("hotword_readings_child.py" if tree != ROOT else "hotword_readings.py")
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, str(script), "--child", str(job)], env=env, cwd=tree,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"child in {tree} failed: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def readings(before_rev: str = "HEAD", names: list[str] | None = None, kinds: tuple[str, ...] =
             ("none", "names", "wrong", "unrelated")) -> dict:
    """Transcribe the clips with each list kind by ``before_rev``'s code and this tree's; the
    per-clip scores and the totals (tuning clips and held-back ones apart). ``names``: only
    these clips (default all)."""
    from bench.hotwords import unrelated_words

    clips = [c for c in CLIPS if not names or c.name in names]
    ordinary = [c for c in ordinary_clips() if not names or c.name in names]
    wavs = {c.name: str(render_clip(c)) for c in clips + ordinary}
    wrong = {c.name: CLIPS[(CLIPS.index(c) + 1) % len(CLIPS)] for c in clips}
    unrelated = unrelated_words()
    plan: dict[str, list[tuple[str, list[str] | None]]] = {}
    for kind in kinds:
        if kind == "unrelated":
            plan[kind] = [(c.name, unrelated) for c in clips + ordinary]
        elif kind == "none":
            plan[kind] = [(c.name, None) for c in clips + ordinary]
        else:
            plan[kind] = [(c.name, list(c.names if kind == "names" else wrong[c.name].names)) for c in clips]
    texts: dict[str, dict[str, dict[str, dict]]] = {"before": {}, "after": {}}
    with tempfile.TemporaryDirectory() as tmp:
        before = _export(before_rev, Path(tmp) / "before")
        for kind, runs in plan.items():  # before and after of one kind back to back (the load drifts)
            for side, tree in (("before", before), ("after", ROOT)):
                got = _run_child(tree, [{"wav": wavs[n], "words": w} for n, w in runs], Path(tmp) / "job.json")
                texts[side][kind] = {n: g for (n, _), g in zip(runs, got)}
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", before_rev], check=True,
                         capture_output=True, text=True).stdout.strip()
    return dict(before_rev=rev, **scores(texts, names))


def scores(texts: dict, names: list[str] | None = None) -> dict:
    """Per-clip scores and totals of ``texts`` (``{side: {kind: {clip: {"text", "seconds"}}}}``);
    ``names``: only these clips (default all)."""
    clips = [c for c in CLIPS if not names or c.name in names]
    ordinary = [c for c in ordinary_clips() if not names or c.name in names]
    wrong = {c.name: CLIPS[(CLIPS.index(c) + 1) % len(CLIPS)] for c in clips}
    return dict(clips=_score(clips, ordinary, wrong, texts),
                totals={side: _totals(clips, wrong, texts[side]) for side in texts})


def rescore(path: str) -> dict:
    """Score a written result again from the texts it holds (after a change to the scoring only);
    rewrites ``path``."""
    result = json.loads(Path(path).read_text(encoding="utf-8"))
    texts: dict = {}
    for name, row in result["clips"].items():
        for side in ("before", "after"):
            for kind, got in row.get(side, {}).items():
                if isinstance(got, dict):
                    texts.setdefault(side, {}).setdefault(kind, {})[name] = {"text": got["text"],
                                                                               "seconds": got["seconds"]}
    result.update(scores(texts, list(result["clips"])))
    Path(path).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def written(words, hyp: str, ref: str) -> int:
    """Occurrences of ``words`` in ``hyp`` beyond those in ``ref`` (exact, case-sensitive, whole
    word): hotwords written where nobody said them."""
    n = 0
    for w in words:
        pat = re.compile(rf"(?<![\w]){re.escape(w)}(?![\w])")
        n += max(0, len(pat.findall(hyp)) - len(pat.findall(ref)))
    return n


def _score(clips, ordinary, wrong, texts) -> dict:
    from bench.hotwords import unrelated_words

    unrelated = unrelated_words()
    out = {}
    for c in clips + ordinary:
        row: dict = dict(voice=c.voice, natural=c.natural, held_back=c.held_back, names=len(c.names))
        for side, by_kind in texts.items():
            r: dict = {}
            for kind, got in by_kind.items():
                if c.name not in got:
                    continue
                hyp = got[c.name]["text"]
                r[kind] = dict(text=hyp, wer=wer(reference(c), hyp), seconds=got[c.name]["seconds"])
                if c.names and kind in ("none", "names", "unrelated"):
                    r[kind]["names_right"] = len(names_found(c, hyp))
                if kind == "wrong":  # the wrong list's words written anyway (none was said)
                    r[kind]["wrong_words_written"] = written(wrong[c.name].names, hyp, reference(c))
                if kind == "unrelated":
                    r[kind]["unrelated_words_written"] = written(unrelated, hyp, reference(c))
            if "unrelated" in r and "none" in r:
                r["unrelated_identical"] = r["unrelated"]["text"] == r["none"]["text"]
            if "names" in r and "none" in r:
                r["wer_drop_with_list"] = round(r["none"]["wer"] - r["names"]["wer"], 4)
            row[side] = r
        out[c.name] = row
    return out


def _totals(clips, wrong, by_kind) -> dict:
    from bench.hotwords import unrelated_words

    unrelated = unrelated_words()
    out = {}
    for group, members in (("tuning", [c for c in clips if not c.held_back]),
                           ("held_back", [c for c in clips if c.held_back])):
        if not members:
            continue
        g: dict = dict(clips=len(members), names_said=sum(name_count(c) for c in members))
        for kind in ("none", "names", "wrong", "unrelated"):
            got = by_kind.get(kind)
            if not got:
                continue
            hyps = [got[c.name]["text"] for c in members]
            g[kind] = dict(mean_wer=round(sum(wer(reference(c), h) for c, h in zip(members, hyps)) / len(members), 4))
            if kind != "wrong":
                g[kind]["names_right"] = sum(len(names_found(c, h)) for c, h in zip(members, hyps))
            if kind in ("wrong", "unrelated"):  # the list's words written where nobody said them
                g[kind]["words_written_unsaid"] = sum(
                    written(wrong[c.name].names if kind == "wrong" else unrelated, h, reference(c))
                    for c, h in zip(members, hyps))
        out[group] = g
    return out


def main(argv: list[str] | None = None) -> None:
    """``--child JOB`` (see :func:`child`), else the whole measurement (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--before-rev", default="HEAD", help="git revision of today's code (default HEAD)")
    p.add_argument("--clips", default="", help="comma-separated clip names (default: all)")
    p.add_argument("--kinds", default="none,names,wrong,unrelated", help="list kinds to run")
    p.add_argument("--out", default=None, help="write OUT.json")
    p.add_argument("--rescore", default=None, metavar="JSON", help="score a written result again from its texts")
    args = p.parse_args(argv)
    if args.child:
        child(args.child)
        return
    if args.rescore:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(rescore(args.rescore)["totals"], indent=1))
        return
    run(args.before_rev, [n for n in args.clips.split(",") if n], tuple(args.kinds.split(",")), args.out)


def run(before_rev: str, names: list[str], kinds: tuple[str, ...], out: str | None) -> dict:
    """:func:`readings` with the load recorded; prints the JSON and writes ``OUT.json``."""
    sys.path.insert(0, str(ROOT))
    result: dict = dict(load_before=os.getloadavg(), cpus=os.cpu_count())
    t0 = time.perf_counter()
    result.update(readings(before_rev, names, kinds))
    result.update(load_after=os.getloadavg(), wall_s=round(time.perf_counter() - t0, 1))
    text = json.dumps(result, indent=1)
    print(text)
    if out:
        Path(out + ".json").write_text(text + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
