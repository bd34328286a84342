"""How far apart the GE2E speaker encoder puts the voices of the speaker benchmark (issue 38).

For each input of ``bench/speakers.py`` (the espeak-ng voice sets and the quick-alternation
set), every sentence is embedded alone from its known start and end (no decoder, no line
cutting), each voice's centroid is the normalised mean of its sentences, and the script
prints JSON with:

* ``centroids``: the cosine similarity of every pair of voice centroids;
* ``oracle_accuracy``: the share of sentences whose nearest centroid is their own voice's
  (the ceiling for an attribution that knew every voice's centroid in advance); a
  sentence's own voice's centroid is made of that voice's *other* sentences (leave one out);
* ``own``: p5 / p50 similarity of a sentence to its own voice's centroid (leave one out);
* ``closer_than_own``: voice pairs whose centroids are more alike than the p50 of ``own``:
  voices this encoder hears as one (no threshold on its similarity can tell them apart).

    python bench/speaker_separability.py --inputs set1,set2,set3,quick --out bench/results/speaker_separability.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def separability(name: str, work: Path) -> dict:
    """The figures above for input ``name`` (rendered into ``work``)."""
    from bench.speakers import render
    from captioner.audio.fileio import load_audio
    from captioner.speakers.encoder import VoiceEncoder

    wav, utts = render(name, work, 20)
    audio = load_audio(str(wav), 16000)
    emb = VoiceEncoder().embed([audio[int(u["start"] * 16000): int(u["end"] * 16000)] for u in utts])
    voices = sorted({u["voice"] for u in utts})
    vid = np.array([voices.index(u["voice"]) for u in utts])
    sums = np.stack([emb[vid == k].sum(axis=0) for k in range(len(voices))])
    cents = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    # leave one out: a sentence against its own voice's other sentences, never against itself
    sims = np.empty((len(utts), len(voices)))
    for i in range(len(utts)):
        c = sums.copy()
        c[vid[i]] -= emb[i]
        c /= np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)
        sims[i] = c @ emb[i]
    own = sims[np.arange(len(utts)), vid]
    pair = cents @ cents.T
    p50 = float(np.median(own))
    close = [[voices[i], voices[j], round(float(pair[i, j]), 3)] for i in range(len(voices))
             for j in range(i + 1, len(voices)) if pair[i, j] >= p50]
    return {"voices": voices, "sentences": len(utts),
            "centroids": [[round(float(x), 3) for x in row] for row in pair],
            "oracle_accuracy": float(np.mean(np.argmax(sims, axis=1) == vid)),
            "own": {"p5": round(float(np.percentile(own, 5)), 3), "p50": round(p50, 3)},
            "closer_than_own": close}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="set1,set2,set3,quick")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = {name: separability(name, Path(tmp)) for name in args.inputs.split(",") if name}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
