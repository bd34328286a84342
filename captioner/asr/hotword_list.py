"""The user's hotword list: reading it, checking it, one clear message per problem.

Hotwords are names and terms a speech model should prefer (colleagues' names, product
names, jargon). The CLI takes them from ``--hotword WORD`` (repeatable) and
``--hotwords-file FILE``; the GUI keeps them in its settings. The built-in model biases
its own decoder towards them (:mod:`captioner.asr.moonshine.hotwords`); the remote backend sends
them to the server.

Pure Python (no numpy, no model framework): the settings dialog checks a list with it.
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

#: Most hotwords in one list. Each adds its spellings to the decoder's prefix tree; the
#: step time stays within 10 % of no list at this many (``bench/hotwords.py``), and a list
#: of names for one meeting or project is far shorter.
MAX_HOTWORDS = 500
#: Longest hotword (characters): a term or a short phrase, not a sentence.
MAX_CHARS = 60
#: Bonus on the log-probability of each next token of a hotword (natural-log units,
#: added per token). 0 turns biasing off; 10 is the most accepted (the remote server's
#: range too). The default was chosen with ``bench/hotwords.py`` (README, Hotwords).
DEFAULT_BOOST = 6.0
MIN_BOOST, MAX_BOOST = 0.0, 10.0
#: Longest hotwords file read (bytes): 500 words of 60 characters plus comments fit easily.
MAX_FILE_BYTES = 256 * 1024


class HotwordError(ValueError):
    """A hotword list the app cannot use; the message is one line saying what and how to fix it."""


def read_hotwords_file(path: str | os.PathLike) -> list[str]:
    """The hotwords in a UTF-8 text file: one per line; blank lines and ``#`` comments
    (a whole line, or the rest of a line after `` #``) are skipped.

    Raises:
        HotwordError: the file is missing, unreadable, too large, or not UTF-8 text.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise HotwordError(f"hotwords file not found: {name}") from None
    except IsADirectoryError:
        raise HotwordError(f"hotwords file {name} is a folder; give a text file with one word per line") from None
    except OSError as exc:
        raise HotwordError(f"cannot read hotwords file {name}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise HotwordError(f"hotwords file {name} is larger than {MAX_FILE_BYTES // 1024} KiB; "
                           f"give a text file with at most {MAX_HOTWORDS} words, one per line")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HotwordError(f"hotwords file {name} is not UTF-8 text; save it as plain UTF-8 text, "
                           "one word per line") from None
    if "\x00" in text:
        raise HotwordError(f"hotwords file {name} is not a text file; give plain UTF-8 text, one word per line")
    return parse_hotwords(text)


def parse_hotwords(text: str) -> list[str]:
    """The hotwords of ``text``: one per line; blank lines, lines starting with ``#`` and the
    rest of a line after `` #`` are skipped."""
    words = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].split("\t#", 1)[0].strip()
        if line and not line.startswith("#"):
            words.append(line)
    return words


def check_hotwords(words: Iterable[str], spell=None) -> tuple[str, ...]:
    """The list ``words`` cleaned (inner whitespace collapsed, duplicates dropped, order kept).

    Args:
        words: the hotwords as the user wrote them.
        spell: ``spell(word) -> str | None``, why the model cannot spell ``word`` (or None
            when it can); e.g. :func:`default_model_spelling`. None skips that check.

    Raises:
        HotwordError: an empty word, a word over :data:`MAX_CHARS` characters or with a
            control character, more than :data:`MAX_HOTWORDS` words, or a word ``spell``
            refuses.
    """
    out: list[str] = []
    seen = set()
    for raw in words:
        word = " ".join(str(raw).split())
        if not word:
            raise HotwordError("a hotword is empty; give a word or a short phrase, e.g. --hotword Siobhan")
        if any(ord(c) < 32 or ord(c) == 127 for c in word):
            raise HotwordError(f"hotword {word!r} contains a control character; give plain text")
        if len(word) > MAX_CHARS:
            raise HotwordError(f"hotword {word[:20]!r}... is longer than {MAX_CHARS} characters; "
                               "give a word or a short phrase")
        if word in seen:
            continue
        seen.add(word)
        out.append(word)
        if len(out) > MAX_HOTWORDS:
            raise HotwordError(f"more than {MAX_HOTWORDS} hotwords; keep the names and terms of this meeting "
                               f"or project (at most {MAX_HOTWORDS})")
    if spell is not None:
        for word in out:
            problem = spell(word)
            if problem:
                raise HotwordError(problem)
    return tuple(out)


def check_boost(boost: float) -> float:
    """``boost`` as a float within [:data:`MIN_BOOST`, :data:`MAX_BOOST`].

    Raises:
        HotwordError: not a number or out of range.
    """
    try:
        value = float(boost)
    except (TypeError, ValueError):
        raise HotwordError(f"hotword boost must be a number between {MIN_BOOST:g} and {MAX_BOOST:g}, "
                           f"got {boost!r}") from None
    if not MIN_BOOST <= value <= MAX_BOOST:
        raise HotwordError(f"hotword boost must be between {MIN_BOOST:g} and {MAX_BOOST:g}, got {value:g}")
    return value


def spelling_problem(word: str, tokenizer) -> str | None:
    """Why the built-in model cannot spell ``word`` with ``tokenizer``
    (a :class:`~captioner.asr.moonshine.tokenizer.Tokenizer`), or None when it can.

    A character without a piece of its own would be spelled in raw UTF-8 bytes, which the
    English model (practically) never emits: such a word would never appear, so it is refused.
    """
    from captioner.asr.moonshine.tokenizer import SPACE_MARK

    for ch in word:
        if ch != " " and ch not in tokenizer.ids:
            return (f"the built-in model cannot spell hotword {word!r}: it has no piece for {ch!r} "
                    f"(U+{ord(ch):04X}); write the word in the letters it is spoken with, e.g. without that character")
    if not tokenizer.encode(SPACE_MARK + word):
        return f"the built-in model cannot spell hotword {word!r}"
    return None


def default_model_spelling(model_dir: str | os.PathLike | None = None):
    """``spell(word)`` for :func:`check_hotwords` with the built-in model's tokenizer (read
    from ``model_dir`` or the installed model files; no model framework is loaded).

    Raises:
        HotwordError: the model files are missing or unreadable.
    """
    from captioner.asr.moonshine.tokenizer import Tokenizer

    try:
        from pathlib import Path

        from captioner.asr.moonshine.files import default_model_dir

        tokenizer = Tokenizer((Path(model_dir) if model_dir else default_model_dir()) / "tokenizer.bin")
    except Exception as exc:  # BackendError, OSError, ValueError: say it in one line
        raise HotwordError(f"cannot check the hotwords: {exc}") from exc
    return lambda word: spelling_problem(word, tokenizer)


def merge_hotwords(hotwords: Iterable[str], extra: Iterable[str]) -> tuple[str, ...]:
    """``hotwords`` (unchanged) followed by each word of ``extra`` not already among them
    (compared without case: the hotword's spelling wins), at most :data:`MAX_HOTWORDS` in
    all: the name alerts' words join the hotword list so that the model writes them (issue 49).

    Args:
        hotwords: the hotword list (already checked).
        extra: more words (the alert words); blank ones are skipped.
    """
    out = [str(w) for w in hotwords][:MAX_HOTWORDS]
    seen = {" ".join(w.split()).casefold() for w in out}
    for raw in extra:
        word = " ".join(str(raw).split())
        if word and word.casefold() not in seen and len(out) < MAX_HOTWORDS:
            seen.add(word.casefold())
            out.append(word)
    return tuple(out)


def gather(words: Sequence[str] = (), files: Sequence[str] = ()) -> list[str]:
    """``words`` followed by the words of each file in ``files``, in order.

    Raises:
        HotwordError: as :func:`read_hotwords_file`.
    """
    out = list(words)
    for path in files:
        out.extend(read_hotwords_file(path))
    return out
