"""``captioner listen``: headless live captions of the microphone and/or system audio.

Prints text as it is decoded, labelled by source, writes the transcript at the end
(txt, srt, vtt or json, through ``captioner.transcript.writers``) and, while running,
appends every final text and turn to the autosave journal (``captioner.transcript``;
fsynced at once) so a crash loses nothing. ``--duration`` stops
after that many seconds; Ctrl-C (or SIGTERM/SIGHUP), at any moment once the sources
are being opened, stops cleanly and flushes the last words; a second one skips the
audio still queued. What is printed, and how: :mod:`captioner.commands.listen_output`.

The live sources (microphone, system audio) open *before* the model loads
(:mod:`captioner.engine.capture_first`): what is said from the command on is queued
while the model loads (or is prepared at first use) and then decoded as a backlog,
"catching up". A Ctrl-C during the load closes them and exits with 130 at once.

Examples::

    captioner listen --system --duration 10
    captioner listen --mic --system -o meeting.srt --format srt
    captioner listen --mic "USB" --system alsa_output.pci-0000_00_1f.3.analog-stereo
    captioner listen --mic --system --speakers 3 -o call.vtt   # "You" + "Speaker 1..3" in the call

Speaker labels (``--speakers``, issue 38): system audio and files are split into
"Speaker 1", "Speaker 2", ...; the terminal shows ``[Speaker 2] text`` instead of the
source label where a line is attributed, and the transcript labels them (see
:mod:`captioner.transcript.writers`).

Sound captions (``--sounds on|off``, default on, issue 49): a sound that is not speech is
printed once when it starts, on a line of its own, ``[Meeting] (sound) [phone ringing]``, and
saved as its own line or cue.

Name alerts (``--alert WORD``, repeatable, issue 49): each time someone other than the
microphone says WORD, ``ALERT: "WORD" said by Meeting at 00:01:23`` is printed
(:mod:`captioner.commands.alert_cli`).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any, TextIO

from captioner.asr.base import BackendError
from captioner.asr.geometry import GeometryError
from captioner.commands.backend_options import (
    add_backend_arguments,
    add_mask_argument,
    add_sounds_argument,
    add_speakers_argument,
    check_backend_arguments,
    check_output_path,
    open_backend,
    text_mask,
    turn_settings,
)
from captioner.caption_page import cli as caption_page_cli
from captioner.commands import alert_cli
from captioner.commands.listen_output import Collector
from captioner.engine.stopping import DRAIN_S, FLUSH_S, stop_within  # noqa: F401 - DRAIN_S/FLUSH_S: listen's bound
from captioner.transcript.atomic_write import TranscriptWriteError
from captioner.transcript.live import LiveTranscript
from captioner.transcript.writers import FORMATS, format_from_path, format_transcript, write_transcript


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``listen`` on the CLI."""
    p = subparsers.add_parser(
        "listen",
        help="caption the microphone and/or system audio live, without the GUI",
        description="Caption live audio in the terminal. Without --mic/--system/--file the default microphone "
        "is used. See `captioner devices` for names.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  captioner listen --mic --system -o call.srt   # you (\"You\") and the call (\"Meeting\")\n"
               "  captioner listen --system --serve-captions --duration 3600   # a caption page for OBS, for an hour",
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
    p.add_argument("--duration", type=float, default=None, metavar="SECONDS", help="stop this many seconds after the capture opened (the model loads meanwhile)")
    add_backend_arguments(p)
    p.add_argument("--format", choices=FORMATS, default=None, help="transcript format (default: from -o, else txt)")
    p.add_argument("-o", "--output", default=None, metavar="OUT", help="write the transcript here at the end")
    p.add_argument("--journal-dir", default=None, metavar="DIR",
                   help="folder of the autosave journal (default: the user data folder, see docs/settings-and-files.md)")
    p.add_argument("--no-partials", action="store_true", help="print final text only")
    add_mask_argument(p)
    add_speakers_argument(p)
    add_sounds_argument(p)
    alert_cli.add_arguments(p)
    caption_page_cli.add_arguments(p)
    return p


def _load_backend(args: argparse.Namespace) -> Any:
    return open_backend(args)


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


class _StopRequests:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP (``kill``, ``timeout``, a closed terminal, systemd) as stop requests.

    From :meth:`install` on, a signal never raises at an arbitrary point (e.g. inside
    ``LiveCaptioner.start`` with half the sources open): it sets :attr:`requested`,
    which the wait loop polls, so the last words are flushed and the transcript written
    whenever it arrives. Only a *second* signal while :attr:`impatient` (draining the
    queued audio) raises ``KeyboardInterrupt``, to skip the rest of the queue. A signal
    the process inherited as ignored (``nohup``, a background job's SIGINT) stays ignored.
    Off the main thread (tests calling ``run`` from a worker) nothing is installed.
    """

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.impatient = False
        self._previous: dict = {}

    def install(self) -> "_StopRequests":
        """Take over the signals (main thread only); returns self."""
        import signal

        for name in self.NAMES:
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def _handle(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        again = self.requested.is_set()
        self.requested.set()
        if again and self.impatient:
            raise KeyboardInterrupt

    def restore(self) -> None:
        """Put the previous handlers back."""
        import signal

        for sig, handler in self._previous.items():
            try:
                signal.signal(sig, handler)
            except ValueError:
                pass
        self._previous.clear()


def _stop(live: Any, stops: _StopRequests, err: TextIO) -> None:
    """Stop ``live`` within ``DRAIN_S + FLUSH_S`` seconds (:func:`captioner.engine.stopping.stop_within`)."""

    def skipping(seconds: float) -> None:
        stops.impatient = False
        print(f"stopping: the model is behind; {seconds:.1f} s of audio not decoded yet are skipped",
              file=err, flush=True)

    stops.impatient = True
    try:
        outcome = stop_within(live, skipping)
    finally:
        stops.impatient = False
    if not outcome.ended:
        print("captioner: warning: the model did not finish in time; the text decoded so far is written",
              file=err, flush=True)


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Caption until ``--duration`` passes, every file ends, or Ctrl-C; then write the transcript.

    Returns:
        0 on success, 1 when a device, the backend or the output file failed, 2 for
        bad arguments, 130 for a Ctrl-C while the model was still loading.
    """
    from captioner.audio.source import SourceError

    if err is None:  # the real terminal: PortAudio/ALSA's own stderr lines go to the log instead
        from captioner.audio.libnoise import route_library_noise_to_log

        route_library_noise_to_log()
    out = out or sys.stdout
    err = err or sys.stderr
    named = format_from_path(args.output) if args.output else ""
    fmt = args.format or (named if named in FORMATS else "") or "txt"
    if args.duration is not None and args.duration <= 0:
        print("captioner: error: --duration must be > 0 seconds", file=err)
        return 2
    usage = (check_backend_arguments(args) or check_output_path(args.output)
             or caption_page_cli.check_arguments(args) or alert_cli.check_arguments(args))
    if usage:
        print(f"captioner: error: {usage}", file=err)
        return 2
    stops = _StopRequests().install()  # before anything starts: a signal at any later moment stops cleanly
    try:  # the handlers stay until the transcript is written: a late signal must not kill the write
        return _run(args, fmt, out, err, stops)
    finally:
        stops.restore()


def _run(args: argparse.Namespace, fmt: str, out: TextIO, err: TextIO, stops: "_StopRequests") -> int:
    """Open the live sources, load the model meanwhile (:mod:`captioner.engine.capture_first`), caption."""
    from captioner.audio.source import MODEL_RATE, SourceError
    from captioner.engine.capture_first import BackgroundLoad, captured_s, close_sources, open_before_load

    try:  # the sources first (no model import before this): speech from the command on is kept
        sources = _build_sources(args, MODEL_RATE)
        early = open_before_load(sources)
        opened_at = time.monotonic() if early else None
    except (SourceError, ValueError) as exc:
        print(f"captioner: error: {exc}", file=err)
        return 1
    if early:
        labels = ", ".join(f"{s.label} = {s.description}" for s in early)
        print(f"capturing: {labels}; loading the model (what is said meanwhile is kept and captioned "
              "once it is loaded)", file=err, flush=True)
    load = BackgroundLoad(lambda: _load_backend(args))
    while not load.wait(0.05):
        if stops.requested.is_set():  # Ctrl-C while the model loads: nothing was decoded, nothing to write
            close_sources(early)
            kept = f" ({captured_s(early):.1f} s of audio captured were not captioned)" if early else ""
            print(f"captioner: interrupted before captioning started{kept}; nothing was written", file=err)
            return 130
    if load.error is not None:
        close_sources(early)
        exc = load.error
        if isinstance(exc, KeyboardInterrupt):
            print("captioner: interrupted before captioning started; nothing was written", file=err)
            return 130
        if isinstance(exc, GeometryError):
            print(f"captioner: error: {exc}", file=err)
            return 2
        if isinstance(exc, (BackendError, ValueError, ImportError)):
            print(f"captioner: error: {exc}", file=err)
            return 1
        print(f"captioner: error: the model could not be loaded ({type(exc).__name__}: {exc}); check --backend "
              "and --model, or use the built-in default model", file=err)
        return 1
    backend = load.backend
    if backend.sample_rate != MODEL_RATE:  # a model at another rate: the sources are reopened at its rate
        close_sources(early)
        print(f"captioner: warning: {backend.name} takes {backend.sample_rate} Hz; the audio is reopened at that "
              f"rate ({captured_s(early):.1f} s captured while it loaded are not captioned)", file=err, flush=True)
        try:
            sources = _build_sources(args, backend.sample_rate)
        except (SourceError, ValueError) as exc:
            print(f"captioner: error: {exc}", file=err)
            return 1
    servers = getattr(backend, "urls", None)
    if backend.name == "remote" and servers is not None and len(sources) > len(servers):
        close_sources(early)
        print(f"captioner: error: {len(sources)} sources need {len(sources)} caption servers (an Audio8 server "
              f"serves one stream), but only {len(servers)} URL is configured: give one URL per source, "
              "comma-separated, e.g. --model ws://HOST:18191/v1/realtime,ws://HOST:18193/v1/realtime", file=err)
        return 2
    return _caption(args, backend, sources, fmt, out, err, stops, opened_at)


def _caption(args: argparse.Namespace, backend: Any, sources: list, fmt: str, out: TextIO, err: TextIO,
             stops: "_StopRequests", opened_at: float | None = None) -> int:
    """The live part of :func:`run`: caption, stop (bounded), write the transcript; returns the exit code.

    ``opened_at``: ``time.monotonic()`` when the live sources were opened (before the model
    loaded); ``--duration`` counts from there, as the transcript's times do. None: from now.
    """
    from captioner.audio.source import SourceError
    from captioner.engine.capture_first import captured_s, close_sources
    from captioner.engine.live import LiveCaptioner

    transcript, notice = LiveTranscript.start(
        args.journal_dir, backend=backend.describe(), sources=[s.label for s in sources]
    )
    mask = text_mask(args)
    collector = Collector(out, err, transcript, partials=not args.no_partials, mask=mask)
    collector.show_notice(notice)
    collector.alerts = alert_cli.printer(args, sources, out, transcript.transcript.speaker_name,
                                         before=collector.clear_partial)
    try:
        collector.page, collector.page_server = caption_page_cli.start(args, mask, err)
    except RuntimeError as exc:  # CaptionPageError: port in use (another one offered), aiohttp missing
        collector.finish()
        print(f"captioner: error: {exc}", file=err)
        return 1
    if transcript.journal is not None:
        print(f"autosave journal: {transcript.journal.path}", file=err, flush=True)
    backlog = captured_s(sources)  # said since the command while the model loaded
    speakers = getattr(args, "speakers", None)  # --speakers (SpeakerOptions)
    if speakers is not None and not any(speakers.applies_to(getattr(s, "kind", "")) for s in sources):
        speakers = None  # only the microphone ("You"): no speaker model to load
    try:
        live = LiveCaptioner(backend, sources, collector, turns=turn_settings(args), speakers=speakers,
                             sounds=getattr(args, "sounds", None))
        live.start()
    except (SourceError, ValueError) as exc:
        close_sources(sources)
        collector.finish()
        print(f"captioner: error: {exc}", file=err)
        return 1
    labels = ", ".join(f"{s.label} = {s.description}" for s in sources)
    behind = f"; catching up on the {backlog:.1f} s said while the model loaded" if backlog >= 0.1 else ""
    print(f"listening: {labels} ({backend.describe()}){behind}; Ctrl-C stops", file=err, flush=True)
    deadline = (time.monotonic() if opened_at is None else opened_at) + args.duration if args.duration else None
    while live.is_running and not stops.requested.is_set():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            break
        live.wait(0.1 if left is None else min(0.1, left))
        collector.tick()
    if stops.requested.is_set():
        print("stopping: flushing the last words...", file=err, flush=True)
    _stop(live, stops, err)
    collector.finish()
    stats = live.source_stats()
    for label, st in stats.items():
        if st.overflows or st.dropped_blocks:
            print(f"[{label}] warning: {st.overflows} device overflows, {st.dropped_s:.1f} s dropped", file=err)
    result = transcript.transcript
    if args.output and not result.segments and collector.failures:
        print(f"captioner: nothing was captioned, so {args.output} was not written", file=err)
    elif args.output:
        try:
            write_transcript(result, args.output, fmt, mask=mask)
        except TranscriptWriteError as exc:
            print(f"captioner: error: {exc}", file=err)
            return 1
        n = len(result.segments)
        print(f"transcript written to {args.output} ({n} segment{'' if n == 1 else 's'}, {fmt})", file=err)
    elif args.format:
        out.write(format_transcript(result, fmt, mask=mask))
    return 1 if collector.failures else 0


def _closing_backend(caption: Any) -> Any:
    """``caption`` closing its backend when it returns (the transcript is written by then).

    Closing ends the backend's own threads before the interpreter exits: the default model's
    partial re-decode still inside ONNX Runtime there aborted ``listen`` with status 134
    ("terminate called without an active exception", issue 30.2; see
    :mod:`captioner.native_calls`).
    """
    import functools

    @functools.wraps(caption)
    def run(args: argparse.Namespace, backend: Any, *rest: Any) -> int:
        try:
            return caption(args, backend, *rest)
        finally:
            backend.close()

    return run


_caption = _closing_backend(_caption)
