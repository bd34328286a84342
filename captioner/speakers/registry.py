"""The speakers of one run: the speaker model, the online clusters and every labelled stretch (issue 51).

:class:`SpeakerRegistry` is shared by every attributed source of a run
(:class:`~captioner.speakers.tracker.SpeakerTracker` is one source's labelling): it loads the
speaker encoder on a background thread (CAM++, GE2E where CAM++ is missing), holds the online
clusters ("Speaker 1", "Speaker 2", ...), and keeps every labelled stretch for the second pass
(:mod:`~captioner.speakers.recluster`): over a whole file before it is written
(:meth:`SpeakerRegistry.second_pass`) and, live, as corrections of lines already shown, each at
most once (:meth:`SpeakerRegistry.corrections`).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable

import numpy as np

from captioner.events import Notice, SpeakerFix
from captioner.speakers.clustering import SpeakerClusters, thresholds_for, weighted_sums
from captioner.speakers.options import SpeakerOptions
from captioner.speakers.recluster import Stretch, relabel

#: Longest wait (s) in the first labelling for the speaker model still loading.
LOAD_WAIT_S = 30.0
#: Labelled stretches a run keeps for the second pass (:meth:`SpeakerRegistry.second_pass`): about
#: 40 hours of meeting at ~8 stretches a minute, 16 MB of 192-dim embeddings at most.
KEPT_STRETCHES = 20000
#: Live, the second pass runs again after this many newly labelled stretches ...
CORRECT_EVERY = 12
#: ... over the newest this many stretches (bounded cost: ~10-20 ms on the decode thread) ...
CORRECT_WINDOW = 400
#: ... and never relabels the newest this many (a label just shown is not taken back at once) ...
CORRECT_SETTLED = 2
#: ... nor any while fewer stretches than this have been labelled (too little to cluster on) ...
CORRECT_FROM = 16
#: ... nor a stretch that is not surely its new speaker (``same_from`` alike to its centroid) or
#: is more than this (cosine) further from it than from its old speaker's: a correction must be
#: at least as sure as the label it replaces (a voice opened twice merges: both are close).
CORRECT_MARGIN = 0.05


class SpeakerRegistry:
    """The speakers of one run and the speaker model, shared by its attributed sources.

    Args:
        options: ``max_speakers``.
        load: builds the encoder (default: CAM++, else GE2E, :func:`_default_encoder`); called
            once on a background thread started here.
        vad: builds the voice-activity model that tells speech from music and noise
            (default: the shared Silero VAD, :func:`captioner.asr.vad.silero_vad`); returning
            ``None`` or raising keeps every stretch found by level.
    """

    def __init__(self, options: SpeakerOptions, load: Callable[[], object] | None = None,
                 vad: Callable[[], object] | None = None) -> None:
        self.clusters = SpeakerClusters(options.max_speakers)
        self.max_speakers = options.max_speakers
        #: every stretch labelled in this run, oldest first (:class:`~captioner.speakers.recluster.Stretch`)
        self.stretches: deque[Stretch] = deque(maxlen=KEPT_STRETCHES)
        self._since_pass = 0
        self._vad_load = vad or _default_vad
        self._vad: list = []  # [] until first used, then [the VAD or None]
        self._encoder = None
        self.error = ""
        self._told = False
        self._ready = threading.Event()
        self._load = load or _default_encoder
        threading.Thread(target=self._load_now, name="captioner-speaker-model", daemon=True).start()

    def _load_now(self) -> None:
        from captioner.native_calls import model_call

        try:
            # building ONNX Runtime's session releases the GIL: a run that ends meanwhile (a
            # file shorter than the load, ~1.5 s) must not finalise around it (status 134)
            with model_call():
                encoder = self._load()
            # the second pass's clustering, imported here once (0.3-0.4 s, a few MB of heap) rather
            # than on the decode thread at the first live correction
            import scipy.cluster.hierarchy  # noqa: F401
            import scipy.optimize  # noqa: F401
            self.clusters.thresholds = thresholds_for(getattr(encoder, "kind", "ge2e"))
            self._encoder = encoder
        except Exception as exc:  # any failure: captions go on without labels
            self.error = str(exc) or type(exc).__name__
        finally:
            self._ready.set()

    def encoder(self, wait_s: float = LOAD_WAIT_S):
        """The loaded encoder, or ``None`` when it failed (``error`` says why) or is still loading
        after ``wait_s`` seconds."""
        self._ready.wait(wait_s)
        return self._encoder

    def vad(self):
        """The voice-activity model (loaded at first use), or ``None`` when it cannot load."""
        if not self._vad:
            try:
                self._vad.append(self._vad_load())
            except Exception:  # pipecat-ai missing or its file broken: the level alone decides
                self._vad.append(None)
        return self._vad[0]

    def second_pass(self, renumber: bool = False) -> list[tuple[Stretch, str]]:
        """Cluster every stretch of the run again at once (:func:`captioner.speakers.recluster.relabel`).

        Args:
            renumber: True for a file nobody has seen labelled yet ("Speaker 1" is the first voice
                heard); False keeps the ids already shown wherever the voices agree.

        Returns:
            ``(stretch, its id now)`` for every stretch labelled in the run, oldest first; give it
            to :func:`captioner.speakers.recluster.relabel_events`.
        """
        kept = list(self.stretches)
        return list(zip(kept, relabel(kept, self.max_speakers, renumber=renumber)))

    def corrections(self, force: bool = False) -> list[SpeakerFix]:
        """Live corrections (issue 51): every :data:`CORRECT_EVERY` new stretches (or with
        ``force``, at the end of a stream) the second pass runs over the newest
        :data:`CORRECT_WINDOW` stretches, keeping the ids shown where the voices agree; a
        stretch it labels otherwise gets one :class:`~captioner.events.SpeakerFix`, once in the
        run (never the newest :data:`CORRECT_SETTLED`, except at the end), and the online
        speakers' centroids are rebuilt from the corrected labels."""
        self._since_pass += 0 if force else 1
        if not force and self._since_pass < CORRECT_EVERY:
            return []
        self._since_pass = 0
        window = list(self.stretches)[-CORRECT_WINDOW:]
        if len(window) < CORRECT_FROM:
            return []
        new = relabel(window, self.max_speakers, fresh_from=self.clusters.opened + 1)
        settled = len(window) - (0 if force else CORRECT_SETTLED)
        new_sums, _ = weighted_sums([(st.embedding, st.speech_s, ident) for st, ident in zip(window, new)])
        old_sums, _ = weighted_sums([(st.embedding, st.speech_s, st.speaker) for st in window])
        fixes = []
        for i, (st, ident) in enumerate(zip(window, new)):
            if i >= settled or not ident or ident == st.speaker or st.fixed or st.embedding is None:
                continue
            sim_new = _cosine(st.embedding, new_sums.get(ident, 0 * st.embedding))
            # its old speaker's centroid without it (it would vouch for its own label)
            sim_old = _cosine(st.embedding, old_sums.get(st.speaker, 0 * st.embedding) - st.embedding * st.speech_s)
            if sim_new >= self.clusters.thresholds.same_from and sim_new >= sim_old - CORRECT_MARGIN:
                st.speaker, st.fixed = ident, True
                fixes.append(SpeakerFix(st.start, st.end, ident, st.source))
        if fixes:
            self.clusters.rebuild([(st.embedding, st.speech_s, st.speaker) for st in window])
        return fixes

    def notice(self) -> Notice | None:
        """The one message of a run whose speaker model failed (then ``None`` ever after)."""
        if self._told or not self._ready.is_set() or self._encoder is not None:
            return None
        self._told = True
        return Notice(f"Speaker labels are off: {self.error}. Captions go on without them.",
                      "warning", "speakers_unavailable")


def _default_vad():
    from captioner.asr.vad import silero_vad

    return silero_vad()


def _default_encoder():
    """CAM++ (:class:`~captioner.speakers.campplus.CampplusEncoder`, issue 51); GE2E
    (:class:`~captioner.speakers.encoder.VoiceEncoder`) where CAM++'s package is missing or its
    file is broken (a third fewer same/different errors on natural voices; each has its own
    thresholds, :data:`~captioner.speakers.clustering.THRESHOLDS`).

    Raises:
        SpeakerModelError: neither can be loaded (the message names CAM++'s problem first).
    """
    from captioner.speakers.campplus import CampplusEncoder
    from captioner.speakers.torch_checkpoint import SpeakerModelError

    try:
        return CampplusEncoder()
    except SpeakerModelError as first:
        from captioner.speakers.encoder import VoiceEncoder

        try:
            return VoiceEncoder()
        except SpeakerModelError as second:
            raise SpeakerModelError(f"{first}; and the fallback: {second}") from second


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b) / max(float(np.linalg.norm(a)) * float(np.linalg.norm(b)), 1e-12)


def new_registry(options: SpeakerOptions | None) -> SpeakerRegistry | None:
    """The speakers of one run (starts loading the model now), or ``None`` when attribution is off."""
    if options is None or not options.enabled:
        return None
    return SpeakerRegistry(options)


__all__ = ["SpeakerRegistry", "new_registry"]
