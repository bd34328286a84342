"""A line every reading of which is empty: read it again with the end token held back.

Moonshine ends some clips at the first step: the end token is its first choice on a clip that
starts inside a word ("...ning everyone, thanks for joining the call today", 4.7 s: all five
readings of :mod:`captioner.asr.moonshine.line_framing` empty, mean log-probabilities -0.27 to
-1.7). Live, a capture that starts while someone talks starts like that: every Start in the
middle of a meeting can lose its first line, and with a hotword list the bonus steered the empty
first step to a listed name instead ("Siobhan, thanks" for "...ning everyone", a false name
alert, issue 49).

So a line of at least :data:`MIN_S` seconds (the voice-activity detector heard speech there)
whose readings are all empty is read again with the end token held back for one token
(transformers' ``min_new_tokens=1``, :meth:`~captioner.asr.moonshine.model.MoonshineModel.decode`'s
``min_tokens``), in every framing, and the surest forced reading is kept if its mean token
log-probability reaches :data:`FLOOR` (a sound or noise the detector took for speech reads as a
guess the model is unsure of: left empty, as before).

No Qt; the model is duck-typed (``transcribe_scored(audio, min_tokens=1, **kw)``, and
``forces_words = True`` to say it takes ``min_tokens``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from captioner.asr.moonshine.framings import FURTHER_RATES, framed, retimed, surest

#: Shortest line (s) read again when every reading of it is empty (a shorter one may be a cough
#: or a click the detector took for speech, and has no word to lose worth a guess).
MIN_S = 1.0
#: Lowest mean token log-probability (natural log, the model's own, end token included) a forced
#: reading needs to be kept. Measured 2026-12-08 with ``bench/empty_lines.py``
#: (``bench/results/empty_lines.json``): 510 clips starting 0.15-0.45 s into a sentence of espeak-ng
#: ``set1``-``set4`` and the natural-voice ``nat4``, ``nat6quick``, ``nat12blend``: 9 read as
#: nothing, 6 of them re-read, their forced readings at -0.21 to -0.65; 144 sounds alone (no
#: speech): forced readings at -0.80 (an owl: "Oh, oh, oh") to -4.3 ("You" on a laugh). -0.7 keeps
#: every fill and no sound; the margins are thin (6 and 5 readings).
FLOOR = -0.7


def reread_empty(scored: Callable[..., tuple[str, float]], clip: np.ndarray, kw: dict,
                 sample_rate: int, rates: Sequence[float] = FURTHER_RATES) -> tuple[str, float] | None:
    """The line's forced reading, or ``None`` when it is too short, or no forced reading is sure enough.

    Args:
        scored: the model's ``transcribe_scored`` (takes ``min_tokens``).
        clip: the line's ``[n] float32`` samples at ``sample_rate`` (as cut; framed and retimed here).
        kw: the line's decode keywords (``stop``); its ``draft`` (of an empty reading) and ``bias``
            are dropped: the hotword bonus never writes a listed name where the model heard no
            word (a false name alert, issue 49).
        rates: the retimed readings' rates (:data:`~captioner.asr.moonshine.framings.FURTHER_RATES`).

    Returns:
        ``(text, mean log-probability)`` of the surest forced reading
        (:func:`~captioner.asr.moonshine.framings.surest`), when it is at least :data:`FLOOR`.

    Raises:
        BackendError: the model failed.
        DecodeCancelled: a ``stop`` in ``kw`` was set.
    """
    if len(clip) < MIN_S * sample_rate:
        return None
    kw = {k: v for k, v in kw.items() if k not in ("draft", "bias")}
    clips = [clip, framed(clip, sample_rate)] + [retimed(clip, r, sample_rate) for r in rates]
    readings = []
    for audio in clips:
        text, score = scored(audio, min_tokens=1, **kw)
        readings.append((text.strip(), float(score)))
    best = surest(readings, len(clip), sample_rate)
    return best if best[0] and best[1] >= FLOOR else None


__all__ = ["FLOOR", "MIN_S", "reread_empty"]
