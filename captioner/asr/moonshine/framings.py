"""The framings of a completed line's audio and the choice of its final reading (issues 27, 40).

A completed line is read as cut and, unless the model is sure of that reading (:data:`SURE_LOGPROB`),
again :func:`framed` by silence; a line still unsure is read :func:`retimed` at :data:`FURTHER_RATES`;
the surest reading (:func:`surest`) is its final text. This module holds that geometry and that
choice, as plain functions of numpy arrays and scores; which readings a line gets, when and on
which thread, is :class:`~captioner.asr.moonshine.line_framing.LineReader`'s.

Measured 2026-12-02 on ``bench/voice_sets.py`` (three multi-voice espeak-ng meetings): the
moonshine-voice runtime cut the same lines (63 of 64 start and end within 0.1 s of ours, most
within 30 ms), and its clips decoded by our decoder give its text (40/40) -- yet 35 of the 64
lines read differently; a start 6 ms later turned "plants turn sunlight" into "plants join
sunlight". One framing per line: WER 12.8 / 17.0 / 24.6 % (as cut), 16.1 / 16.0 / 19.8 % (with
the silence), the old runtime 14.7 / 20.2 / 23.4 %; the surer of the two: 10.1 / 13.3 / 16.8 %.
The silence before the line also reads a clip that starts abruptly in loud sound, which alone
reads as nothing (espeak-ng speech 20x over full scale, clipped flat).

A line whose surer reading of the two is still unsure is read three more times, played 10 %
slower and 10 % and 20 % faster (:data:`FURTHER_RATES`, :func:`retimed`), and the surest of all
its readings is kept (:func:`surest`): 10.1 / 13.3 / 16.8 / 7.36 % -> 7.3 / 9.0 / 15.0 / 5.3 %
WER on the sets and the 20-minute meeting (issue 40; the rates tried are listed at
:data:`FURTHER_RATES`). A small beam search (3, length-normalised) on the two framings
gained at most 0.6 points on sets 1-3, at twice the decoder steps (on set 4 it read better
than the retimed readings, 17.8 against 19.8 %: ``bench/final_reading.py``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

#: Silence before (s) the second framing of a line.
FRAME_LEAD_S = 0.25
#: Silence after (s) the second framing of a line.
FRAME_TAIL_S = 0.6
#: A reading as cut whose mean token log-probability (natural log, end token included) is at
#: least this is kept without the second framing: the model is sure of it (60-65 % of the
#: lines of ``bench/voice_sets.py``, same WER there as always reading both).
SURE_LOGPROB = -0.1
#: Playback rates of the further framings of a line whose surer reading of the two is still
#: below :data:`SURE_LOGPROB` (:func:`retimed`): 10 % slower, 10 % and 20 % faster; the
#: surest of all its readings is the final text. Measured 2026-12-06 (issue 40), replaying
#: the lines ``captioner transcribe`` cut from ``bench/voice_sets.py``'s sets 1-3 and its
#: 20-minute meeting (WER %, sets 1 / 2 / 3 / meeting): two framings 10.1 / 13.3 / 16.8 /
#: 7.36; with (0.9, 1.1) 8.3 / 9.6 / 15.6 / 5.87; (0.85, 0.9, 1.1) 7.8 / 9.0 / 15.6 / 5.63;
#: (0.8, 0.9, 1.1) 8.3 / 9.0 / 15.6 / 5.96; **(0.9, 1.1, 1.2) 7.8 / 9.6 / 13.8 / 5.29**; a
#: beam of 3 (length-normalised) on the two framings instead 10.6 / 12.8 / 16.2 / -; four
#: plain framings (silence 0-0.5 s before, 0-1 s after) 9.6 / 12.8 / 16.2 / -. About half of
#: the lines of the sets (a third of the meeting's) are read retimed.
FURTHER_RATES = (0.9, 1.1, 1.2)
#: A line of at least this many seconds that one framing reads as words and the other as
#: nothing keeps the words, whatever the scores (Moonshine reads a clip that starts abruptly
#: in loud sound as nothing; measured 2026-12-01: the clipped sentence above).
WORDS_MIN_S = 1.0
#: Seconds of silence appended to the last line when the input ends (end of a file, Stop): a
#: line the VAD closed already ends in ~0.3 s of silence, this one ends on the last sample
#: (measured 2026-12-01: a bare 0.3 s espeak-ng "Yes." decoded as "us us us us us us", "No."
#: as "Now, now, now,"; with 0.2 s appended "Yes.", "No.", "Okay.", and the 4.6 s and 1.6 s
#: sentences ending 150 ms after their last word decode unchanged).
END_PAD_S = 0.2
SAMPLE_RATE = 16000


def framed(clip: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``clip`` (``[n] float32``) with :data:`FRAME_LEAD_S` of silence before and
    :data:`FRAME_TAIL_S` after it: ``[n + lead + tail] float32``."""
    return np.concatenate([np.zeros(int(FRAME_LEAD_S * sample_rate), np.float32), clip,
                           np.zeros(int(FRAME_TAIL_S * sample_rate), np.float32)])


def retimed(clip: np.ndarray, rate: float, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """``clip`` (``[n] float32``) played at ``rate`` times its speed (0.9: 10 % slower and lower;
    soxr resampling, pitch moves with the speed), then :func:`framed`: ``[~n / rate + lead +
    tail] float32``."""
    import soxr

    out = soxr.resample(np.asarray(clip, np.float32), sample_rate, int(round(sample_rate / rate)))
    return framed(np.asarray(out, np.float32), sample_rate)


def surest(readings: Sequence[tuple[str, float]], n_samples: int,
           sample_rate: int = SAMPLE_RATE) -> tuple[str, float]:
    """The final reading ``(text, mean log-probability)`` of a line of ``n_samples`` samples
    among its ``readings`` (the one as cut first): on a line of at least :data:`WORDS_MIN_S`,
    a reading with words over one without; then the highest score, the earliest on a tie.

    Raises:
        ValueError: ``readings`` is empty.
    """
    pool = list(readings)
    if not pool:
        raise ValueError("no reading to choose from")
    if n_samples >= WORDS_MIN_S * sample_rate and any(text for text, _ in pool):
        pool = [r for r in pool if r[0]]  # words read in one framing are not silence
    return max(pool, key=lambda reading: reading[1])  # max keeps the earliest of equal scores


def surer(cut: tuple[str, float], other: tuple[str, float], n_samples: int,
          sample_rate: int = SAMPLE_RATE) -> str:
    """The final text of a line of ``n_samples`` samples from its two readings ``(text, mean
    log-probability)``: words over nothing on a line of at least :data:`WORDS_MIN_S`, else the
    reading with the higher score (the one as cut on a tie); :func:`surest` of the two."""
    return surest((cut, other), n_samples, sample_rate)[0]
