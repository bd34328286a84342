"""SessionModel: what this window's transcript holds, and what of it is not on disk yet.

The pane shows every run of the window -- each Start/Stop, and each crashed session
the user recovered -- so that is what Save writes (issue 13): a TXT file holds the
runs in the pane's order with the pane's separator lines; SRT, WebVTT and JSON put
the runs one after the other on one timeline (each run starts after the previous one
ended, so cue times never go backwards).

"Unsaved" is tracked per run: a run is dirty from its first shown line until its text
is on disk -- written by Save as…, or by the continuous autosave of that run. A failed
write leaves it dirty. A recovered journal is marked handled only once its text is on
disk (or the user discards it when quitting); until then a crash offers it again.

Files are written by :mod:`captioner.transcript` (never by a widget); the current run is
recorded by :class:`~captioner.ui.recorder.TranscriptRecorder`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from captioner.engine.qt_emit import emit
from captioner.events import SoundEvent, TextDelta, TurnBoundary
from captioner.transcript import Transcript, format_transcript, write_transcript
from captioner.transcript.atomic_write import write_text_atomic
from captioner.transcript.writers import format_from_path
from captioner.ui.recorder import TranscriptRecorder
from captioner.ui.transcript_view import NEW_SESSION, RECOVERED_SESSION

#: Seconds of silence put between two runs on a combined timeline (SRT, VTT, JSON).
RUN_GAP_S = 1.0


@dataclass
class Run:
    """One run shown in the pane.

    Attributes:
        transcript: its text (the recorder's live transcript while it runs).
        recovered_from: the crashed session's journal, for a recovered run.
        dirty: it has text that is not on disk yet.
        has_text: it has shown final text.
    """

    transcript: Transcript
    recovered_from: Path | None = None
    dirty: bool = False
    has_text: bool = False
    autosaved: bool = field(default=False, repr=False)


def combine(transcripts: list[Transcript], gap_s: float = RUN_GAP_S) -> Transcript:
    """One transcript of several runs, each placed after the previous one on one timeline.

    The segments are replayed through :class:`Transcript` (so sentence/length splits and
    turn ends come out as they were), shifted by the time the runs before took plus
    ``gap_s``; turn boundaries are shifted alike. ``metadata["runs"]`` keeps each run's
    metadata. Speakers keep their ids and each run's names (issue 38); a run whose speaker
    id is shown under another name than an earlier run's same id gets ``"<id> (run N)"``, so
    each speaker is saved under the name the pane showed.
    """
    merged = Transcript({"runs": [dict(t.metadata) for t in transcripts]})
    turns: list[TurnBoundary] = []
    offset = 0.0
    for number, t in enumerate(transcripts, 1):
        segments = t.segments
        if not segments:
            continue
        ids: dict[str, str] = {}  # this run's speaker id -> its id in the merged transcript
        for speaker in {seg.speaker for seg in segments if seg.speaker}:
            name = t.speaker_name(speaker)
            same = speaker not in merged.speakers and speaker not in merged.speaker_names or \
                merged.speaker_name(speaker) == name
            ids[speaker] = speaker if same else f"{speaker} (run {number})"
            merged.rename_speaker(ids[speaker], name)
        for seg in segments:
            if seg.sound:  # a sound caption stays one (issue 49), never text of a speech line
                merged.add(SoundEvent(seg.start + offset, seg.end + offset, seg.sound, 1.0, seg.source))
                continue
            closed = merged.add(TextDelta(seg.text, seg.start + offset, seg.end + offset, True, seg.source,
                                          speaker=ids.get(seg.speaker, "")))
            if seg.turn_end or not closed:
                merged.add(TurnBoundary(seg.end + offset, seg.boundary or "end_of_stream", 1.0, seg.source))
        turns.extend(TurnBoundary(b.time + offset, b.kind, b.probability, b.source) for b in t.turns)
        offset = max(offset + t.duration, merged.duration) + gap_s
    merged.close_all()
    merged.turns = turns
    return merged


class SessionModel(QObject):
    """The runs the window shows and whether they are on disk.

    Args:
        recorder: records the current run (transcript, journal, autosave).

    Signals:
        changed(): the runs, their text or their saved state changed (re-check
            :meth:`has_unsaved` and :meth:`has_text`).
    """

    changed = Signal()

    def __init__(self, recorder: TranscriptRecorder, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.recorder = recorder
        self.runs: list[Run] = []
        self._current: Run | None = None
        #: text mask for saved files (the profanity filter), or None; transcripts stay raw
        self.mask = None
        recorder.autosaved.connect(self._on_autosaved)

    # -- state -------------------------------------------------------------------------------
    def has_unsaved(self) -> bool:
        """True when a run shown in the window has text that is not on disk."""
        return any(r.dirty for r in self.runs)

    def has_text(self) -> bool:
        """True when there is anything to save."""
        return any(r.has_text for r in self.runs)

    def recovered_journals(self) -> list[Path]:
        """Journals loaded into the window whose text is not on disk yet."""
        return [r.recovered_from for r in self.runs if r.recovered_from is not None and r.dirty]

    # -- runs --------------------------------------------------------------------------------
    def begin_run(self, backend: str, sources: list[str], autosave_dir: str | None) -> None:
        """A Start: the recorder opens a new transcript (and journal) for the run."""
        self.recorder.begin(backend, sources, autosave_dir)
        self._current = Run(self.recorder.transcript, autosaved=self.recorder.autosave_path is not None)
        self.runs.append(self._current)

    def end_run(self) -> None:
        """The run stopped: close it; a run that showed nothing is forgotten."""
        self.recorder.end()
        run, self._current = self._current, None
        if run is not None and not run.has_text and run in self.runs:
            self.runs.remove(run)
        emit(self.changed)

    def text_arrived(self) -> None:
        """Final text of the current run was shown (in the pane or its live line)."""
        run = self._current
        if run is not None and not (run.has_text and run.dirty):
            run.has_text = True
            run.dirty = True
            emit(self.changed)

    def _on_autosaved(self, _path: str) -> None:
        run = self._current  # end() writes the last autosave before end_run() lets the run go
        if run is not None and run.autosaved and run.dirty:
            run.dirty = False
            emit(self.changed)

    def recover(self, path: str | os.PathLike) -> Transcript:
        """Load a crashed session's journal as a run of its own (unsaved until written).

        Raises:
            JournalError: the journal cannot be read.
        """
        transcript = self.recorder.recover(path)
        has_text = bool(transcript.segments)
        self.runs.append(Run(transcript, recovered_from=Path(path), dirty=has_text, has_text=has_text))
        if not has_text:
            self.recorder.mark_handled(path, "recovered")
        emit(self.changed)
        return transcript

    def rename_speaker(self, transcript: Transcript, speaker_id: str, name: str) -> str:
        """Name a speaker of the run whose transcript is ``transcript`` (issue 38): the current
        run's rename goes through its live transcript, so the journal records it; the run
        becomes unsaved (Save writes the new name).

        Returns:
            The name now shown for the speaker (its id when ``name`` is empty).
        """
        live = self.recorder.live
        if live is not None and live.transcript is transcript:
            problem = live.rename_speaker(speaker_id, name)
            if problem is not None:
                emit(self.recorder.notice, problem)
        else:
            transcript.rename_speaker(speaker_id, name)
        for run in self.runs:
            if run.transcript is transcript and run.has_text:
                run.dirty = True
        if live is not None and live.transcript is transcript and self.recorder.autosave_path is not None:
            self.recorder.write_autosave_later()  # the autosaved copy gets the name too
        emit(self.changed)
        return transcript.speaker_name(speaker_id)

    def speakers(self) -> list[tuple[Transcript, str]]:
        """``(transcript, speaker id)`` of every speaker heard in the runs shown, run by run (the
        current run last), in order of first appearance, for Settings' rename list."""
        return [(r.transcript, speaker) for r in self.runs for speaker in r.transcript.speakers]

    def discard_recovered(self) -> None:
        """The user threw the unsaved recovered text away (quit with Discard): don't offer it again."""
        for path in self.recovered_journals():
            self.recorder.mark_handled(path, "discarded")

    # -- saving ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike, fmt: str | None = None) -> Path:
        """Write every run shown to ``path`` (format from ``fmt`` or the suffix).

        Raises:
            LookupError: there is nothing to save (nothing was captioned or recovered).
            TranscriptWriteError: the file cannot be written (message says why).
            ValueError: unknown format.
        """
        runs = [r for r in self.runs if r.has_text]
        if not runs:
            raise LookupError("nothing to save")
        fmt = (fmt or format_from_path(path) or "txt").lower()
        if len(runs) == 1:
            written = write_transcript(runs[0].transcript, path, fmt, mask=self.mask)
        elif fmt == "txt":
            written = write_text_atomic(Path(path), self._txt(runs, self.mask))
        else:
            written = write_transcript(combine([r.transcript for r in runs]), path, fmt, mask=self.mask)
        for run in self.runs:
            run.dirty = False
            if run.recovered_from is not None:
                self.recorder.mark_handled(run.recovered_from, "recovered")
        emit(self.changed)
        return Path(written)

    @staticmethod
    def _txt(runs: list[Run], mask=None) -> str:
        """The runs as the pane shows them: each run's lines, separated as in the pane."""
        sources = {s.source for r in runs for s in r.transcript.segments}
        blocks = []
        for i, run in enumerate(runs):
            if run.recovered_from is not None:
                blocks.append(RECOVERED_SESSION + "\n")
            elif i > 0:
                blocks.append(NEW_SESSION + "\n")
            blocks.append(format_transcript(run.transcript, "txt", label_sources=len(sources) > 1, mask=mask))
        return "".join(blocks)
