"""``captioner transcribe AUDIO``: stream a file through the live session/engine path.

The file is decoded with soundfile (any rate, any channel count), downmixed, resampled
to the backend rate with soxr, and fed in blocks of one clock step (the backend's
``chunk_step``), or paced in real time with ``--realtime``, through the same
:class:`~captioner.engine.session.StreamingSession` that live audio uses. Without
``--realtime`` the blocks are read ahead (:class:`~captioner.engine.readahead.ReadAhead`):
the next chunks decode while the turn detector works on the previous ones, and the
default model reads two completed lines at once (:mod:`captioner.asr.moonshine.line_pool`); the
transcript is the same. Every final
text and turn goes to the autosave journal as it is decoded, so a failing output disk
loses nothing. ``--speakers auto|off|N`` (default auto) labels who is speaking,
"Speaker 1", "Speaker 2", ... in every output format (issue 38), e.g.
``captioner transcribe meeting.wav --speakers 4 -o meeting.srt``. ``--sounds on|off`` (default
on) captions sounds that are not speech, "[music]", "[phone ringing]", ..., each its own line or
cue (issue 49).

Exit codes: 0 success (an empty or silent file gives an empty transcript), 2 usage
error (bad option, missing file, invalid clock/delay), 1 runtime failure (unreadable
audio, model failed to load or run, output not writable).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from captioner.asr import BackendError
from captioner.asr.geometry import GeometryError
from captioner.audio.fileio import AudioFileError, load_audio
from captioner.audio.fileio import peak as audio_peak  # (run() has a local named peak)
from captioner.commands.backend_options import (
    add_backend_arguments,
    add_mask_argument,
    add_sounds_argument,
    add_speakers_argument,
    check_backend_arguments,
    check_output_path,
    deliver_transcript,
    output_format,
    open_backend,
    text_mask,
    turn_settings,
)
from captioner.engine.batcher import BatchEngine
from captioner.engine.readahead import ReadAhead
from captioner.engine.session import StreamingSession
from captioner.engine.sound_captions import FILE_LOAD_WAIT_S, new_sound_models
from captioner.events import Notice, SoundEvent, TextDelta, TurnBoundary
from captioner.speakers.registry import new_registry
from captioner.speakers.tracker import make_tracker
from captioner.transcript.live import LiveTranscript
from captioner.transcript.model import SpeakerRename, Transcript
from captioner.transcript.writers import FORMATS

#: Files longer than this (s) get progress lines on stderr.
PROGRESS_AFTER_S = 5.0


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``transcribe`` subcommand."""
    p = sub.add_parser(
        "transcribe",
        help="caption an audio file (same streaming path as live audio)",
        description="Transcribe an audio file by streaming it through the caption engine.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  captioner transcribe talk.flac -o talk.srt      # format from the suffix: txt, srt, vtt, json\n"
               "  captioner transcribe call.wav --hotwords-file team.txt --speakers 2 -o call.vtt",
    )
    p.add_argument("audio", help="audio file (WAV, FLAC, OGG, ...; any sample rate and channel count)")
    add_backend_arguments(p)
    p.add_argument("--format", choices=FORMATS, default=None, help="output format (default: from -o's suffix, else txt)")
    p.add_argument("-o", "--output", help="write the transcript here instead of standard output")
    p.add_argument("--realtime", action="store_true", help="pace the audio in real time, like a live source")
    p.add_argument("--label", default=None, help="source label in the transcript (default: the file name)")
    add_mask_argument(p)
    add_speakers_argument(p, where="the transcript")
    add_sounds_argument(p)


class _Progress:
    def __init__(self, total_s: float) -> None:
        self.total_s = total_s
        self.enabled = total_s > PROGRESS_AFTER_S
        self.tty = sys.stderr.isatty()
        self.t0 = time.perf_counter()
        self.last = -1.0

    def update(self, done_s: float) -> None:
        if not self.enabled:
            return
        step = 0.5 if self.tty else max(5.0, self.total_s / 10)
        if done_s - self.last < step and done_s < self.total_s:
            return
        self.last = done_s
        elapsed = time.perf_counter() - self.t0
        rtf = elapsed / done_s if done_s else 0.0
        line = f"transcribing: {done_s:6.1f} / {self.total_s:.1f} s  (real-time factor {rtf:.2f})"
        print(("\r" + line) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled and self.tty:
            print(file=sys.stderr)


def _error(msg: str) -> None:
    print(f"captioner: error: {msg}", file=sys.stderr)


def _notice(n: Notice | None) -> None:
    if n is not None:
        print(f"captioner: {n.severity}: {n.message}", file=sys.stderr)


def _backend_notice(ev, errors: list) -> None:
    """Print a backend's notice (reconnects, dropped audio, a failure at the end); keep errors."""
    if isinstance(ev, Notice):
        _notice(ev)
        if ev.severity == "error":
            errors.append(ev)


class _StopRequest:
    """Ctrl-C, SIGTERM and SIGHUP during ``transcribe``: the first one asks the run to stop
    between two steps (the handler only sets a flag: it runs on the main thread, possibly
    inside a step that holds a lock, so it neither raises there nor takes a lock); a second
    one raises ``KeyboardInterrupt`` (skip the flush, still write the output)."""

    def __init__(self, on_stop=None) -> None:
        self.asked = False
        self._previous: dict = {}
        self._on_stop = on_stop
        self._over = False

    def _watch(self) -> None:
        """Call ``on_stop`` (``backend.interrupt``) from a helper thread once a stop is asked: a
        step can be blocked inside the backend (a remote connect waiting for the server's
        greeting) and never reach the check between steps. Polls the flag (the handler may
        take no lock) every 50 ms."""
        import time

        while not self._over:
            if self.asked:
                self._on_stop()
                return
            time.sleep(0.05)

    def __enter__(self) -> "_StopRequest":
        import signal

        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except (ValueError, OSError):  # not the main thread (embedded use): leave signals alone
                pass
        if self._on_stop is not None:
            import threading

            threading.Thread(target=self._watch, name="captioner-transcribe-stop", daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        import signal

        self._over = True

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:  # noqa: ARG002 - signal handler signature
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True


def _on_stop(backend, sound_models):
    """What a Ctrl-C does at once (from :class:`_StopRequest`'s helper thread): the file's first
    block stops waiting for the sound model still loading (issue 49: up to ``FILE_LOAD_WAIT_S``
    otherwise), and the backend's ``interrupt`` runs where it has one. None when neither applies."""
    interrupt = getattr(backend, "interrupt", None)
    if sound_models is None:
        return interrupt

    def on_stop() -> None:
        sound_models.cancel()
        if interrupt is not None:
            interrupt()

    return on_stop


def _end_session(session: StreamingSession, backend, stop: _StopRequest) -> list:
    """``session.end()`` on a helper thread while this (main) thread watches for a stop: the
    remote backend then ends its flush within ~1.2 s (``interrupt``) and opens no new session.

    Raises:
        KeyboardInterrupt: a second Ctrl-C (the flush is abandoned).
        Exception: what ``end()`` raised.
    """
    import threading

    result: dict = {}

    def end() -> None:
        from captioner.native_calls import model_call

        try:
            with model_call():  # a second Ctrl-C leaves it running: the exit must not finalise around it (#30.2)
                result["events"] = session.end()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            result["error"] = exc

    interrupted = stop.asked
    if interrupted:
        getattr(backend, "interrupt", lambda: None)()
    worker = threading.Thread(target=end, name="captioner-transcribe-end", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
        if stop.asked and not interrupted:
            interrupted = True
            getattr(backend, "interrupt", lambda: None)()
    if "error" in result:
        raise result["error"]
    return result.get("events", [])


class _Recorded:
    """A :class:`~captioner.transcript.live.LiveTranscript` that also keeps every event it is given,
    so that the speakers' second pass (issue 51) can build the transcript again with its labels."""

    def __init__(self, live: LiveTranscript) -> None:
        self._live = live
        self.events: list = []

    def __getattr__(self, name: str):
        return getattr(self._live, name)

    def add(self, event):
        if isinstance(event, (TextDelta, TurnBoundary, SpeakerRename, SoundEvent)):  # what a transcript is built of
            self.events.append(event)
        return self._live.add(event)

    def relabelled(self, registry) -> Transcript:
        """The transcript again, every final labelled by the second pass over the whole file
        (:meth:`~captioner.speakers.registry.SpeakerRegistry.second_pass`, numbered in order of
        first appearance); the transcript as labelled live when the pass fails."""
        from captioner.speakers.recluster import relabel_events

        try:
            events = relabel_events(self.events, registry.second_pass(renumber=True))
        except Exception as exc:  # noqa: BLE001 - never lose the transcript over the labels
            print(f"captioner: warning: the speakers' second pass failed ({exc}); the labels are the "
                  "first pass's", file=sys.stderr)
            return self._live.transcript
        again = Transcript(dict(self._live.transcript.metadata))
        again.extend(events)
        again.close_all()
        return again


def run(args: argparse.Namespace) -> int:
    """Execute ``captioner transcribe``; returns the exit code."""
    fmt = output_format(args)
    if fmt not in FORMATS:
        _error(f"unknown output format {fmt!r}; use --format with one of: {', '.join(FORMATS)}")
        return 2
    if not os.path.exists(args.audio):
        _error(f"audio file not found: {args.audio}")
        return 2
    if os.path.isdir(args.audio):
        _error(f"{args.audio} is a folder; give an audio file")
        return 2
    usage = check_backend_arguments(args) or check_output_path(args.output)
    if usage:
        _error(usage)
        return 2
    if args.backend == "default":  # its sessions detect turns: load those models meanwhile
        from captioner.engine.turn_models import preload

        preload()
    # the sound model loads meanwhile too (a file's first block waits for it, never its audio)
    sound_models = new_sound_models(getattr(args, "sounds", None), 1, wait_s=FILE_LOAD_WAIT_S)
    try:
        backend = open_backend(args)
    except GeometryError as exc:
        _error(str(exc))
        return 2
    except BackendError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:  # Ctrl-C while the model loads (first use: preparing it)
        _error("interrupted before transcribing started; nothing was written")
        return 130
    _notice(getattr(backend, "speed_notice", None))
    if os.path.getsize(args.audio) == 0:
        _error(f"{args.audio} is empty (0 bytes); it holds no audio")
        return 1
    try:
        audio = load_audio(args.audio, backend.sample_rate)
    except AudioFileError as exc:
        _error(str(exc))
        return 1
    peak = audio_peak(audio)
    if peak > 1.0:  # mis-scaled float file: bring it into [-1, 1] instead of clipping it flat
        print(f"captioner: warning: the audio exceeds full scale (peak {peak:.3g}); scaled down by that factor",
              file=sys.stderr)
        audio = audio / np.float32(peak)
    label = args.label or Path(args.audio).name
    live, notice = LiveTranscript.start(backend=backend.describe(), sources=[label], metadata={"audio": args.audio})
    _notice(notice)
    # One file is one session: there are no other sessions' chunks to batch with, so a file read
    # ahead gets an engine that never waits for them (the shared engine's 5 ms batching wait per
    # 0.1 s chunk was 60 s of the 20-minute meeting's wall time, issue 30.3)
    engine = backend if args.realtime else BatchEngine(backend, max_wait_ms=0.0)
    block = backend.geometry.chunk_step
    rate = backend.sample_rate
    speakers = getattr(args, "speakers", None)  # SpeakerOptions (--speakers; None: off)
    registry = new_registry(speakers)
    session = StreamingSession(engine, label, turn_settings(args),
                               speakers=make_tracker(speakers, "file", rate, registry),
                               sounds=sound_models.tracker(0, label, rate) if sound_models is not None else None)
    if registry is not None:  # the events, for the speakers' second pass over the whole file
        live = _Recorded(live)
    progress = _Progress(len(audio) / rate)
    t_start = time.perf_counter()
    stats = session.stats()
    errors: list[Notice] = []  # error notices from the backend (e.g. a remote server lost at the end)
    stop = _StopRequest(_on_stop(backend, sound_models))
    ahead = None if args.realtime else ReadAhead(session, (audio[i : i + block] for i in range(0, len(audio), block)))
    try:
        with stop:
            for i in range(0, len(audio), block):
                if stop.asked:
                    break
                piece = audio[i : i + block]
                if ahead is not None:
                    events = next(ahead, [])
                else:
                    wait = t_start + (i + len(piece)) / rate - time.perf_counter()
                    if wait > 0:
                        time.sleep(wait)  # pacing like a live device, not synchronisation
                    events = session.feed(piece)
                for ev in events:
                    _notice(live.add(ev))
                    _backend_notice(ev, errors)
                progress.update((i + len(piece)) / rate)
            for ev in ahead.close() if ahead is not None else []:  # decoded before a stop
                _notice(live.add(ev))
                _backend_notice(ev, errors)
            stats = session.stats()
            if stop.asked and backend.name != "remote":
                pass  # a local model ends at its last completed line: the line being cut when the
                # reader stopped (up to 30 s past the text shown) is not read (its `interrupt`
                # only hurries the lines already cut); a remote server holds text of audio sent
            else:
                for ev in _end_session(session, backend, stop):
                    _notice(live.add(ev))
                    _backend_notice(ev, errors)
    except KeyboardInterrupt:
        stop.asked = True  # a second Ctrl-C: the flush was skipped
    except Exception as exc:  # a model failure: keep what was decoded
        if not stop.asked:  # after a stop the failure is the stop itself (a remote connect cut short)
            _notice(live.close())
            _error(f"the {backend.name} model failed: {exc}. The text so far is in the journal "
                   f"{live.transcript.metadata.get('journal', '')}")
            return 1
    finally:
        progress.done()
        if ahead is not None:
            ahead.abandon()  # after an error or a second Ctrl-C: the reader stops at its next chunk
    if stop.asked:  # Ctrl-C / SIGTERM / SIGHUP: the text so far is still written
        _notice(live.close())
        problem = deliver_transcript(live.transcript, args.output, fmt)
        where = f" to {args.output}" if args.output else ""
        said = any(seg.text.strip() for seg in live.transcript.segments)
        kept = f"the text so far is written{where}" if said else f"nothing was captioned yet (an empty transcript is written{where})"
        _error("interrupted; " + (problem or kept) + "; the journal is "
               + str(live.transcript.metadata.get("journal", "")))
        backend.close()
        return 1
    if stats.nonfinite_samples:
        print(f"captioner: warning: {stats.nonfinite_samples} NaN/inf samples were treated as silence", file=sys.stderr)
    _notice(live.close())
    elapsed = time.perf_counter() - t_start
    if progress.enabled:
        print(
            f"captioner: {len(audio) / rate:.1f} s of audio in {elapsed:.1f} s (real-time factor "
            f"{elapsed / max(len(audio) / rate, 1e-9):.2f}, {stats.step_ms:.1f} ms per step)",
            file=sys.stderr,
        )
    transcript = live.transcript
    if registry is not None:
        transcript = live.relabelled(registry)
    if not transcript.segments:
        print("captioner: no speech was recognised in this file", file=sys.stderr)
    problem = deliver_transcript(transcript, args.output, fmt, mask=text_mask(args))
    if problem:
        _error(problem)
        return 1
    backend.close()
    return 1 if errors else 0
