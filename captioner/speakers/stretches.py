"""Where the speech is inside a line, and where to cut its text at a change of voice (issue 38).

Two small pieces of the speaker tracker that need no model:

* :func:`speech_runs` finds the stretches of speech in a line's audio by frame energy
  (10 ms frames; a frame is speech when it is within :data:`RANGE_DB` of the line's loud
  frames and above :data:`FLOOR_DBFS`), joined across gaps shorter than
  :data:`MIN_PAUSE_S`. The line was already cut by the backend's own VAD, so this only
  has to find the pauses *inside* it, where a second voice may start.
* :func:`split_text` cuts a line's final text where a pause in its audio falls, by the
  share of the line's speech before that pause, at a sentence end when one is near
  (speakers usually finish a sentence before the next one starts), else at the nearest
  word boundary (any character in text without spaces, such as Chinese).
"""

from __future__ import annotations

import numpy as np

#: 10 ms analysis frames at 16 kHz.
FRAME = 160
#: A frame within this many dB of the line's loud frames (95th percentile) is speech.
RANGE_DB = 30.0
#: ... and above this level (dBFS): the quiet end of real speech, well above dither and hiss.
FLOOR_DBFS = -55.0
#: Silence inside a line at least this long (s) is a pause where another voice may start.
MIN_PAUSE_S = 0.15
#: Speech shorter than this (s) between pauses is a click or breath, not a stretch.
MIN_RUN_S = 0.08
#: Sentence-final characters that make a good place to cut.
SENTENCE_END = ".!?…。！？"


def speech_runs(wav: np.ndarray, sample_rate: int = 16000) -> list[tuple[int, int]]:
    """Stretches of speech in ``wav`` (``[n] float32``) as ``(start, end)`` sample indices.

    Returns:
        Non-overlapping, sorted runs, separated by pauses of at least :data:`MIN_PAUSE_S`;
        ``[]`` for silence.
    """
    n = len(wav) // FRAME
    if n == 0:
        return []
    frames = np.asarray(wav[: n * FRAME], np.float32).reshape(n, FRAME)
    db = 10.0 * np.log10(np.mean(np.square(frames, dtype=np.float64), axis=1) + 1e-12)
    loud = float(np.percentile(db, 95))
    speech = db > max(loud - RANGE_DB, FLOOR_DBFS)
    runs: list[list[int]] = []
    gap = int(round(MIN_PAUSE_S * sample_rate / FRAME))
    for i in np.flatnonzero(speech):
        if runs and i - runs[-1][1] < gap:
            runs[-1][1] = i + 1
        else:
            runs.append([int(i), int(i) + 1])
    least = MIN_RUN_S * sample_rate / FRAME
    return [(a * FRAME, b * FRAME) for a, b in runs if b - a >= least]


def split_text(text: str, share: float) -> int:
    """Index at which to cut ``text`` so that about ``share`` (0..1) of it comes first.

    Prefers the end of a sentence within a quarter of the text's length of the target, then
    the nearest space; text without spaces is cut between characters.

    Returns:
        ``0 < i < len(text)`` with both parts holding a non-space character, or ``0`` when
        the text cannot be cut so (one word).
    """
    body = text.rstrip()
    if len(body.strip()) < 2:
        return 0
    target = share * len(body)
    spaces = [i for i, c in enumerate(body) if c.isspace() and body[:i].strip() and body[i:].strip()]
    if spaces:
        ends = [i for i in spaces if body[:i].rstrip()[-1:] in SENTENCE_END]
        near = [i for i in ends if abs(i - target) <= 0.25 * len(body)]
        pool = near or spaces
        return min(pool, key=lambda i: abs(i - target))
    if not any(ord(c) >= 0x2E80 for c in body):  # one word of a spaced script: never cut inside it
        return 0
    inner = [i for i in range(1, len(body)) if body[:i].strip() and body[i:].strip()]
    if not inner:
        return 0
    ends = [i for i in inner if body[i - 1] in SENTENCE_END and abs(i - target) <= 0.25 * len(body)]
    return min(ends or inner, key=lambda i: abs(i - target))
