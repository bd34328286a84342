"""What ``captioner listen`` shows while it runs, and the transcript it keeps meanwhile.

:class:`Collector` receives every event of the live captioner and:

- feeds it to the transcript and its autosave journal (:class:`~captioner.transcript.live.LiveTranscript`),
  and to the caption page (``--serve-captions``) and the name alerts (``--alert``) when they are on;
- prints each final text as its own line, ``[Meeting] text``, labelled by the speaker's name
  or id where the line is attributed (``--speakers``), else by the source;
- on a terminal (not a pipe or file), shows the partial hypothesis of the latest source on one
  line that the next partial or final overwrites, cut to the terminal's width (``--no-partials``
  turns it off);
- prints a sound caption once, on a line of its own, ``[Meeting] (sound) [phone ringing]``;
- prints notices (a device lost, the backend failing, a journal that cannot be written) to
  stderr, and keeps the errors so that ``listen`` exits with 1.

``--mask-profanity`` masks what is printed (the transcript keeps what the model wrote). Once
:meth:`Collector.finish` has run, text from a model call left running after a bounded stop is
dropped: what was printed is what is written.
"""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from typing import Any, TextIO

from captioner.events import Event, Notice, SoundEvent, TextDelta
from captioner.transcript.live import LiveTranscript


@dataclass
class Collector:
    """Prints the event stream live and feeds the transcript + journal (``LiveTranscript``)."""

    out: TextIO
    err: TextIO
    live: LiveTranscript
    partials: bool = True
    mask: Any = None  # text mask for what is printed (--mask-profanity), or None
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: list = field(default_factory=list)  # error notices (backend failure, device lost)
    finished: bool = False
    page: Any = None  # the caption page's hub (--serve-captions), or None
    page_server: Any = None  # its server, stopped by finish()
    alerts: Any = None  # --alert: the AlertPrinter, or None
    _partial_shown: bool = False

    def __call__(self, ev: Event) -> None:
        """Take one event (any thread): feed it on, print what it shows (see the module docstring)."""
        with self.lock:
            if self.finished:  # a model call left running after a bounded stop: its text comes too late
                return
            self.show_notice(self.live.add(ev))
            if self.page is not None:
                self.page.publish(ev)  # queues only: the page's own thread does the rest
            if isinstance(ev, TextDelta):
                self._delta(ev)
            elif isinstance(ev, SoundEvent):
                self.clear_partial()  # a line of its own, never inside a line of speech
                print(f"[{ev.source}] (sound) {ev.caption}", file=self.out, flush=True)
            elif isinstance(ev, Notice) and ev.code != "stopped":
                if ev.severity == "error":
                    self.failures.append(ev)
                self.clear_partial()
                print(f"[{ev.source or 'captioner'}] {ev.severity}: {ev.message}", file=self.err, flush=True)
            if self.alerts is not None:  # after the line that holds the word
                self.alerts.feed(ev)

    def tick(self) -> None:
        """Print the name alerts whose hold is over (the wait loop calls it every 0.1 s)."""
        if self.alerts is not None:
            with self.lock:
                if not self.finished:
                    self.alerts.tick()

    def _delta(self, ev: TextDelta) -> None:
        if not ev.final:
            if self.partials and self.out.isatty():
                self.clear_partial()
                if ev.text:
                    width = shutil.get_terminal_size((80, 24)).columns - 1
                    line = f"[{ev.source}] {self._shown(ev.text)}"
                    self.out.write(line if len(line) <= width else line[: width - 3] + "...")
                    self.out.flush()
                    self._partial_shown = True
            return
        if not ev.text.strip():
            return
        self.clear_partial()
        who = self.live.transcript.speaker_name(ev.speaker) or ev.source  # "Speaker 2" (or its name), else the source
        print(f"[{who}] {self._shown(ev.text.strip())}", file=self.out, flush=True)

    def _shown(self, text: str) -> str:
        return text if self.mask is None else self.mask(text)

    def show_notice(self, notice: Notice | None) -> None:
        """Print ``notice`` (the transcript's or journal's, e.g. a journal that cannot be written)
        to stderr as ``captioner: SEVERITY: message``; None prints nothing."""
        if notice is not None:
            self.clear_partial()
            print(f"captioner: {notice.severity}: {notice.message}", file=self.err, flush=True)

    def clear_partial(self) -> None:
        """Erase the partial line shown on the terminal, if any (``\\r`` + erase line), so the next
        line printed starts clean."""
        if self._partial_shown:
            self.out.write("\r\x1b[2K")
            self._partial_shown = False

    def finish(self) -> None:
        """Close open segments and the journal; clear a partial line on the terminal."""
        with self.lock:
            if self.finished:
                return
            self.finished = True
            if self.alerts is not None:
                self.alerts.finish()
            self.show_notice(self.live.close())
            self.clear_partial()
        if self.page_server is not None:  # after the last words: viewers saw them
            self.page_server.stop()


__all__ = ["Collector"]
