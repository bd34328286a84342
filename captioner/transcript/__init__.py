"""captioner.transcript: segments and turns, the autosave journal, and TXT/SRT/WebVTT/JSON writers.

- ``segment``: ``Segment``, a run of final text of one source, and its JSON form.
- ``model``: the ``Transcript`` builder of segments, fed with ``captioner.events``.
- ``journal``: append-only fsynced JSON Lines journal.
- ``journal_recovery``: reading journals back: ``recover``, ``find_unfinished``, ``prune_closed``.
- ``cues``: segments -> readable subtitle cues (2 lines, 42 columns / 16 CJK characters).
- ``writers``: UTF-8, atomic TXT/SRT/VTT/JSON files.
- ``atomic_write``: the atomic (or, for pipes and devices, in-place) UTF-8 write and ``TranscriptWriteError``.
- ``journal_writer``: ``JournalWriter`` writes and fsyncs a journal on a thread of its own.
- ``live``: ``LiveTranscript`` = transcript + journal (via its writer), journal failures as ``Notice`` events.
"""

from captioner.transcript.atomic_write import TranscriptWriteError
from captioner.transcript.cues import Cue, make_cues
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.journal_recovery import find_unfinished, mark_closed, prune_closed, read_journal, recover
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import SpeakerRename, Transcript
from captioner.transcript.segment import Segment
from captioner.transcript.writers import (
    FORMATS,
    format_transcript,
    write_json,
    write_srt,
    write_transcript,
    write_txt,
    write_vtt,
)

__all__ = [
    "FORMATS",
    "Cue",
    "Journal",
    "JournalError",
    "LiveTranscript",
    "Segment",
    "SpeakerRename",
    "Transcript",
    "TranscriptWriteError",
    "find_unfinished",
    "format_transcript",
    "make_cues",
    "mark_closed",
    "prune_closed",
    "read_journal",
    "recover",
    "write_json",
    "write_srt",
    "write_transcript",
    "write_txt",
    "write_vtt",
]
