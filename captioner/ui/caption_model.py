"""Qt-free view model of the captions: committed lines, partial tails, turn boundaries.

The overlay and the main window's live view both render from a :class:`CaptionModel`
fed with :mod:`captioner.events`. The rules (DESIGN section 6, "partial words
rewriting themselves"):

* A *final* :class:`~captioner.events.TextDelta` is appended verbatim to its source's
  open line and never changes afterwards. It also clears that source's partial: a
  partial is the unstable tail *after* the committed text, so once text is committed
  the old tail is stale until the backend sends the next one.
* A *partial* delta replaces the source's partial tail (``""`` clears it). It is
  rendered apart (dimmed, italic) by the views.
* A :class:`~captioner.events.TurnBoundary` closes the source's open line; the next
  text of that source starts a new line, optionally prefixed with the source label
  ("Meeting: ").
* Each source has its own open line, so microphone and system audio never splice
  their words into one line.
* A :class:`~captioner.events.VoiceActivity` updates the source's speaking state;
  :attr:`CaptionModel.indicator` summarises every source for the live indicator dot
  (speaking beats pause beats turn over beats idle).
* Who is speaking (issue 38): a final delta's ``speaker`` id names the line's voice. A final
  delta of another speaker than the open line's starts a new line (a line never holds two
  voices). With :attr:`CaptionModel.speaker_labels` ``"change"`` (the default) an attributed
  line starts with ``"Speaker 2: "`` (the name :attr:`CaptionModel.speaker_name` gives, after a
  rename) only when its speaker differs from the previous line's; ``"every"`` labels every
  attributed line; ``"off"`` shows the source label as before. A line opened by a partial
  takes its source's last speaker until its first final text says who it is.
* Sounds (issue 49): a :class:`~captioner.events.SoundEvent` is a closed line of its own,
  ``CaptionLine.sound`` set and the text its bracketed caption (:func:`sound_caption`:
  ``"[phone ringing]"``, ``"♪ [music]"``), in the order things were heard: its source's open line
  closes first when all its words are final and its sentence ended (or the sound started
  :data:`SOUND_GAP_S` after it), so the next words start a line below the sound; a line with words
  still being said (music under speech) stays below it, at the bottom. It never joins a speech line, never gets a speaker, is never masked, and a
  speaker label "at a change" looks past it (a sound between two lines of one speaker does not
  label the second again).
* Only the newest lines are kept (``history`` closed lines plus every open line);
  the view shows as many of them as fit its line limit.
* With a ``mask`` (the profanity filter), ``final`` and ``partial`` hold the masked text
  the views draw; the model keeps what the backend wrote (``raw_final``/``raw_partial``)
  and masks final + partial together, so a word split across deltas, or across the
  final/partial border, is still found. The mask keeps the length, so offsets agree.

Nothing here imports Qt, so the rules are unit-tested with plain events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from captioner.events import Event, SoundEvent, TextDelta, TurnBoundary, VoiceActivity

#: Indicator states, strongest first (the dot shows the strongest of all sources).
INDICATOR_STATES = ("speaking", "pause", "turn_over", "idle")
#: :attr:`CaptionModel.speaker_labels` values: never, at a change of speaker, on every line.
SPEAKER_LABEL_MODES = ("off", "change", "every")
#: A sound that starts this long (s) after its source's open line's last final closes that line.
SOUND_GAP_S = 0.5
#: Sound words shown with a musical note before their brackets (the captioning convention for music).
MUSIC_WORDS = ("music", "singing", "song")
#: The glyph before a music caption (U+266A EIGHTH NOTE: in DejaVu Sans and every common UI font).
MUSIC_GLYPH = "\u266a"


def sound_caption(label: str) -> str:
    """What a view shows for a sound (issue 49): ``"[label]"``, preceded by a musical note for
    music (``"♪ [music]"``), so it reads apart from speech by its brackets and glyph, never by
    colour alone."""
    text = " ".join(str(label or "").split()).strip("[]").strip()
    if not text:
        return ""
    note = any(word in text.lower().split() for word in MUSIC_WORDS)
    return f"{MUSIC_GLYPH} [{text}]" if note else f"[{text}]"


@dataclass
class CaptionLine:
    """One caption line (a paragraph; a view may wrap it over several visual lines).

    Attributes:
        source: session label of the text ("You", "Meeting", a file name; may be "").
        label: prefix shown before the text (``"Meeting: "``) or ``""``.
        final: committed text; only ever appended to (and trimmed from the front by
            :meth:`CaptionModel.trim_front` once scrolled out of view).
        partial: unstable tail after ``final``; replaced by every partial delta.
        start: stream time (s) of the first text of the line, ``None`` before any.
        end: stream time (s) of the latest text.
        closed: True once a turn boundary ended the line.
        trimmed: characters of the line's head (label included) dropped by
            :meth:`CaptionModel.trim_front`; the label is hidden once > 0.
        serial: increasing id, so views can tell lines apart.
        raw_final, raw_partial: ``final``/``partial`` as the backend wrote them (the same
            unless the model has a mask).
        speaker: speaker id of the line's text ("Speaker 2"; ``""``: not attributed), a guess
            (the source's last speaker) until its first final text.
        before: who the line before it was said by (``speaker`` or ``"\0" + source``; ``None``:
            nobody), for the "at a change" label.
        sound: the sound's word ("music") of a sound caption's line; ``""`` for speech.
    """

    source: str
    label: str = ""
    final: str = ""
    partial: str = ""
    start: float | None = None
    end: float = 0.0
    closed: bool = False
    trimmed: int = 0
    serial: int = 0
    raw_final: str = ""
    raw_partial: str = ""
    speaker: str = ""
    before: str | None = None
    sound: str = ""

    @property
    def who(self) -> str:
        """Who said the line: its speaker id, else ``"\0" + source`` (never equal to an id)."""
        return self.speaker or "\0" + self.source

    @property
    def shown_label(self) -> str:
        """The label while the line's head is still shown, else ``""``."""
        return self.label if self.trimmed == 0 else ""

    @property
    def text(self) -> str:
        """Label + committed text + partial tail, as a view lays it out."""
        return self.shown_label + self.final + self.partial

    @property
    def is_empty(self) -> bool:
        """No committed and no partial text."""
        return not self.final and not self.partial


@dataclass
class CaptionModel:
    """Caption lines built from events, for the overlay and live views.

    Args:
        history: closed lines kept (>= 1). The overlay sets it to its line limit:
            every line takes at least one visual line, so older ones can never show.
        show_labels: prefix each new line with ``"<source>: "`` when the source has a label.
        on_close: called with each line when a turn boundary closes it.
        mask: length-preserving ``str -> str`` applied to what is shown (the profanity
            filter), or None; change it with :meth:`set_mask`.
        speaker_labels: one of :data:`SPEAKER_LABEL_MODES` (see the module docstring).
        speaker_name: speaker id -> the name shown (the run's ``Transcript.speaker_name``);
            None shows the ids. Call :meth:`relabel` after a rename.

    Attributes:
        lines: kept lines, oldest first.
        revision: increases on every change, for cheap "did anything change" checks.
    """

    history: int = 2
    show_labels: bool = True
    on_close: Callable[[CaptionLine], None] | None = None
    mask: Callable[[str], str] | None = None
    speaker_labels: str = "change"
    speaker_name: Callable[[str], str] | None = None
    lines: list[CaptionLine] = field(default_factory=list)
    revision: int = 0
    activity: dict[str, VoiceActivity] = field(default_factory=dict)
    _open: dict[str, CaptionLine] = field(default_factory=dict, repr=False)
    _serial: int = field(default=0, repr=False)
    _last_speaker: dict[str, str] = field(default_factory=dict, repr=False)  # source -> last speaker id
    _dropped_who: str | None = field(default=None, repr=False)  # who said the newest line pruned

    def apply(self, event: Event) -> bool:
        """Update the lines for one event.

        Args:
            event: any :mod:`captioner.events` event; only text deltas and turn
                boundaries change captions, others are ignored.

        Returns:
            True when the visible captions changed.
        """
        if isinstance(event, TextDelta):
            changed = self._text(event)
        elif isinstance(event, SoundEvent):
            changed = self._sound(event)
        elif isinstance(event, TurnBoundary):
            changed = self._turn(event.source)
        elif isinstance(event, VoiceActivity):
            before = self.indicator
            self.activity[event.source] = event
            return self.indicator != before  # the dot only: the text layout is unchanged
        else:
            return False
        if changed:
            self.revision += 1
            self._prune()
        return changed

    @property
    def indicator(self) -> tuple[str, float]:
        """``(state, speech probability)`` for the live dot: the strongest state of any source.

        ``state`` is one of :data:`INDICATOR_STATES`; the probability (0..1) is rounded
        to 0.1 so small flickers do not repaint.
        """
        best = ("idle", 0.0)
        for act in self.activity.values():
            state = act.state if act.state in INDICATOR_STATES else "idle"
            cand = (state, round(max(0.0, min(1.0, float(act.speech))), 1))
            if INDICATOR_STATES.index(cand[0]) < INDICATOR_STATES.index(best[0]) or (
                    cand[0] == best[0] and cand[1] > best[1]):
                best = cand
        return best

    def set_mask(self, mask: Callable[[str], str] | None) -> None:
        """Mask what is shown with ``mask`` from now on (None: show the raw text); every
        kept line is shown again."""
        self.mask = mask
        for line in self.lines:
            self._show(line)
        self.revision += 1

    def relabel(self) -> None:
        """Label every kept line again (a speaker was renamed, or the label settings changed)."""
        for line in self.lines:
            line.label = self._label(line)
        self.revision += 1

    def set_history(self, history: int) -> None:
        """Keep at most ``history`` closed lines (>= 1)."""
        self.history = max(1, int(history))
        self._prune()
        self.revision += 1

    def clear(self) -> None:
        """Forget every line (a new captioning run)."""
        self.lines.clear()
        self._open.clear()
        self.activity.clear()
        self._last_speaker.clear()
        self._dropped_who = None
        self.revision += 1

    def close_all(self) -> None:
        """Close every open line (the run stopped); partial tails are dropped."""
        for line in list(self._open.values()):
            line.raw_partial = ""
            self._show(line)
            self._close(line)
        self.activity.clear()
        self._prune()
        self.revision += 1

    def open_line(self, source: str) -> CaptionLine | None:
        """The open line of ``source``, if any."""
        return self._open.get(source)

    def trim_front(self, line: CaptionLine, chars: int) -> None:
        """Drop the first ``chars`` characters of ``line.text`` (already scrolled out of view).

        A view calls this at a visual-line start so the rest of the line wraps exactly
        as before; it bounds the memory and layout cost of a very long turn.

        Args:
            line: one of :attr:`lines`.
            chars: characters of :attr:`CaptionLine.text` to drop, ``len(shown_label)
                <= chars <= len(shown_label + final)`` and > 0 (the label goes whole;
                partial text is never trimmed). Other values are ignored.
        """
        head = len(line.shown_label)
        if chars < max(head, 1) or chars > head + len(line.final):
            return
        line.raw_final = line.raw_final[chars - head :]
        line.trimmed += chars
        self._show(line)
        self.revision += 1

    # -- internals -----------------------------------------------------------------------------
    def _show(self, line: CaptionLine) -> None:
        """Set what ``line`` shows from its raw text (masked when there is a mask; a sound never is)."""
        if self.mask is None or line.sound:
            line.final, line.partial = line.raw_final, line.raw_partial
            return
        shown = self.mask(line.raw_final + line.raw_partial)
        if len(shown) != len(line.raw_final) + len(line.raw_partial):  # not length-preserving: mask apart
            line.final, line.partial = self.mask(line.raw_final), self.mask(line.raw_partial)
            return
        cut = len(line.raw_final)
        line.final, line.partial = shown[:cut], shown[cut:]

    def _label(self, line: CaptionLine) -> str:
        """The prefix of ``line``: its speaker's name (by :attr:`speaker_labels`), else its source."""
        if line.speaker and self.speaker_labels in ("change", "every"):
            if self.speaker_labels == "every" or line.before != line.who:
                name = self.speaker_name(line.speaker) if self.speaker_name is not None else ""
                return f"{name or line.speaker}: "
            return ""
        return f"{line.source}: " if self.show_labels and line.source else ""

    def _new_line(self, source: str, start: float, speaker: str | None = None) -> CaptionLine:
        self._serial += 1
        line = CaptionLine(source=source, start=start, end=start, serial=self._serial,
                           speaker=self._last_speaker.get(source, "") if speaker is None else speaker,
                           before=self._last_who())
        line.label = self._label(line)
        self.lines.append(line)
        self._open[source] = line
        return line

    def _last_who(self) -> str | None:
        """Who said the newest line that is not a sound (the pruned one's when none is kept)."""
        for line in reversed(self.lines):
            if not line.sound:
                return line.who
        return self._dropped_who

    def _sound(self, ev: SoundEvent) -> bool:
        """A sound caption: one closed line above the open lines (see the module docstring)."""
        text = sound_caption(ev.label) if isinstance(ev.label, str) else ""
        if not text:
            return False
        self._serial += 1
        line = CaptionLine(source=ev.source, start=ev.start, end=ev.end, closed=True, serial=self._serial,
                           raw_final=text, final=text, sound=ev.label, before=self._last_who())
        line.label = self._label(line)
        mine = self._open.get(ev.source)
        if mine is not None and mine.raw_final and not mine.raw_partial.strip() and (
                mine.raw_final.rstrip().endswith((".", "?", "!")) or ev.start >= mine.end + SOUND_GAP_S):
            self._close(mine)  # its words were all said before the sound: the next words go below it
        at = len(self.lines)
        while at > 0 and not self.lines[at - 1].closed:  # the words being said stay at the bottom
            at -= 1
        self.lines.insert(at, line)
        return True

    def _text(self, ev: TextDelta) -> bool:
        line = self._open.get(ev.source)
        if ev.final:
            if not ev.text:
                if line is not None and line.raw_partial:
                    line.raw_partial = ""
                    self._show(line)
                    return True
                return False
            speaker = ev.speaker if isinstance(ev.speaker, str) else ""
            if (line is not None and speaker and speaker != line.speaker and line.raw_final.strip()
                    and ev.text.strip() and self.speaker_labels != "off"):
                line.raw_partial = ""  # another voice: its words start a line of their own
                self._show(line)
                self._close(line)
                line = None
            if line is None:
                line = self._new_line(ev.source, ev.start, speaker)
            elif not line.raw_final and ev.text.strip() and line.speaker != speaker:
                line.speaker = speaker  # the first final text says who the line is
                line.label = self._label(line)
            if speaker:
                self._last_speaker[ev.source] = speaker
            text = ev.text.lstrip() if not line.raw_final else ev.text
            line.raw_final += text
            line.raw_partial = ""
            self._show(line)
            line.end = max(line.end, ev.end)
            if line.start is None:
                line.start = ev.start
            if line.is_empty:  # text was only whitespace
                self._drop_if_empty(line)
                return False
            return True
        # partial
        if line is None:
            if not ev.text.strip():
                return False
            line = self._new_line(ev.source, ev.start)
        new = ev.text.lstrip() if not line.raw_final else ev.text
        if new == line.raw_partial:
            return False
        line.raw_partial = new
        self._show(line)
        line.end = max(line.end, ev.end)
        self._drop_if_empty(line)
        return True

    def _turn(self, source: str) -> bool:
        line = self._open.get(source)
        if line is None or not line.raw_final:
            return False  # nothing committed yet: the boundary closes nothing
        leftover = line.raw_partial
        line.raw_partial = ""
        self._show(line)
        self._close(line)
        if leftover.strip():
            nxt = self._new_line(source, line.end)
            nxt.raw_partial = leftover.lstrip()
            self._show(nxt)
        return True

    def _close(self, line: CaptionLine) -> None:
        line.closed = True
        if self._open.get(line.source) is line:
            del self._open[line.source]
        if line.is_empty:
            self.lines.remove(line)
            return
        if self.on_close is not None:
            self.on_close(line)

    def _drop_if_empty(self, line: CaptionLine) -> None:
        if line.is_empty:
            if self._open.get(line.source) is line:
                del self._open[line.source]
            if line in self.lines:
                self.lines.remove(line)

    def _prune(self) -> None:
        closed = [ln for ln in self.lines if ln.closed]
        excess = len(closed) - self.history
        if excess > 0:
            self._dropped_who = next((ln.who for ln in reversed(closed[:excess]) if not ln.sound), self._dropped_who)
            drop = set(id(ln) for ln in closed[:excess])
            self.lines = [ln for ln in self.lines if id(ln) not in drop]
