"""``captioner listen``: headless live captions of the microphone and/or system audio.

Prints text as it is decoded, labelled by source, writes the transcript at the end
(txt, srt, vtt or json) and, while running, appends every final line to a journal
file (JSON lines, flushed at once) so a crash loses nothing. ``--duration`` stops
after that many seconds; Ctrl-C stops cleanly and flushes the last words.

Examples::

    captioner listen --system --duration 10
    captioner listen --mic --system -o meeting.srt --format srt
    captioner listen --mic "USB" --system alsa_output.pci-0000_00_1f.3.analog-stereo
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from captioner.events import Event, Notice, TextDelta, TurnBoundary

FORMATS = ("txt", "srt", "vtt", "json")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``listen`` on the CLI."""
    p = subparsers.add_parser(
        "listen",
        help="caption the microphone and/or system audio live, without the GUI",
        description="Caption live audio in the terminal. Without --mic/--system/--file the default microphone "
        "is used. See `captioner devices` for names.",
    )
    p.add_argument("--mic", nargs="?", const="", default=None, metavar="DEVICE",
                   help="caption a microphone (default one, or a name/part of a name/index)")
    p.add_argument("--system", nargs="?", const="", default=None, metavar="SOURCE",
                   help="caption system audio (default output's monitor, or a monitor/sink name)")
    p.add_argument("--file", action="append", default=[], metavar="PATH",
                   help="caption an audio file as if it were live (repeatable; for demos and tests)")
    p.add_argument("--fast", action="store_true", help="with --file: decode as fast as possible, not in real time")
    p.add_argument("--mic-label", default="You", help="label of the microphone's text (default: You)")
    p.add_argument("--system-label", default="Meeting", help="label of the system audio's text (default: Meeting)")
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS", help="stop after this many seconds")
    p.add_argument("--backend", default="default", help="ASR backend (default, audio8, tflite, remote)")
    p.add_argument("--model", default=None, help="model path for backends that need one")
    p.add_argument("--format", choices=FORMATS, default=None, help="transcript format (default: from -o, else txt)")
    p.add_argument("-o", "--output", default=None, metavar="OUT", help="write the transcript here at the end")
    p.add_argument("--journal", default=None, metavar="PATH",
                   help="append final lines here as they arrive (default: OUT.journal.jsonl with -o)")
    p.add_argument("--no-partials", action="store_true", help="print final text only")
    return p


@dataclass
class Segment:
    """One finished stretch of text of one source (closed by a turn boundary)."""

    source: str
    start: float
    end: float
    text: str = ""


@dataclass
class _Collector:
    """Turns the event stream into segments, prints it live and journals final text."""

    out: TextIO
    err: TextIO
    journal: TextIO | None = None
    partials: bool = True
    segments: list[Segment] = field(default_factory=list)
    open: dict = field(default_factory=dict)  # source -> Segment being built
    lock: threading.Lock = field(default_factory=threading.Lock)
    failures: list = field(default_factory=list)  # error notices (backend failure, device lost)
    _partial_shown: bool = False

    def __call__(self, ev: Event) -> None:
        with self.lock:
            if isinstance(ev, TextDelta):
                self._delta(ev)
            elif isinstance(ev, TurnBoundary):
                self._close(ev.source)
            elif isinstance(ev, Notice) and ev.code != "stopped":
                if ev.severity == "error":
                    self.failures.append(ev)
                self._clear_partial()
                print(f"[{ev.source or 'captioner'}] {ev.severity}: {ev.message}", file=self.err, flush=True)

    def _delta(self, ev: TextDelta) -> None:
        if not ev.final:
            if self.partials and self.out.isatty():
                self._clear_partial()
                if ev.text:
                    width = shutil.get_terminal_size((80, 24)).columns - 1
                    line = f"[{ev.source}] {ev.text}"
                    self.out.write(line if len(line) <= width else line[: width - 3] + "...")
                    self.out.flush()
                    self._partial_shown = True
            return
        if not ev.text.strip():
            return
        seg = self.open.get(ev.source)
        if seg is None:
            seg = self.open[ev.source] = Segment(ev.source, ev.start, ev.end)
        seg.text = _join(seg.text, ev.text)
        seg.end = max(seg.end, ev.end)
        self._clear_partial()
        print(f"[{ev.source}] {ev.text.strip()}", file=self.out, flush=True)
        if self.journal is not None:
            self.journal.write(json.dumps({"source": ev.source, "start": ev.start, "end": ev.end, "text": ev.text},
                                          ensure_ascii=False) + "\n")
            self.journal.flush()

    def _close(self, source: str) -> None:
        seg = self.open.pop(source, None)
        if seg is not None and seg.text.strip():
            self.segments.append(seg)

    def _clear_partial(self) -> None:
        if self._partial_shown:
            self.out.write("\r\x1b[2K")
            self._partial_shown = False

    def finish(self) -> list[Segment]:
        with self.lock:
            for source in list(self.open):
                self._close(source)
            self._clear_partial()
            return sorted(self.segments, key=lambda s: (s.start, s.source))


def _join(a: str, b: str) -> str:
    if not a:
        return b.strip() if not b.startswith(" ") else b.lstrip()
    return a + b if b.startswith(" ") or a.endswith(" ") else f"{a} {b}"


# -- transcript files (the lead may route these through captioner.transcript writers) ---------
def _ts(seconds: float, sep: str) -> str:
    ms = int(round(max(0.0, seconds) * 1000))
    h, rem = divmod(ms, 3_600_000)
    m, rem = divmod(rem, 60_000)
    s, ms = divmod(rem, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def render(segments: list[Segment], fmt: str) -> str:
    """Transcript text in ``fmt`` (txt, srt, vtt or json); times are stream seconds."""
    if fmt == "json":
        rows = [{"source": s.source, "start": s.start, "end": s.end, "text": s.text.strip()} for s in segments]
        return json.dumps(rows, ensure_ascii=False, indent=2) + "\n"
    if fmt == "txt":
        return "".join(f"[{s.source}] {s.text.strip()}\n" for s in segments)
    cues = []
    for i, s in enumerate(segments, 1):
        end = max(s.end, s.start + 0.001)
        if fmt == "srt":
            cues.append(f"{i}\n{_ts(s.start, ',')} --> {_ts(end, ',')}\n{s.source}: {s.text.strip()}\n")
        else:
            cues.append(f"{_ts(s.start, '.')} --> {_ts(end, '.')}\n<v {s.source}>{s.text.strip()}\n")
    body = "\n".join(cues)
    return ("WEBVTT\n\n" + body) if fmt == "vtt" else body


def _load_backend(args: argparse.Namespace) -> Any:
    from captioner.asr import load_backend

    return load_backend(args.backend, args.model) if args.model else load_backend(args.backend)


def _build_sources(args: argparse.Namespace, rate: int) -> list:
    from captioner.audio.filesource import FileSource
    from captioner.audio.microphone import MicrophoneSource
    from captioner.audio.system import open_system_audio

    sources = []
    use_mic = args.mic is not None or (args.system is None and not args.file)
    if use_mic:
        sources.append(MicrophoneSource(args.mic or None, label=args.mic_label, target_rate=rate))
    if args.system is not None:
        sources.append(open_system_audio(args.system or None, label=args.system_label, target_rate=rate))
    for path in args.file:
        label = os.path.basename(path)
        while label in {s.label for s in sources}:
            label += "'"
        sources.append(FileSource(path, label=label, realtime=not args.fast, target_rate=rate))
    return sources


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Caption until ``--duration`` passes, every file ends, or Ctrl-C; then write the transcript.

    Returns:
        0 on success, 1 when a device, the backend or the output file failed, 2 for
        bad arguments.
    """
    from captioner.asr.base import BackendError
    from captioner.audio.source import SourceError
    from captioner.engine.live import LiveCaptioner

    out = out or sys.stdout
    err = err or sys.stderr
    fmt = args.format or _format_from_path(args.output) or "txt"
    if args.duration is not None and args.duration <= 0:
        print("error: --duration must be > 0 seconds", file=err)
        return 2
    journal_path = args.journal or (args.output + ".journal.jsonl" if args.output else None)
    try:
        backend = _load_backend(args)
        sources = _build_sources(args, backend.sample_rate)
    except (BackendError, SourceError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=err)
        return 1
    journal = None
    try:
        journal = open(journal_path, "a", encoding="utf-8") if journal_path else None
    except OSError as exc:
        print(f"error: cannot write the journal {journal_path}: {exc}", file=err)
        return 1
    collector = _Collector(out, err, journal, partials=not args.no_partials)
    try:
        live = LiveCaptioner(backend, sources, collector)
        live.start()
    except (SourceError, ValueError) as exc:
        if journal is not None:
            journal.close()
        print(f"error: {exc}", file=err)
        return 1
    labels = ", ".join(f"{s.label} = {s.description}" for s in sources)
    print(f"listening: {labels} ({backend.describe()}); Ctrl-C stops", file=err, flush=True)
    deadline = time.monotonic() + args.duration if args.duration else None
    try:
        while live.is_running:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            live.wait(0.2 if left is None else min(0.2, left))
    except KeyboardInterrupt:
        print("stopping: flushing the last words...", file=err, flush=True)
    finally:
        try:
            live.stop(drain=True)
        except KeyboardInterrupt:  # a second Ctrl-C: skip the queued audio, still end the sessions
            live.stop(drain=False)
        if journal is not None:
            journal.close()
    segments = collector.finish()
    stats = live.source_stats()
    for label, st in stats.items():
        if st.overflows or st.dropped_blocks:
            print(f"[{label}] warning: {st.overflows} device overflows, {st.dropped_s:.1f} s dropped", file=err)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8", newline="\n") as f:
                f.write(render(segments, fmt))
        except OSError as exc:
            print(f"error: cannot write {args.output}: {exc}", file=err)
            return 1
        print(f"transcript written to {args.output} ({len(segments)} segments, {fmt})", file=err)
    elif args.format:
        out.write(render(segments, fmt))
    return 1 if collector.failures else 0


def _format_from_path(path: str | None) -> str | None:
    if not path:
        return None
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    return ext if ext in FORMATS else None
