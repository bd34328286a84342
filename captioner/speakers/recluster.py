"""The second pass over a whole session: every labelled stretch clustered again at once (issue 51).

Live, a stretch is labelled the moment its final comes, against centroids built from what was
said so far (:mod:`~captioner.speakers.clustering`): an early mistake (a new voice joined to a
young speaker, one voice opened twice) stays. Offline tools then re-cluster the whole recording
(diart, pyannote, 3D-Speaker's ``speakerlab/bin/infer_diarization.py``), and so does this pass,
for a file once it has been read and for a transcript that is saved:

1. the stretches with at least :data:`ANCHOR_S` of speech (the ones whose embedding can be
   trusted) are clustered by average-linkage agglomerative clustering on cosine distance
   (``scipy.cluster.hierarchy``; each stretch weighs the same), cut at :data:`CUT_DISTANCE` --
   the number of speakers comes from the data -- and never into more than ``max_speakers``;
2. a cluster of less than :data:`MIN_CLUSTER_S` of speech in all is folded into its nearest
   cluster when that one is at least :data:`FOLD_SIMILARITY` alike (one odd sentence is not a
   speaker of its own);
3. every shorter stretch goes to the cluster whose centroid it is closest to, unless it is
   less than :data:`SHORT_MARGIN` more alike to that one than to the cluster of its live label,
   which it then keeps (little voice, no strong reason to move it); a short reply the live
   labelling marked :data:`~captioner.speakers.clustering.UNSURE` gets the closest cluster only
   when it is at least :data:`UNSURE_JOIN` alike;
4. the clusters get ids: the ids of the live labels they overlap most (the Hungarian
   assignment on shared speech seconds, :func:`scipy.optimize.linear_sum_assignment`), so a
   name the reader has seen stays with its voice; with ``renumber`` (a file nobody has seen
   yet) "Speaker 1", "Speaker 2", ... in order of first appearance instead.

The thresholds were fitted on the natural-voice corpus (``bench/natural_voices.py``) with the
CAM++ encoder (``bench/speakers.py --replay``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from captioner.speakers.clustering import UNSURE, speaker_id

#: Least speech (s) in a stretch that takes part in the clustering itself.
ANCHOR_S = 1.2
#: Cosine distance at which the average-linkage tree is cut into speakers.
CUT_DISTANCE = 0.35
#: A cluster with less speech (s) than this in all is folded into its nearest one ...
MIN_CLUSTER_S = 2.5
#: ... when that one's centroid is at least this alike (two voices are rarely above 0.6).
FOLD_SIMILARITY = 0.6
#: How much more alike (cosine) a short stretch must be to another cluster to leave its live one.
SHORT_MARGIN = 0.08
#: Least similarity to a cluster's centroid that gives a stretch marked unsure a speaker.
UNSURE_JOIN = 0.6


@dataclass
class Stretch:
    """One labelled stretch of a session, as the live labelling left it.

    Attributes:
        source: the source label (``TextDelta.source``).
        start, end: stream seconds of the final text it labelled.
        embedding: ``[D] float32`` L2-normalised voice embedding, or ``None`` when the stretch
            had too little speech to embed (it then keeps its live label).
        speech_s: seconds of speech behind the embedding.
        speaker: its label now ("Speaker 2").
        fixed: True once a live correction changed its label (it is never changed again).
    """

    source: str
    start: float
    end: float
    embedding: np.ndarray | None
    speech_s: float
    speaker: str
    fixed: bool = False


def _normalise(v: np.ndarray) -> np.ndarray:
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def _centroids(emb: np.ndarray, weights: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((k, emb.shape[1]), np.float32)
    for c in range(k):
        sel = labels == c
        if sel.any():
            out[c] = _normalise((emb[sel] * weights[sel, None]).sum(axis=0))
    return out


def cluster(embeddings: np.ndarray, max_speakers: int, cut: float | None = None) -> np.ndarray:
    """Average-linkage agglomerative clustering of ``embeddings`` (``[N, D] float32``,
    L2-normalised) on cosine distance, cut at ``cut`` (default :data:`CUT_DISTANCE`), at most
    ``max_speakers`` clusters.

    Returns:
        ``[N] int`` cluster numbers 0..k-1 in order of first appearance.
    """
    n = len(embeddings)
    if n == 0:
        return np.zeros(0, int)
    if n == 1:
        return np.zeros(1, int)
    from scipy.cluster.hierarchy import fcluster, linkage

    dist = np.clip(1.0 - embeddings.astype(np.float64) @ embeddings.astype(np.float64).T, 0.0, 2.0)
    iu = np.triu_indices(n, 1)
    tree = linkage(dist[iu], method="average")
    raw = fcluster(tree, t=CUT_DISTANCE if cut is None else cut, criterion="distance")
    if len(set(raw)) > max_speakers:
        raw = fcluster(tree, t=max_speakers, criterion="maxclust")
    order: dict[int, int] = {}
    for r in raw:
        order.setdefault(int(r), len(order))
    return np.array([order[int(r)] for r in raw], int)


def relabel(stretches: Sequence[Stretch], max_speakers: int, renumber: bool = False,
            fresh_from: int = 1) -> list[str]:
    """The label of each stretch after the second pass (module docstring).

    Args:
        stretches: every labelled stretch of the session, in time order.
        max_speakers: the most speakers (``--speakers N`` is a hard cap).
        renumber: True: ids in order of first appearance; False: keep the live ids where the
            clusters overlap them.
        fresh_from: the number of the first id a cluster that matches no live id may get
            ("Speaker <fresh_from>"; ids in use are skipped).

    Returns:
        One speaker id per stretch (the live one for a stretch the pass cannot judge).
    """
    labels = [s.speaker for s in stretches]
    anchors = [i for i, s in enumerate(stretches)
               if s.embedding is not None and s.speech_s >= ANCHOR_S and s.speaker and s.speaker != UNSURE]
    if len(anchors) < 2:
        return _renumbered(stretches, labels) if renumber else labels
    emb = np.stack([np.asarray(stretches[i].embedding, np.float32) for i in anchors])
    speech = np.array([stretches[i].speech_s for i in anchors], np.float64)
    lab = cluster(emb, max_speakers)
    k = int(lab.max()) + 1
    # fold clusters with too little speech into their nearest neighbour
    while k > 1:
        totals = np.array([speech[lab == c].sum() for c in range(k)])
        small = int(np.argmin(totals))
        if totals[small] >= MIN_CLUSTER_S:
            break
        cents = _centroids(emb, speech, lab, k)
        sims = cents @ cents[small]
        sims[small] = -2.0
        near = int(np.argmax(sims))
        if sims[near] < FOLD_SIMILARITY:
            break
        lab = np.where(lab == small, near, lab)
        lab = np.where(lab > small, lab - 1, lab)
        k -= 1
    cents = _centroids(emb, speech, lab, k)
    new: list[int | None] = [None] * len(stretches)
    for j, i in enumerate(anchors):
        new[i] = int(lab[j])
    # the live label of each cluster: for short stretches to keep, and for the ids
    live_ids = sorted({s.speaker for s in stretches if s.speaker and s.speaker != UNSURE})
    overlap = np.zeros((k, len(live_ids)))
    for j, i in enumerate(anchors):
        overlap[lab[j], live_ids.index(stretches[i].speaker)] += speech[j]
    for i, s in enumerate(stretches):
        if new[i] is not None or s.embedding is None or not s.speaker:
            continue
        e = np.asarray(s.embedding, np.float32)
        if not np.any(e):
            continue
        sims = cents @ e
        best = int(np.argmax(sims))
        if s.speaker == UNSURE:  # a mark of doubt stays unless one voice is clearly it
            new[i] = best if sims[best] >= UNSURE_JOIN else None
            continue
        home = int(np.argmax(overlap[:, live_ids.index(s.speaker)])) if overlap[:, live_ids.index(
            s.speaker)].any() else best
        new[i] = best if sims[best] - sims[home] >= SHORT_MARGIN else home
    names = _cluster_ids(overlap, live_ids, fresh_from)
    out = [names[c] if c is not None else labels[i] for i, c in enumerate(new)]
    return _renumbered(stretches, out) if renumber else out


def _cluster_ids(overlap: np.ndarray, live_ids: list[str], fresh_from: int = 1) -> list[str]:
    """An id for each cluster: the live id it shares most speech with (one-to-one), fresh ids
    (from "Speaker <fresh_from>", skipping ids in use) for the rest."""
    from scipy.optimize import linear_sum_assignment

    k = overlap.shape[0]
    names: list[str | None] = [None] * k
    if live_ids:
        rows, cols = linear_sum_assignment(-overlap)
        for r, c in zip(rows, cols):
            if overlap[r, c] > 0:
                names[r] = live_ids[c]
    used = {n for n in names if n} | set(live_ids)
    number = fresh_from
    for c in range(k):
        if names[c] is None:
            while speaker_id(number) in used:
                number += 1
            names[c] = speaker_id(number)
            used.add(names[c])
    return [n or "" for n in names]


def _renumbered(stretches: Sequence[Stretch], labels: list[str]) -> list[str]:
    """``labels`` renamed "Speaker 1", "Speaker 2", ... in order of first appearance."""
    order: dict[str, str] = {}
    for s, lab in sorted(zip(stretches, labels), key=lambda p: p[0].start):
        if lab and lab != UNSURE and lab not in order:
            order[lab] = speaker_id(len(order) + 1)
    return [order.get(lab, lab) for lab in labels]


__all__ = ["Stretch", "cluster", "relabel", "relabel_events"]


def relabel_events(events: Sequence, relabelled: Sequence[tuple[Stretch, str]]) -> list:
    """``events`` with the speaker of every labelled final :class:`~captioner.events.TextDelta`
    replaced by the second pass's label of the stretch it overlaps most in time (same source);
    every other event, and a final no stretch overlaps, unchanged; the live corrections
    (:class:`~captioner.events.SpeakerFix`) left out, since this pass replaces them.

    Args:
        events: the run's events in order (what the transcript was given).
        relabelled: :meth:`captioner.speakers.registry.SpeakerRegistry.second_pass`'s answer.
    """
    import bisect
    import dataclasses

    from captioner.events import SpeakerFix, TextDelta

    events = [e for e in events if not isinstance(e, SpeakerFix)]  # the live corrections: superseded
    by_source: dict[str, list[tuple[float, float, str]]] = {}
    for s, lab in relabelled:
        by_source.setdefault(s.source, []).append((s.start, s.end, lab))
    for spans in by_source.values():
        spans.sort()
    starts = {src: [a for a, _, _ in spans] for src, spans in by_source.items()}
    out = []
    for ev in events:
        if isinstance(ev, TextDelta) and ev.final and ev.speaker and ev.source in by_source:
            spans = by_source[ev.source]
            hi = bisect.bisect_right(starts[ev.source], ev.end)
            best, best_ov = "", -1.0
            for a, b, lab in spans[max(0, hi - 64): hi]:
                ov = min(b, ev.end) - max(a, ev.start)
                if (ov > best_ov or (ov == best_ov and a == ev.start)) and (ov > 0 or (a, b) == (ev.start, ev.end)):
                    best, best_ov = lab, ov
            if best and best != ev.speaker:
                ev = dataclasses.replace(ev, speaker=best)
        out.append(ev)
    return out
