"""The caption page's record of a session: caption operations numbered in order, for any viewer.

:class:`CaptionHub` turns :mod:`captioner.events` into small *operations* the page applies,
each with a sequence number (``seq``, 1, 2, ... within an *epoch*; a new captioning run starts a
new epoch):

- ``{"t": "final", "src": S, "at": K, "text": T}``: the open line of source ``S`` now has the
  committed text ``line[:K] + T`` (``K`` is the length already shown, except when the profanity
  mask re-masks a word that a later delta completed). The first text of a line has its leading
  spaces removed, as the overlay does (:mod:`captioner.ui.caption_model`). A final delta with a
  speaker (``TextDelta.speaker``, issue 38) adds ``"spk": ID`` ("Speaker 2"). When that id
  differs from the speaker of an open line that has committed text, the op starts a *new* line
  (``at`` 0) and the old one closes unmarked (another voice, not a turn end; its partial tail is
  dropped) -- the rule of :class:`captioner.transcript.model.Transcript`, so a line never holds
  two voices. A final without ``spk`` joins the open line whatever its speaker.
- ``{"t": "partial", "src": S, "text": T}``: the unstable tail after the committed text of
  ``S``'s open line (``""`` clears it; shown in italics). A partial with no open line opens one.
- ``{"t": "turn", "src": S}``: the speaker's turn ended: ``S``'s open line closes (the page
  marks it). A partial tail that was still open moves to a new line (the next op says so).
- ``{"t": "sound", "src": S, "label": L, "text": T, "note": B}``: a sound that is not speech
  started in ``S`` (issue 49): a closed line of its own with the bracketed caption ``T``
  (``"[music]"``), set apart from speech (italic, and a musical note before it when ``B``); it
  never joins, closes or splits ``S``'s open line, never gets a speaker, and is never masked.
- ``{"t": "name", "spk": ID, "name": N}``: speaker ``ID`` is shown as ``N`` on every line, past
  and future (``""``: as the id again); from :meth:`CaptionHub.rename_speaker`. Names outlive a
  reset (speaker ids are kept over Stop/Start): each new epoch starts with the names given.

Finals, sounds and turns are kept (the whole session's transcript, :meth:`since`); of the partials only
each source's latest, of the names each speaker's latest. A viewer that reconnects says the last ``(epoch, seq)`` it applied and
gets exactly what came after it (plus the current partials), so no line is shown twice or lost.

Thread-safety: :meth:`publish` is called from the engine's or the GUI's thread and does no more
than append to a queue and wake the server (``wake``); the conversion (masking included) runs in
:meth:`drain`, on the server's thread. Nothing here imports Qt or asyncio.
"""

from __future__ import annotations

import collections
import heapq
import json
import secrets
import threading
from dataclasses import dataclass, field
from typing import Callable

from captioner.events import SoundEvent, TextDelta, TurnBoundary
from captioner.transcript.model import SpeakerRename, clean_name

#: Bytes of finals and turns (as sent) kept for late viewers and the transcript path: about 8 h
#: of speech take 10 MB (~3 ops of ~110 bytes a second). Past it the oldest go, and a viewer
#: asking for them gets the session from the oldest kept op.
MAX_LOG_BYTES = 64 * 2**20
#: Events waiting for the server's thread at most; past it :meth:`CaptionHub.publish` converts
#: them itself (back-pressure instead of unbounded memory when the server thread cannot keep up).
MAX_INBOX = 5000


#: Characters of a line's end that the mask sees again with new text (whole words; the longest
#: listed phrase is far shorter), so a long turn costs the same per delta as a short one.
MASK_TAIL = 96


@dataclass
class _Line:
    """A source's open line: its length, and the raw/shown text of its last words."""

    length: int = 0  # characters of committed text the page has for this line
    raw_tail: str = ""  # last words of the committed text, as the model wrote them
    shown_tail: str = ""  # the same, as the page shows them (masked)
    raw_partial: str = ""
    shown_partial: str = ""
    speaker: str = ""  # the speaker id of its committed text ("" = none given)

    def keep_tail(self) -> None:
        """Drop all but the last :data:`MASK_TAIL` characters, cut at a space (never inside a word)."""
        if len(self.raw_tail) > MASK_TAIL:
            cut = self.raw_tail.find(" ", len(self.raw_tail) - MASK_TAIL)
            if cut < 0:  # no space in the tail: no word is that long, so this is no word to mask
                cut = len(self.raw_tail) - MASK_TAIL
            self.raw_tail, self.shown_tail = self.raw_tail[cut:], self.shown_tail[cut:]


@dataclass(frozen=True, slots=True)
class Op:
    """One numbered operation.

    Attributes:
        seq: sequence number within the epoch (1, 2, ...).
        wire: the operation encoded once as a Server-Sent Events message (``bytes``, UTF-8 JSON).
    """

    seq: int
    wire: bytes

    @property
    def data(self) -> dict:
        """The JSON dict the page applies (``seq`` included)."""
        return json.loads(self.wire.split(b"data: ", 1)[1])


def sse_message(data: dict, event_id: str | None = None) -> bytes:
    """``data`` as one Server-Sent Events message (JSON on one ``data:`` line; ids are
    ``"EPOCH.SEQ"`` so a browser's automatic reconnect sends them back as ``Last-Event-ID``)."""
    head = f"id: {event_id}\n" if event_id else ""
    return (head + "data: " + json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n\n").encode()


@dataclass
class CaptionHub:
    """Numbered caption operations of the current session, for every viewer.

    Args:
        mask: length-preserving ``str -> str`` applied to what viewers see (the profanity
            filter), or None; change it with :meth:`set_mask`.

    Attributes:
        epoch: random id of the current session (changes on :meth:`reset`).
        wake: called (from :meth:`publish`'s thread) when new events wait for :meth:`drain`;
            the server sets it to a ``loop.call_soon_threadsafe`` wrapper.
        listeners: called on the draining thread with the new :class:`Op` list, and with
            ``None`` after a reset.
    """

    mask: Callable[[str], str] | None = None
    epoch: str = field(default_factory=lambda: secrets.token_hex(4))
    wake: Callable[[], None] | None = None
    listeners: list = field(default_factory=list)
    _inbox: collections.deque = field(default_factory=collections.deque, repr=False)
    _log: collections.deque = field(default_factory=collections.deque, repr=False)
    _log_bytes: int = 0
    _pending: list = field(default_factory=list, repr=False)  # converted, not yet delivered (None = reset)
    _inbox_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _partials: dict = field(default_factory=dict, repr=False)  # source -> latest partial Op
    _lines: dict = field(default_factory=dict, repr=False)  # source -> its open _Line
    _names: dict = field(default_factory=dict, repr=False)  # speaker id -> its latest "name" Op
    _seq: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _wake_pending: bool = False

    # -- any thread --------------------------------------------------------------------------
    def publish(self, event) -> None:
        """Queue one event (text deltas, turn boundaries, sounds and
        :class:`~captioner.transcript.model.SpeakerRename` matter; others are ignored).

        Cheap and non-blocking: safe on the engine's thread. ``"reset"`` (the string) starts
        a new session in order with the events around it.
        """
        if not (isinstance(event, (TextDelta, TurnBoundary, SpeakerRename, SoundEvent)) or event == "reset"):
            return
        with self._inbox_lock:
            last = self._inbox[-1] if self._inbox else None
            if (isinstance(event, TextDelta) and not event.final and isinstance(last, TextDelta)
                    and not last.final and last.source == event.source):
                self._inbox[-1] = event  # a partial replaces the one still waiting: only the newest counts
            else:
                self._inbox.append(event)
            full = len(self._inbox) > MAX_INBOX
        if full:  # the server's thread is behind: convert here, it only delivers
            self.drain(deliver=False)
        if not self._wake_pending and self.wake is not None:
            self._wake_pending = True
            try:
                self.wake()
            except RuntimeError:  # the server's loop just closed: the next drain picks it up
                self._wake_pending = False

    def reset(self) -> None:
        """Start a new session (a new captioning run): viewers clear their page."""
        self.publish("reset")

    def rename_speaker(self, speaker_id: str, name: str) -> None:
        """Show speaker ``speaker_id`` as ``name`` on every connected page, on its past lines and
        its next ones, and on pages opened later (this epoch and the next ones).

        Args:
            speaker_id: a ``TextDelta.speaker`` id ("Speaker 2"); ``""`` or a non-string is
                ignored. It need not have spoken yet.
            name: the new name, cleaned as the transcript cleans it
                (:func:`captioner.transcript.model.clean_name`: one line, at most 60
                characters); ``""`` goes back to showing the id.

        Any thread, non-blocking (the same as ``publish(SpeakerRename(speaker_id, name))``);
        the page gets ``{"t": "name", "spk": ID, "name": N}``.
        """
        self.publish(SpeakerRename(speaker_id, name))

    def set_mask(self, mask: Callable[[str], str] | None) -> None:
        """Mask what viewers see from the next text on (None: the model's text)."""
        with self._lock:
            self.mask = mask

    def drain(self, deliver: bool = True) -> list[Op]:
        """Turn the queued events into operations; with ``deliver``, hand every operation not yet
        handed out to the listeners, in order.

        Only one thread delivers while a server runs: the server's (its ``wake`` and its
        :meth:`since`). :meth:`publish` converts without delivering when the server falls behind.

        Returns:
            the operations delivered now (after a reset: those after the last reset).
        """
        self._wake_pending = False
        with self._lock:
            while True:
                with self._inbox_lock:
                    if not self._inbox:
                        break
                    ev = self._inbox.popleft()
                if ev == "reset":
                    names = self._reset_locked()
                    self._pending.append(None)
                    self._pending += names
                elif isinstance(ev, TextDelta):
                    self._pending += self._text(ev)
                elif isinstance(ev, SpeakerRename):
                    self._pending += self._rename(ev)
                elif isinstance(ev, SoundEvent):
                    self._pending += self._sound(ev)
                else:
                    self._pending += self._turn(ev.source)
            if not deliver:
                return []
            batch, self._pending = self._pending, []
        delivered: list[Op] = []
        run: list[Op] = []
        for item in batch:
            if item is None:  # a reset: what came before it first, then the reset
                self._notify(run)
                self._notify(None)
                run, delivered = [], []
            else:
                run.append(item)
                delivered.append(item)
        self._notify(run)
        return delivered

    def _notify(self, ops: list[Op] | None) -> None:
        if ops is None or ops:
            for listener in list(self.listeners):
                listener(ops)

    def since(self, epoch: str | None, seq: int) -> tuple[bool, list[Op]]:
        """What a viewer that applied ``(epoch, seq)`` has missed.

        Args:
            epoch: the epoch of the viewer's last op, or None for a new viewer.
            seq: its last sequence number (0 = none).

        Returns:
            ``(reset, ops)``: ``reset`` is True when the viewer must clear its page first
            (another session, or older than the oldest op kept); ``ops`` are the kept finals
            and turns after ``seq``, the current partials and speaker names after ``seq``, all
            in ``seq`` order (the page skips an op numbered below one it applied).
        """
        self.drain()
        with self._lock:
            reset = epoch != self.epoch or (bool(self._log) and seq < self._log[0].seq - 1)
            after = 0 if reset else seq
            ops = [op for op in self._log if op.seq > after] if after else list(self._log)
            extra = [op for op in self._partials.values()  # an empty one clears a tail the viewer has
                     if op.seq > after and (after or op.data["text"])]
            extra += [op for op in self._names.values() if op.seq > after and (after or op.data["name"])]
            if extra:
                ops = list(heapq.merge(ops, sorted(extra, key=lambda op: op.seq), key=lambda op: op.seq))
            return reset, ops

    @property
    def last_seq(self) -> int:
        """The newest sequence number handed out in this epoch (0 before any)."""
        return self._seq

    # -- internals (draining thread, under the lock) ---------------------------------------------
    def _reset_locked(self) -> list[Op]:
        """A new epoch; returns its first ops: the speaker names given so far, renumbered."""
        self.epoch = secrets.token_hex(4)
        self._seq = 0
        self._log.clear()
        self._log_bytes = 0
        self._partials.clear()
        self._lines.clear()
        named = [op.data for op in self._names.values() if op.data["name"]]
        self._names.clear()
        return [self._name_op(d["spk"], d["name"]) for d in named]

    def _name_op(self, speaker: str, name: str) -> Op:
        self._seq += 1
        data = {"t": "name", "spk": speaker, "name": name, "seq": self._seq}
        op = self._names[speaker] = Op(self._seq, sse_message(data, f"{self.epoch}.{self._seq}"))
        return op

    def _rename(self, ev: SpeakerRename) -> list[Op]:
        if not isinstance(ev.speaker, str) or not ev.speaker:
            return []
        name = clean_name(ev.name)
        name = "" if name == ev.speaker else name
        old = self._names.get(ev.speaker)
        if (old.data["name"] if old is not None else "") == name:
            return []
        return [self._name_op(ev.speaker, name)]

    def _op(self, data: dict, keep: bool) -> Op:
        self._seq += 1
        data["seq"] = self._seq
        op = Op(self._seq, sse_message(data, f"{self.epoch}.{self._seq}"))
        if keep:
            self._log.append(op)
            self._log_bytes += len(op.wire)
            while self._log_bytes > MAX_LOG_BYTES:
                self._log_bytes -= len(self._log.popleft().wire)
        else:
            self._partials[data["src"]] = op
        return op

    def _shown(self, text: str) -> str:
        return text if self.mask is None else self.mask(text)

    def _text(self, ev: TextDelta) -> list[Op]:
        line = self._lines.get(ev.source)
        if line is None:
            if not ev.text.strip():
                return []
            line = self._lines[ev.source] = _Line()
        ops: list[Op] = []
        if ev.final:
            speaker = ev.speaker if isinstance(ev.speaker, str) else ""
            if speaker and speaker != line.speaker:
                if line.length:  # another voice: a new line (the page does the same on "spk")
                    line = self._lines[ev.source] = _Line()
                    self._partials.pop(ev.source, None)  # the page drops the old line's tail
                line.speaker = speaker
            text = ev.text.lstrip() if not line.length else ev.text
            raw = line.raw_tail + text
            shown = self._shown(raw)
            if len(shown) != len(raw):  # not length-preserving: never re-mask what was sent
                shown = line.shown_tail + self._shown(text)
            old = line.shown_tail
            i = len(old) if self.mask is None else next(
                (k for k, (a, b) in enumerate(zip(old, shown)) if a != b), min(len(old), len(shown)))
            base = line.length - len(old)
            line.raw_tail, line.shown_tail, line.raw_partial = raw, shown, ""
            line.length = base + len(shown)
            if shown != old:
                data = {"t": "final", "src": ev.source, "at": base + i, "text": shown[i:]}
                if speaker:
                    data["spk"] = speaker
                ops.append(self._op(data, True))
            line.keep_tail()
        else:
            line.raw_partial = ev.text.lstrip() if not line.length else ev.text
        ops += self._partial(ev.source, line)
        if not line.length and not line.raw_partial:
            del self._lines[ev.source]
        return ops

    def _partial(self, source: str, line: _Line) -> list[Op]:
        if self.mask is None or not line.raw_partial:
            shown = line.raw_partial
        else:
            both = self.mask(line.raw_tail + line.raw_partial)
            cut = len(line.raw_tail)
            shown = both[cut:] if len(both) == cut + len(line.raw_partial) else self.mask(line.raw_partial)
        if shown == line.shown_partial:
            return []
        line.shown_partial = shown
        return [self._op({"t": "partial", "src": source, "text": shown}, False)]

    def _sound(self, ev: SoundEvent) -> list[Op]:
        from captioner.ui.caption_model import MUSIC_GLYPH, sound_caption  # Qt-free: the views' rule

        shown = sound_caption(ev.label) if isinstance(ev.label, str) else ""
        if not shown:
            return []
        label = shown.removeprefix(MUSIC_GLYPH).strip()[1:-1]
        data = {"t": "sound", "src": ev.source, "label": label, "text": f"[{label}]",
                "note": shown.startswith(MUSIC_GLYPH)}
        return [self._op(data, True)]

    def _turn(self, source: str) -> list[Op]:
        line = self._lines.get(source)
        if line is None or not line.length:
            return []  # nothing committed: the boundary closes nothing (as the overlay)
        leftover = line.raw_partial.lstrip()
        del self._lines[source]
        self._partials.pop(source, None)
        ops = [self._op({"t": "turn", "src": source}, True)]
        if leftover:
            nxt = self._lines[source] = _Line(raw_partial=leftover)
            ops += self._partial(source, nxt)
        return ops
