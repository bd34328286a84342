"""Name alerts (issue 49): find each time a word the user listed is said by someone else.

The user lists names or words ("Alert me when someone says:" in Settings, ``listen --alert
WORD``). :class:`AlertMatcher` reads the *final* text of every source except the user's own
microphone and returns one :class:`Alert` per occurrence. Pure Python: no Qt, no model.

The matching rule (what counts as "said"; nothing fuzzy, so no other word can fire):

* whole words only: "Maria" never fires on "Mariana", "Annamaria" or "Maria2"; the characters
  before and after a match are not letters, digits or ``_``;
* case-insensitive and accent-insensitive ("maria", "MARÍA" for "Maria"): an accented letter
  is compared by its base letter (Unicode NFD without its combining marks; :func:`fold`),
  ignoring case;
* punctuation-insensitive: punctuation round a name does not matter ("Maria,", "(Maria)",
  "Maria?"), and between the words of a multi-word name or the parts of "Jean-Luc" or
  "O'Brien" any 1-3 spaces or punctuation marks stand for the space, hyphen or apostrophe
  the user typed ("Jean Luc", "O’Brien"); letters are never skipped;
* a possessive counts: "Maria's" and "Maria’s" fire for "Maria" (the apostrophe ends the
  word); "Marias" does not (another word);
* an alert word may hold letters, digits, spaces, hyphens, apostrophes and full stops only
  (:func:`check_alert_words`): "C#" would have to fire on "C", which is not what was said;
* one alert per occurrence: where two listed words overlap ("Mary" and "Mary Ann" in "Mary
  Ann"), the longest fires, once.

So in text written without spaces (Chinese, Japanese) a name fires only where punctuation or a
space bounds it: inside a sentence it is not found, since no rule can tell "玛丽" from the
start of "玛丽亚" there.

Final text is appended verbatim (:class:`~captioner.events.TextDelta`), and token models
send a word in pieces (" Mar", "ia", "na"), so matches are found in each source's running
text, not in one delta. A match is *held* while the text could still continue it: while it
ends the text so far, or, where a longer listed word begins with it ("Mary" / "Mary Ann"),
while the text after it is a beginning of that word ("Mary An": " An" may still become " Ann"). A held match fires when the next final text of its
source does not continue it, at a turn boundary of its source, :data:`HOLD_S` seconds after
it arrived (:meth:`AlertMatcher.due`), or at :meth:`AlertMatcher.flush` (end of the run); a
continued one ("Mariana") never fires. Partial hypotheses never alert. Final text never
changes once sent, and each occurrence is reported once: the matcher remembers how far it has
settled each source's text. A final delta that repeats one of the last few of its source (same
times and text) after a later one was read, i.e. old text sent again, is ignored; a repeat at the
newest time is new text (a token model can send two equal pieces in one clock step: "na", "na").
"""

from __future__ import annotations

import collections
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Iterable

from captioner.events import Event, TextDelta, TurnBoundary

#: Longest time (s, wall clock) a match that ends the text so far waits for the next piece of
#: its word: token models send the pieces of one word within a few clock steps (80-160 ms
#: each), and the issue's target is an alert within 1 s of the line's final.
HOLD_S = 0.6
#: Characters of a source's running text kept behind the settled point (a listed word is at
#: most 60 characters; 3 separator characters may stand for each space).
KEEP_CHARS = 400
#: Final deltas remembered per source to recognise one sent again.
RECENT_DELTAS = 16
#: Characters an alert word may hold besides letters and digits.
ALLOWED_MARKS = " -'’."
#: Most characters of punctuation or space that stand for one separator of a multi-part word.
MAX_GAP = 3


class AlertWordError(ValueError):
    """An alert word list the app cannot use; the message is one line: what and how to fix it."""


def fold(text: str) -> str:
    """``text`` with each accented letter replaced by its base letter (``"María"`` -> ``"Maria"``):
    a character whose canonical decomposition is one character and combining marks only (a
    Hangul syllable, which decomposes into letters, is kept whole). The same length as
    ``text``, so positions in it are positions in ``text``. Case is kept."""
    return "".join(_fold_char(ch) if ord(ch) > 127 else ch for ch in text)


def _fold_char(ch: str) -> str:
    parts = unicodedata.normalize("NFD", ch)
    if len(parts) > 1 and all(unicodedata.combining(c) for c in parts[1:]):
        return parts[0]
    return ch


def check_alert_words(words: Iterable[str]) -> tuple[str, ...]:
    """The alert words cleaned (inner whitespace collapsed, empty lines and duplicates -- ignoring
    case and accents -- dropped, order kept).

    Raises:
        AlertWordError: a word over 60 characters, with a control character or a symbol other
            than :data:`ALLOWED_MARKS`, without a letter or digit, or more than 500 words (the
            limits of the hotword list, which the words join).
    """
    from captioner.asr.hotword_list import MAX_CHARS, MAX_HOTWORDS

    out: list[str] = []
    seen = set()
    for raw in words:
        word = " ".join(str(raw).split())
        if not word:
            continue
        if len(word) > MAX_CHARS:
            raise AlertWordError(f"alert word {word[:20]!r}... is longer than {MAX_CHARS} characters; "
                                 "give a name or a short phrase")
        bad = [ch for ch in word if not (ch.isalnum() or ch in ALLOWED_MARKS)]
        if bad:
            raise AlertWordError(f"alert word {word!r} contains {bad[0]!r}; give a name or word in letters "
                                 "(spaces, hyphens and apostrophes are fine)")
        if not _tokens(word):
            raise AlertWordError(f"alert word {word!r} has no letter or digit")
        key = fold(word).casefold()
        if key in seen:
            continue
        seen.add(key)
        out.append(word)
        if len(out) > MAX_HOTWORDS:
            raise AlertWordError(f"more than {MAX_HOTWORDS} alert words; keep the names you answer to")
    return tuple(out)


def parse_alert_words(text: str) -> list[str]:
    """The alert words of a text field: one per line or comma-separated; blank entries skipped."""
    return [part.strip() for line in text.splitlines() for part in line.split(",") if part.strip()]


def _tokens(word: str) -> list[str]:
    return re.findall(r"[^\W_]+", fold(word))


def _beginnings(tokens: list[str]) -> str:
    """A regex (no anchors) of every non-empty beginning of ``tokens`` as a match writes them,
    1-:data:`MAX_GAP` separators between two: for ``["Ann", "Lee"]`` "A", "An", "Ann", "Ann ",
    "Ann L", ..., "Ann Lee"."""
    head = tokens[0]
    part = ""
    for ch in reversed(head[1:]):
        part = f"(?:{re.escape(ch)}{part})?"
    start = re.escape(head[0]) + part
    if len(tokens) == 1:
        return start
    return f"(?:{re.escape(head)}[^\\w\\n]{{1,{MAX_GAP}}}(?:{_beginnings(tokens[1:])})?|{start})"


def _clock(seconds: float) -> str:
    s = int(max(0.0, seconds)) if seconds == seconds else 0
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{sec:02d}"


@dataclass(frozen=True)
class Alert:
    """One occurrence of a listed word in someone else's final text.

    Attributes:
        word: the listed word, as the user wrote it ("Maria").
        said: the matched text as the model wrote it ("María", "jean luc"; a possessive's
            "'s" is not part of it).
        source: session label of the text ("Meeting", a file name).
        speaker: speaker id of the final that holds it ("Speaker 2"; ``""``: not attributed).
        start, end: stream seconds of the final delta(s) that hold it.
    """

    word: str
    said: str
    source: str
    speaker: str = ""
    start: float = 0.0
    end: float = 0.0

    def who(self, name_of=None) -> str:
        """Who said it: the speaker's name (``name_of(id)``, e.g. the transcript's
        ``speaker_name``) or id when attributed, else the source label."""
        if self.speaker:
            return (name_of(self.speaker) if name_of is not None else "") or self.speaker
        return self.source

    def line(self, name_of=None) -> str:
        """The terminal line: ``ALERT: "Maria" said by Meeting at 00:01:23`` (stream time)."""
        return f'ALERT: "{self.word}" said by {self.who(name_of)} at {_clock(self.start)}'


@dataclass
class _Piece:
    at: int  # offset of its first character in the source's running text
    start: float
    end: float
    speaker: str


@dataclass
class _Held:
    alert: Alert
    until: float  # wall-clock time (the caller's clock) it fires at the latest
    end: int  # offset just past the match


@dataclass
class _Source:
    text: str = ""  # folded running text (NFC, accents folded), its tail
    said: str = ""  # the same characters as written (NFC)
    base: int = 0  # offset of text[0] in the running text
    done: int = 0  # offset up to which every match is settled
    pieces: collections.deque = field(default_factory=lambda: collections.deque(maxlen=256))
    recent: collections.deque = field(default_factory=lambda: collections.deque(maxlen=RECENT_DELTAS))
    held: _Held | None = None
    newest: float = float("-inf")  # latest end (stream s) of its finals


class AlertMatcher:
    """Finds listed words in the final text of the sources it watches (see the module doc).

    Args:
        words: the listed words (checked with :func:`check_alert_words`).
        ignore: session labels whose text never alerts: the user's own microphone ("You").
        hold_s: see :data:`HOLD_S`.

    Raises:
        AlertWordError: as :func:`check_alert_words`.

    Not thread-safe: feed it from one thread.
    """

    def __init__(self, words: Iterable[str], ignore: Iterable[str] = (), hold_s: float = HOLD_S) -> None:
        self.words = check_alert_words(words)
        self.ignore = frozenset(ignore)
        self.hold_s = float(hold_s)
        self._sources: dict[str, _Source] = {}
        parts = []
        order = sorted(range(len(self.words)), key=lambda i: (-len(_tokens(self.words[i])),
                                                              -len(self.words[i])))
        gap = f"[^\\w\\n]{{1,{MAX_GAP}}}"
        for i in order:
            body = gap.join(re.escape(t) for t in _tokens(self.words[i]))
            parts.append(f"(?P<w{i}>{body})")
        self._regex = re.compile(f"(?<!\\w)(?:{'|'.join(parts)})(?!\\w)", re.IGNORECASE) if parts else None
        # words that a longer listed word begins with: held while the text after them could still
        # become that word ("Mary| An" of "Mary Ann": a token model sends " An" before "n")
        keys = [[t.casefold() for t in _tokens(w)] for w in self.words]
        self._prefix: dict[int, re.Pattern] = {}
        for i, k in enumerate(keys):
            rests = [_tokens(self.words[j])[len(k):] for j, o in enumerate(keys) if len(o) > len(k) and o[:len(k)] == k]
            if rests:
                more = "|".join(_beginnings(r) for r in rests)
                self._prefix[i] = re.compile(f"[^\\w\\n]{{0,{MAX_GAP}}}|{gap}(?:{more})", re.IGNORECASE)
        #: the most characters one match can span (tokens and the widest separators)
        self._longest = max((sum(map(len, k)) + MAX_GAP * (len(k) - 1) for k in keys), default=0)

    @property
    def active(self) -> bool:
        """True when there is at least one word to listen for."""
        return self._regex is not None

    def feed(self, event: Event, now: float) -> list[Alert]:
        """Read one event; returns the alerts it settles (usually none).

        Args:
            event: a final :class:`~captioner.events.TextDelta` adds text; a
                :class:`~captioner.events.TurnBoundary` settles a held match of its source;
                anything else (partials included) is ignored.
            now: the caller's clock (s, e.g. ``time.monotonic()``), for :data:`HOLD_S`.
        """
        if self._regex is None or getattr(event, "source", "") in self.ignore:
            return []
        if isinstance(event, TurnBoundary):
            state = self._sources.get(event.source)
            if state is None:
                return []
            out = self._release(state)
            self._append(state, "\n", event.time, event.time, "")  # no name runs across two turns
            state.done = state.base + len(state.text)
            return out
        if not isinstance(event, TextDelta) or not event.final or not event.text:
            return []
        state = self._sources.setdefault(event.source, _Source())
        key = (event.start, event.end, event.text)
        if event.end < state.newest and key in state.recent:  # an old final sent again: read already
            return []
        state.recent.append(key)
        state.newest = max(state.newest, event.end)
        self._append(state, unicodedata.normalize("NFC", event.text), event.start, event.end, event.speaker)
        return self._scan(state, event.source, now)

    def due(self, now: float) -> list[Alert]:
        """The held matches whose :data:`HOLD_S` has passed by ``now``, settled (call it
        from a timer; :meth:`next_due` says when)."""
        out: list[Alert] = []
        for state in self._sources.values():
            if state.held is not None and state.held.until <= now:
                out += self._release(state)
        return out

    def next_due(self) -> float | None:
        """When (the caller's clock) the next held match fires at the latest; None: none held."""
        times = [s.held.until for s in self._sources.values() if s.held is not None]
        return min(times) if times else None

    def flush(self) -> list[Alert]:
        """Settle every held match (the run ended: no more text can continue it)."""
        out: list[Alert] = []
        for state in self._sources.values():
            out += self._release(state)
        return out

    # -- inside -------------------------------------------------------------------------------
    @staticmethod
    def _append(state: _Source, text: str, start: float, end: float, speaker: str) -> None:
        state.pieces.append(_Piece(state.base + len(state.text), start, end, speaker))
        state.text += fold(text)
        state.said += text
        # keep KEEP_CHARS, and everything from one character before the settled point on
        cut = min(len(state.text) - KEEP_CHARS, state.done - state.base - 1)
        if cut > 0:
            state.text, state.said = state.text[cut:], state.said[cut:]
            state.base += cut

    @staticmethod
    def _release(state: _Source) -> list[Alert]:
        held, state.held = state.held, None
        if held is None:
            return []
        state.done = max(state.done, held.end)
        return [held.alert]

    def _scan(self, state: _Source, source: str, now: float) -> list[Alert]:
        out: list[Alert] = []
        before, state.held = state.held, None
        # a cut tail starts inside a word: never match at its first character
        begin = max(state.done - state.base, 1 if state.base > 0 else 0)
        size = len(state.text)
        for m in self._regex.finditer(state.text, begin):
            i = int(m.lastgroup[1:])
            alert = self._alert(state, source, i, m.start(), m.end())
            end = state.base + m.end()
            if m.end() == size or (i in self._prefix and self._prefix[i].fullmatch(state.text, m.end())):
                # the text may still continue it ("Mar|iana", "Mary| Ann"): hold it
                until = before.until if before is not None and before.end == end else now + self.hold_s
                state.held = _Held(alert, until, end)
                return out
            out.append(alert)
            state.done = end
        # no match can start before this any more: the longest one would already end in the text
        state.done = max(state.done, state.base + size - self._longest)
        return out

    def _alert(self, state: _Source, source: str, i: int, start: int, end: int) -> Alert:
        first, last = state.base + start, state.base + end - 1
        t0 = t1 = None
        speaker = ""
        for piece in state.pieces:  # in text order
            if piece.at > last:
                break
            if piece.at <= first or t0 is None:
                t0, speaker = piece.start, piece.speaker
            t1 = piece.end
        t0 = t0 if t0 is not None else 0.0
        return Alert(self.words[i], state.said[start:end], source, speaker, t0, max(t1 or t0, t0))
