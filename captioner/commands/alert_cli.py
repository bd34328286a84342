"""``listen --alert WORD`` (issue 49): print an alert line when someone else says a listed word.

Each occurrence in the final text of a source other than the microphone
(:mod:`captioner.transcript.alerts`: whole words, any case, possessives count) prints, on
standard output after the line that holds it::

    ALERT: "Maria" said by Meeting at 00:01:23

(the speaker's label where speakers are told apart; the stream time of the text). The words
join the hotword list on the default and remote backends, so the model writes them.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Callable, Iterable, TextIO

from captioner.transcript.alerts import AlertMatcher, AlertWordError, check_alert_words


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Register ``--alert WORD`` (repeatable) on ``p``."""
    p.add_argument("--alert", action="append", default=[], metavar="WORD",
                   help='print "ALERT: ..." when someone other than the microphone says WORD (a name; whole '
                        "word, any case, \"Maria's\" counts; repeatable); it is added to the hotwords")


def check_arguments(args: argparse.Namespace) -> str | None:
    """Check ``--alert`` into ``args.alert_words`` (a tuple) and add the words to ``args.hotwords``
    on the default and remote backends (after ``check_backend_arguments`` read the hotwords);
    returns a one-line usage message or None."""
    from captioner.asr.hotword_list import HotwordError, default_model_spelling, merge_hotwords

    args.alert_words = ()
    given = list(getattr(args, "alert", []) or [])
    if not given:
        return None
    try:
        words = check_alert_words(given)
    except AlertWordError as exc:
        return f"--alert: {exc}"
    if not words:
        return "--alert needs a word, e.g. --alert Maria"
    backend = getattr(args, "backend", "default")
    if backend == "default":
        try:
            spell = default_model_spelling(getattr(args, "model", None))
        except HotwordError as exc:
            return f"--alert: {exc}"
        for word in words:
            problem = spell(word)
            if problem:
                return f"--alert: {problem.replace('hotword', 'alert word')}"
    args.alert_words = words
    if backend in ("default", "remote"):
        args.hotwords = merge_hotwords(tuple(getattr(args, "hotwords", ()) or ()), words)
    return None


class AlertPrinter:
    """Feeds the event stream to an :class:`~captioner.transcript.alerts.AlertMatcher` and prints
    each alert (thread-safe: the engine calls :meth:`feed`, the command's loop :meth:`tick`).

    Args:
        words: the alert words (checked).
        ignore: labels of the microphone sources.
        out: where the lines go.
        name_of: ``name_of(speaker id) -> name`` (the transcript's ``speaker_name``), or None.
        clock: seconds for the matcher's hold (``time.monotonic``).
        before: called before a line is printed (clears a partial line on the terminal), or None.

    Attributes:
        lines: every alert line printed (tests, the bench).
    """

    def __init__(self, words: Iterable[str], ignore: Iterable[str], out: TextIO,
                 name_of: Callable[[str], str] | None = None, clock: Callable[[], float] = time.monotonic,
                 before: Callable[[], None] | None = None) -> None:
        self.matcher = AlertMatcher(words, ignore)
        self.out = out
        self.name_of = name_of
        self.clock = clock
        self.before = before
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def feed(self, event) -> None:
        """One engine event."""
        with self._lock:
            self._print(self.matcher.feed(event, self.clock()))

    def tick(self) -> None:
        """Print the held matches whose time is up (call it every ~0.1 s)."""
        with self._lock:
            if self.matcher.next_due() is not None:
                self._print(self.matcher.due(self.clock()))

    def finish(self) -> None:
        """The run ended: print what is still held."""
        with self._lock:
            self._print(self.matcher.flush())

    def _print(self, alerts) -> None:
        for alert in alerts:
            if self.before is not None:
                self.before()
            line = alert.line(self.name_of)
            self.lines.append(line)
            print(line, file=self.out, flush=True)


def printer(args: argparse.Namespace, sources: list, out: TextIO, name_of: Callable[[str], str] | None = None,
            before: Callable[[], None] | None = None) -> AlertPrinter | None:
    """The :class:`AlertPrinter` for ``--alert`` (None without it); the microphone sources' labels
    are ignored."""
    words = tuple(getattr(args, "alert_words", ()) or ())
    if not words:
        return None
    mics = [s.label for s in sources if getattr(s, "kind", "") == "microphone"]
    return AlertPrinter(words, mics, out, name_of, before=before)
