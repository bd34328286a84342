"""What a turn's text says about whether it is finished (English heuristics; no models).

Used by the turn detector (:mod:`captioner.engine.turns`) to combine the end-of-turn
classifier's probability with the words decoded so far.
"""

from __future__ import annotations

import re

#: Last words that leave a clause unfinished (English; lower case).
UNFINISHED_WORDS = frozenset(
    """
    and or but nor because since although though unless whether if while whereas that which who whom whose
    where the a an my your our their his her its this these those every each some any no
    to of in on at for with from by about into onto than as via between through over under after before
    without within during toward towards per
    should would could must might shall is are was were been being
    um uh er erm uhm hmm
    """.split()
)
_WORD = re.compile(r"[\w']+", re.UNICODE)
_UNFINISHED_END = ",;:-–—…"


def text_unfinished(text: str) -> bool:
    """True when ``text`` ends in an unfinished clause.

    A trailing comma/dash/ellipsis, or a last word from :data:`UNFINISHED_WORDS`
    ("So I think we should." -- the period a line model adds does not count).

    Args:
        text: the turn's text so far (any case, any punctuation).
    """
    body = text.strip()
    if not body:
        return False
    stripped = body.rstrip(".!?。！？\"'”’) ")
    if stripped and stripped[-1] in _UNFINISHED_END:
        return True
    if body.endswith("..."):
        return True
    words = _WORD.findall(stripped.lower())
    return bool(words) and words[-1] in UNFINISHED_WORDS


#: Share of the classifier's "not finished" probability that a finished-looking text removes.
TEXT_FINISHED_WEIGHT = 0.2


def combine(probability: float, text: str) -> float:
    """End-of-turn score from the classifier's ``probability`` and the turn's ``text``.

    * unfinished text (:func:`text_unfinished`): at most half the probability -- a
      clause cut by a thinking pause is not a turn end, whatever the intonation says;
    * text that ends in a finished-looking clause: ``1 - (1 - p) * 0.8`` (the classifier
      is unsure on synthetic or flat speech; the words tip it);
    * no text yet: the probability unchanged.

    Returns:
        A score in [0, 1] compared with :attr:`TurnSettings.threshold`.
    """
    p = min(1.0, max(0.0, float(probability)))
    if not text.strip():
        return p
    if text_unfinished(text):
        return 0.5 * p
    return 1.0 - (1.0 - p) * (1.0 - TEXT_FINISHED_WEIGHT)

