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


class _Both:
    """CAM++ and GE2E side by side: each embedding L2-normalised, concatenated and scaled by
    1/sqrt(2), so a cosine is the mean of the two encoders' cosines."""

    def __init__(self) -> None:
        self.parts = [_encoder("campplus"), _encoder("ge2e")]

    def embed(self, stretches):
        return np.concatenate([p.embed(stretches) for p in self.parts], axis=1) / np.sqrt(2.0)


def _encoder(kind: str):
    if kind == "both":
        return _Both()
    if kind == "campplus":
        from captioner.speakers.campplus import CampplusEncoder

        return CampplusEncoder()
    from captioner.speakers.encoder import VoiceEncoder

    return VoiceEncoder()


def pair_eer(emb: np.ndarray, vid: np.ndarray) -> float:
    """Equal error rate of same/different-voice decisions on every pair of sentences by one
    cosine threshold (the point where false accepts equal false rejects)."""
    sims = emb @ emb.T
    iu = np.triu_indices(len(emb), 1)
    s, same = sims[iu], (vid[:, None] == vid[None, :])[iu]
    if same.all() or not same.any():
        return 0.0
    best = 1.0
    for t in np.unique(np.round(s, 3)):
        fa, fr = float(np.mean(s[~same] >= t)), float(np.mean(s[same] < t))
        best = min(best, max(fa, fr))
    return best


def separability(name: str, work: Path, encoder: str = "ge2e") -> dict:
    """The figures above for input ``name`` (rendered into ``work``)."""
    from bench.speakers import render
    from captioner.audio.fileio import load_audio

    wav, utts = render(name, work, 20)
    audio = load_audio(str(wav), 16000)
    emb = _encoder(encoder).embed([audio[int(u["start"] * 16000): int(u["end"] * 16000)] for u in utts])
    from bench.speakers import timbre

    key = (lambda v: v) if name.startswith("nat") else timbre  # espeak-ng voices: scored by timbre
    voices = sorted({key(u["voice"]) for u in utts})
    vid = np.array([voices.index(key(u["voice"])) for u in utts])
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
    return {"voices": voices, "sentences": len(utts), "pair_eer": round(pair_eer(emb, vid), 4),
            "centroids": [[round(float(x), 3) for x in row] for row in pair],
            "oracle_accuracy": float(np.mean(np.argmax(sims, axis=1) == vid)),
            "own": {"p5": round(float(np.percentile(own, 5)), 3), "p50": round(p50, 3)},
            "closer_than_own": close}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", default="set1,set2,set3,quick")
    ap.add_argument("--encoder", default="campplus,ge2e,both", help="campplus, ge2e and/or both (comma-separated)")
    ap.add_argument("--out", help="also write the JSON here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = {enc: {name: separability(name, Path(tmp), enc) for name in args.inputs.split(",") if name}
                  for enc in args.encoder.split(",")}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
