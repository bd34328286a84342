"""captioner.transcript: segments and turns, the autosave journal, and TXT/SRT/WebVTT/JSON writers.

- ``model``: ``Segment`` and the ``Transcript`` builder fed with ``captioner.events``.
- ``journal``: append-only fsynced JSON Lines journal.
- ``journal_recovery``: reading journals back: ``recover``, ``find_unfinished``, ``prune_closed``.
- ``cues``: segments -> readable subtitle cues (2 lines, 42 columns / 16 CJK characters).
- ``writers``: UTF-8, atomic TXT/SRT/VTT/JSON files.
- ``journal_writer``: ``JournalWriter`` writes and fsyncs a journal on a thread of its own.
- ``live``: ``LiveTranscript`` = transcript + journal (via its writer), journal failures as ``Notice`` events.
"""

from captioner.transcript.cues import Cue, make_cues
from captioner.transcript.journal import Journal, JournalError
from captioner.transcript.journal_recovery import find_unfinished, mark_closed, prune_closed, read_journal, recover
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import Segment, SpeakerRename, Transcript
from captioner.transcript.writers import (
    FORMATS,
    TranscriptWriteError,
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
