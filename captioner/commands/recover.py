"""``captioner recover``: list the journals a crash left unfinished and save one to a file.

The same recovery code as the desktop app's "Recover" banner
(:func:`captioner.transcript.journal_recovery.find_unfinished`, :func:`~captioner.transcript.journal_recovery.recover`,
:func:`~captioner.transcript.journal_recovery.mark_closed`): the journal is replayed through the
transcript builder, so the file equals what the app would have saved.

    captioner recover                       # list unfinished journals, newest first
    captioner recover 1 -o meeting.srt      # save the newest one (format from the suffix)
    captioner recover PATH --format json    # any journal file, printed to standard output

After a successful ``-o`` the journal is marked recovered, so the app stops offering it
(``--keep`` leaves it unfinished). Exit codes: 0 success, 1 unreadable journal or output
not writable, 2 usage error (no such journal, unknown format).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from captioner import paths
from captioner.commands.backend_options import (
    add_mask_argument,
    check_output_path,
    deliver_transcript,
    output_format,
    text_mask,
)
from captioner.transcript.journal import JournalError
from captioner.transcript.journal_recovery import describe_unfinished, find_unfinished, mark_closed, recover
from captioner.transcript.writers import FORMATS


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``recover`` on the CLI."""
    p = subparsers.add_parser(
        "recover",
        help="list journals a crash left unfinished, or save one as TXT/SRT/VTT/JSON",
        description="Without JOURNAL: list the autosave journals that were never closed (the app crashed or "
        "was killed), newest first. With JOURNAL (a number from that list or a path): write its transcript.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  captioner recover                    # list, newest first\n"
               "  captioner recover 1 -o meeting.srt   # save the newest as SRT and mark it recovered",
    )
    p.add_argument("journal", nargs="?", help="number from the list (1 = newest) or a journal file")
    p.add_argument("-o", "--output", help="write the transcript here (format from the suffix) instead of standard output")
    p.add_argument("--format", choices=FORMATS, default=None, help="output format (default: from -o's suffix, else txt)")
    p.add_argument("--keep", action="store_true", help="do not mark the journal recovered after saving it")
    add_mask_argument(p)
    p.add_argument("--json", action="store_true", help="list as JSON")
    return p


def _error(message: str) -> None:
    print(f"captioner: error: {message}", file=sys.stderr)


def _list(as_json: bool) -> int:
    found = find_unfinished()
    rows = []
    for path in found:
        try:
            rows.append(describe_unfinished(path))
        except JournalError as exc:
            rows.append({"path": str(path), "error": str(exc)})
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    if not rows:
        print(f"No unfinished sessions in {paths.journal_dir()}: nothing to recover.")
        return 0
    print(f"Unfinished sessions in {paths.journal_dir()} (newest first):")
    for i, row in enumerate(rows, 1):
        if "error" in row:
            print(f"  {i}. {row['path']}: {row['error']}")
            continue
        when = row["created"] or row["modified"]
        sources = ", ".join(row["sources"]) or "?"
        print(f"  {i}. {when}  {sources}  {row['lines']} lines, {row['seconds']:.0f} s  \"{row['preview']}\"")
        print(f"     {row['path']}")
    print("Save one with: captioner recover N -o transcript.srt")
    return 0


def _pick(which: str) -> Path | None:
    if which.isdigit() and not os.path.exists(which):
        found = find_unfinished()
        index = int(which)
        return found[index - 1] if 1 <= index <= len(found) else None
    path = Path(which)
    return path if path.is_file() else None


def run(args: argparse.Namespace) -> int:
    """Execute ``captioner recover``; returns the exit code."""
    if not args.journal:
        if args.output:
            _error("name the journal to save: captioner recover 1 -o FILE (run `captioner recover` for the list)")
            return 2
        return _list(args.json)
    fmt = output_format(args)
    if fmt not in FORMATS:
        _error(f"unknown output format {fmt!r}; use --format with one of: {', '.join(FORMATS)}")
        return 2
    path = _pick(args.journal)
    if path is None:
        _error(f"no such journal: {args.journal} (run `captioner recover` for the list)")
        return 2
    usage = check_output_path(args.output)
    if usage:
        _error(usage)
        return 2
    try:
        transcript = recover(path)
    except JournalError as exc:
        _error(str(exc))
        return 1
    problem = deliver_transcript(transcript, args.output, fmt, mask=text_mask(args))
    if problem:
        _error(problem)
        return 1
    if args.output:
        if not args.keep:
            try:
                mark_closed(path, "recovered")
            except JournalError as exc:
                print(f"captioner: warning: saved, but could not mark the journal recovered: {exc}", file=sys.stderr)
        print(f"transcript written to {args.output} ({len(transcript.segments)} segments, {fmt})", file=sys.stderr)
    return 0
