"""TranscriptView: the running transcript pane and the not-yet-closed text under it.

Each closed segment is one line, ``[m:ss] Source: text``; a segment announced again
(re-closed as the end of a turn after a sentence/length split) updates its line
instead of adding a copy. Runs are separated by "— new session —" (added only when
the new run's first line arrives, so a Start that fails leaves no empty separator)
and a recovered journal by "— recovered session —". Under the pane a label shows the
final text of the open segments and the partial tail, styled apart.

The pane holds the newest :data:`MAX_PANE_LINES` lines (about a working day of a busy
meeting is 4000 lines): older lines leave its top as new ones come, so its memory and the
cost of each new line stay the same however long the session runs (issue 30: eight hours
of captions). Nothing is lost: the whole transcript stays in the session's transcript and
journal, and Save as… and the autosave write all of it.

This is a view: it keeps no transcript of its own beyond what it shows, and writes
no files (the session model and :mod:`captioner.transcript` do). With a ``mask`` (the
profanity filter, :meth:`TranscriptView.set_mask`) it shows text masked; changing the mask
re-shows every segment line already in the pane (it keeps each line's raw text for that), so
the pane always agrees with the overlay and what Save as… writes.

For assistive technology (issue 39) the pane is named "Transcript"; each new segment line is
announced once, politely, label first (:class:`~captioner.ui.accessibility.LineAnnouncer`,
never a partial); a line's label is its speaker, else its source's label, but never a file's
name (:attr:`TranscriptView.prefixes` maps a file source's label to ``""``); and the pane's
accessible description tells the line under the caret with its time in words ("1 minute 5
seconds"), while the screen keeps ``[1:05]``.

A sound caption (issue 49, a segment with ``sound``) is a line of its own, ``[0:42] ♪ [music]``
(:func:`~captioner.ui.caption_model.sound_caption`: brackets, and a musical note for music), set
in italics: apart from speech by its brackets, glyph and slant, never by colour alone. Its label
is its source's, never a speaker's; it is announced like a line ("Meeting: [music]") and never
touches the text not yet final under the pane.
"""

from __future__ import annotations

import html
from typing import NamedTuple

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from captioner.engine.qt_emit import emit
from captioner.events import Event, TextDelta, TurnBoundary
from captioner.ui.accessibility import LineAnnouncer, spoken_duration
from captioner.ui.caption_model import sound_caption
from captioner.ui.overlay import contrast_ratio
from captioner.ui.qt_helpers import format_time

#: Height (px) the transcript pane always keeps (about five lines).
MIN_TRANSCRIPT_PX = 110
#: Most lines the pane keeps (older ones leave its top; Save as… still writes every line). A
#: line is one segment, ~100 characters; 2000 lines are 3-5 hours of a meeting. Qt holds ~7.8 kB
#: per line (measured with PySide6 6.12: 1.4 kB in the document, the rest in the plain-text
#: layout, even hidden), so the pane grows ~4 MB an hour until it is full, then stays at ~16 MB.
MAX_PANE_LINES = 2000
#: Separator lines.
NEW_SESSION = "— new session —"
RECOVERED_SESSION = "— recovered session —"
#: The pane's accessible description when the caret is on no segment line.
PANE_DESCRIPTION = ("Finished caption lines, newest last, each announced once as it arrives. A line starts "
                    "with its time in minutes and seconds, then who spoke.")


def partial_colour(text: QColor, background: QColor, minimum: float = 4.5) -> str:
    """A colour for unstable text: halfway from ``text`` to ``background``, moved back towards
    ``text`` until it reaches ``minimum`` contrast (WCAG AA, the overlay's rule)."""
    for step in range(50, -1, -5):  # percent of the way towards the background
        f = step / 100.0
        c = QColor.fromRgbF(*(t + (b - t) * f for t, b in zip(
            (text.redF(), text.greenF(), text.blueF()), (background.redF(), background.greenF(), background.blueF()))))
        if contrast_ratio(c, background) >= minimum and c.name() != text.name():
            return c.name()
    return text.name()


def segment_line(source: str, start: float, text: str) -> str:
    """The pane's line for one segment."""
    return f"[{format_time(start)}] {source + ': ' if source else ''}{text.strip()}"


class _Said(NamedTuple):
    """Who the live line's text of one source is, shaped like a segment for ``line_label``."""

    source: str
    speaker: str


class TranscriptView(QWidget):
    """The transcript pane (read-only text) and the live line under it.

    Attributes:
        mask: ``str -> str`` applied to the text shown (the profanity filter), or None.

    Signals:
        line_added(str): each line appended to the pane.
    """

    line_added = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editor = QPlainTextEdit()
        self.editor.setReadOnly(True)
        self.editor.setPlaceholderText("The transcript appears here, with times and sources.")
        self.editor.setMinimumHeight(MIN_TRANSCRIPT_PX)
        self.editor.setMaximumBlockCount(MAX_PANE_LINES)  # Qt drops the oldest lines first
        # read-only: no undo history (it kept a record of every line and masking ever inserted)
        self.editor.document().setUndoRedoEnabled(False)
        self.editor.setAccessibleName("Transcript")
        self.editor.setAccessibleDescription(PANE_DESCRIPTION)
        self.editor.setTabChangesFocus(True)  # Tab leaves the pane (read-only: no tabs to type), no focus trap
        self.editor.cursorPositionChanged.connect(self._describe_caret)
        #: announces each new segment line (its ``enabled`` is the ANNOUNCE_LINES setting)
        self.announcer = LineAnnouncer(self.editor)
        #: source label -> the label its lines start with ("" for a file source named after its file)
        self.prefixes: dict[str, str] = {}
        #: speaker id -> display name (``Transcript.speaker_name``), or None: the id is shown
        self.speaker_name = None
        self.live_label = QLabel("")
        self.live_label.setWordWrap(True)
        self.live_label.setTextFormat(Qt.TextFormat.RichText)
        self.live_label.setObjectName("live")
        # A fixed accessible name: a QLabel without one is renamed (an AT-SPI event, read out) with
        # every partial, the whole open turn each time (issue 22). Screen readers hear the pane's
        # lines, each once, as segments close.
        self.live_label.setAccessibleName("Text not final yet")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.editor, 1)
        lay.addWidget(self.live_label)
        self._open_text: dict[str, str] = {}
        self._partials: dict[str, str] = {}
        #: Lines are numbered from the first line ever appended (a "line number"); the block of
        #: line ``n`` is ``n - self._dropped()`` while it is still in the pane.
        self._appended = 0
        #: (source, start, text) of each segment shown -> its line number.
        self._segment_blocks: dict[tuple, int] = {}
        #: line number -> (source, start, raw text) of every segment line still in the pane (re-masking)
        self._raw_lines: dict[int, tuple[str, float, str]] = {}
        #: line number -> (speaker_name of its run, speaker id) of every attributed line still in the
        #: pane, so a rename relabels exactly that run's lines of that speaker (issue 38)
        self._line_speakers: dict[int, tuple] = {}
        self._open_speakers: dict[str, str] = {}  # source -> speaker of its open text (the live line)
        self._separator_pending = False
        self.mask = None

    def set_mask(self, mask) -> None:
        """Show the text masked with ``mask`` (None: as the model wrote it): the segment lines
        already in the pane (only those whose text changes are rewritten), the live line and
        everything after."""
        self.mask = mask
        for number, (source, start, text) in self._raw_lines.items():
            self._replace_line(number, segment_line(source, start, self._shown(text)))
        self._render_live()

    def _shown(self, text: str) -> str:
        return text if self.mask is None else self.mask(text)

    def line_label(self, seg) -> str:
        """The label a segment's line starts with: its speaker's display name (``seg.speaker`` through
        :attr:`speaker_name`, when it has one), else its source's label as :attr:`prefixes` maps it
        (a file's name maps to ``""``)."""
        speaker = getattr(seg, "speaker", "")
        if speaker:
            return (self.speaker_name(speaker) if self.speaker_name is not None else "") or speaker
        return self.prefixes.get(seg.source, seg.source)

    def _describe_caret(self) -> None:
        """The pane's accessible description: the line under the caret, its time in words."""
        line = self.editor.textCursor().blockNumber() + self._dropped()
        raw = self._raw_lines.get(line)
        text = PANE_DESCRIPTION if raw is None else (
            f"Line at {spoken_duration(raw[1])}" + (f", {raw[0]}" if raw[0] else ""))
        if text != self.editor.accessibleDescription():
            self.editor.setAccessibleDescription(text)

    # -- runs --------------------------------------------------------------------------------
    def begin_run(self) -> None:
        """A new run starts: its first line will come after a "— new session —" separator."""
        self._open_speakers.clear()
        self._separator_pending = self.editor.document().characterCount() > 1
        self._segment_blocks.clear()
        self._open_text.clear()
        self._partials.clear()
        self._render_live()

    def end_run(self) -> None:
        """The run ended: nothing is open any more."""
        self._partials.clear()
        self._open_text.clear()
        self._render_live()

    def add_recovered(self, segments, speaker_name=None) -> None:
        """Show a recovered session's segments under a "— recovered session —" line (its speakers
        by ``speaker_name``, the recovered ``Transcript.speaker_name``; None: the ids)."""
        self.append_line(RECOVERED_SESSION)
        current, self.speaker_name = self.speaker_name, speaker_name
        try:
            for seg in segments:
                if getattr(seg, "sound", "") and sound_caption(seg.sound):  # a sound caption, as it was shown
                    label, text = self.prefixes.get(seg.source, seg.source), sound_caption(seg.sound)
                    block = self.append_line(segment_line(label, seg.start, text), italic=True)
                    self._raw_lines[block] = (label, seg.start, text)
                elif seg.text.strip():
                    label = self.line_label(seg)
                    block = self.append_line(segment_line(label, seg.start, self._shown(seg.text)))
                    self._raw_lines[block] = (label, seg.start, seg.text)
                    self._note_speaker(block, seg)
        finally:
            self.speaker_name = current

    # -- events ------------------------------------------------------------------------------
    def apply_event(self, ev: Event) -> None:
        """Follow the open text and partial tails (text deltas and turn boundaries)."""
        if isinstance(ev, TextDelta):
            if ev.final:
                self._open_text[ev.source] = self._open_text.get(ev.source, "") + ev.text
                self._partials.pop(ev.source, None)
                if ev.speaker:
                    self._open_speakers[ev.source] = ev.speaker  # who the open text is (issue 38)
            else:
                self._partials[ev.source] = ev.text
            self._render_live()
        elif isinstance(ev, TurnBoundary):
            self._render_live()

    def show_segment(self, seg) -> bool:
        """Show a closed segment once (a segment announced again updates its line: its turn end,
        or its speaker after a :class:`~captioner.events.SpeakerFix`; it is not announced again).

        Returns:
            True when a new line with text was added.
        """
        if getattr(seg, "sound", ""):
            return self._show_sound(seg)
        key = (seg.source, seg.start, seg.text)
        label = self.line_label(seg)
        line = segment_line(label, seg.start, self._shown(seg.text))
        block = self._segment_blocks.get(key)
        if block is not None:  # re-closed as a turn end, or relabelled by the speakers' second pass
            self._replace_line(block, line)
            if block in self._raw_lines:
                self._raw_lines[block] = (label, seg.start, seg.text)
            self._note_speaker(block, seg)
            return False
        rest = self._open_text.get(seg.source, "")
        self._open_text[seg.source] = rest[len(seg.text):] if rest.startswith(seg.text) else ""
        added = False
        if seg.text.strip():
            if self._separator_pending:
                self._separator_pending = False
                self.append_line(NEW_SESSION)
            self._segment_blocks[key] = block = self.append_line(line)
            self._raw_lines[block] = (label, seg.start, seg.text)
            self._note_speaker(block, seg)
            self.announcer.line_finished(label, self._shown(seg.text))  # once: a re-announced segment returned above
            added = True
        self._render_live()
        return added

    def _show_sound(self, seg) -> bool:
        """A sound caption's line (see the module docstring), once."""
        key = (seg.source, seg.start, seg.text)
        text = sound_caption(seg.sound)
        if key in self._segment_blocks or not text:
            return False
        if self._separator_pending:
            self._separator_pending = False
            self.append_line(NEW_SESSION)
        label = self.prefixes.get(seg.source, seg.source)  # a sound is never a speaker's
        self._segment_blocks[key] = block = self.append_line(segment_line(label, seg.start, text), italic=True)
        self._raw_lines[block] = (label, seg.start, text)
        self.announcer.line_finished(label, seg.text.strip())
        return True

    # -- text --------------------------------------------------------------------------------
    def _dropped(self) -> int:
        """Lines that have left the top of the pane (:data:`MAX_PANE_LINES`)."""
        doc = self.editor.document()
        return self._appended - (0 if doc.isEmpty() else doc.blockCount())

    def _forget_dropped(self) -> None:
        """Let go of the raw text and segment keys of lines no longer in the pane."""
        first = self._dropped()
        if self._raw_lines and next(iter(self._raw_lines)) < first:
            self._raw_lines = {n: v for n, v in self._raw_lines.items() if n >= first}
        if self._segment_blocks and next(iter(self._segment_blocks.values())) < first:
            self._segment_blocks = {k: n for k, n in self._segment_blocks.items() if n >= first}
        if self._line_speakers and next(iter(self._line_speakers)) < first:
            self._line_speakers = {n: v for n, v in self._line_speakers.items() if n >= first}

    # -- speakers (issue 38) -------------------------------------------------------------------
    def _note_speaker(self, number: int, seg) -> None:
        speaker = getattr(seg, "speaker", "")
        if speaker:
            self._line_speakers[number] = (self.speaker_name, speaker)

    def speaker_at(self, block_number: int) -> tuple | None:
        """``(speaker_name, speaker id)`` of the line in block ``block_number`` (``speaker_name``:
        its run's ``Transcript.speaker_name``, or None), or None for a line without a speaker
        (a source's line, a separator)."""
        return self._line_speakers.get(block_number + self._dropped())

    def relabel_speaker(self, speaker_name, speaker: str) -> int:
        """Show the name ``speaker_name(speaker)`` gives on every line of that run's ``speaker``
        still in the pane (after a rename: past lines change too). Returns the lines relabelled."""
        label = (speaker_name(speaker) if speaker_name is not None else "") or speaker
        changed = 0
        for number, who in self._line_speakers.items():
            if who[0] == speaker_name and who[1] == speaker and number in self._raw_lines:
                _old, start, text = self._raw_lines[number]
                self._raw_lines[number] = (label, start, text)
                self._replace_line(number, segment_line(label, start, self._shown(text)))
                changed += 1
        self._render_live()  # the open text of that speaker too
        return changed

    def append_line(self, line: str, italic: bool = False) -> int:
        """Append one line to the pane; returns its line number (counted from the first line ever
        appended; it stays the same when older lines leave the top of the pane). ``italic``: set
        the line in italics (a sound caption).

        The user's selection and scroll position stay as they were (they may be reading
        back or copying); a pane scrolled to the end with nothing selected follows the
        new line.
        """
        ed = self.editor
        bar = ed.verticalScrollBar()
        mine = ed.textCursor()
        anchor, position = mine.anchor(), mine.position()
        follow = bar.value() >= bar.maximum() and not mine.hasSelection()
        kept = bar.value()
        doc = ed.document()
        end = QTextCursor(doc)
        end.movePosition(QTextCursor.MoveOperation.End)
        # one insertion per line (its block separator included): a screen reader hears the line once;
        # its own format, so a line after an italic one is upright again
        fmt = QTextCharFormat()
        if italic:
            fmt.setFontItalic(True)
        end.insertText(line if doc.isEmpty() else "\n" + line, fmt)
        self._appended += 1
        restored = QTextCursor(doc)  # a cursor at the old end would have moved with the insertion
        restored.setPosition(anchor)
        restored.setPosition(position, QTextCursor.MoveMode.KeepAnchor)
        ed.setTextCursor(restored)
        bar.setValue(bar.maximum() if follow else kept)
        emit(self.line_added, line)
        if self._appended % 256 == 0:  # amortised: the dicts never hold more than the pane + 256 lines
            self._forget_dropped()
        return self._appended - 1

    def _replace_line(self, number: int, line: str) -> None:
        block_number = number - self._dropped()
        if block_number < 0:
            return  # that line has left the pane
        block = self.editor.document().findBlockByNumber(block_number)
        if not block.isValid() or block.text() == line:
            return
        old = block.text()
        # only the part that differs is rewritten (a masked word), so the reader's selection and
        # cursor elsewhere in the line stay where they are
        head = 0
        while head < min(len(old), len(line)) and old[head] == line[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(line)) - head and old[-1 - tail] == line[-1 - tail]:
            tail += 1
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + head)
        cursor.setPosition(block.position() + len(old) - tail, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(line[head:len(line) - tail])

    def toPlainText(self) -> str:  # noqa: N802 - mirrors QPlainTextEdit for scripts and tests
        """Everything the pane shows."""
        return self.editor.toPlainText()

    def has_open_text(self) -> bool:
        """True while final text of an open segment is shown under the pane."""
        return any(t.strip() for t in self._open_text.values())

    def _render_live(self) -> None:
        pal = self.live_label.palette()
        colour = partial_colour(pal.color(QPalette.ColorRole.WindowText), pal.color(QPalette.ColorRole.Window))
        parts = []
        for source in dict.fromkeys(list(self._open_text) + list(self._partials)):
            final = self._open_text.get(source, "")
            partial = self._partials.get(source, "")
            if self.mask is not None:  # together: a word across the final/partial border is found
                shown = self.mask(final + partial)
                if len(shown) == len(final) + len(partial):
                    final, partial = shown[: len(final)], shown[len(final):]
                else:
                    final, partial = self.mask(final), self.mask(partial)
            final, partial = final.strip(), partial.strip()
            if not final and not partial:
                continue
            prefix = self.line_label(_Said(source, self._open_speakers.get(source, "")))
            label = f"<b>{html.escape(prefix)}:</b> " if prefix else ""
            tail = f" <i style='color:{colour}'>{html.escape(partial)}</i>" if partial else ""
            parts.append(f"{label}{html.escape(final)}{tail}")
        self.live_label.setText("<br>".join(parts))

    def live_text(self) -> str:
        """The not-yet-closed text shown under the pane (rich text)."""
        return self.live_label.text()
