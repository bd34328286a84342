"""Backend options shared by ``captioner transcribe`` and ``captioner listen``.

Validation happens before anything heavy loads, so a bad clock/delay or a missing model
path is a usage error (exit 2) with a message that lists the allowed values.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from captioner.asr import BACKENDS, load_backend, model_problem
from captioner.asr.geometry import ChunkGeometry, GeometryError


def add_backend_arguments(p: argparse.ArgumentParser) -> None:
    """The backend options shared by ``transcribe`` and ``listen``."""
    p.add_argument("--backend", choices=BACKENDS, default="default", help="ASR backend (default: embedded model)")
    p.add_argument("--model", help="Audio8 checkpoint directory, .tflite file, or ws://HOST:18191/v1/realtime URL of "
                   "a remote Audio8 server (one URL per live source, comma-separated)")
    p.add_argument("--clock", type=int, default=None, help="audio clock in ms: 80, 120 or 160 (Audio8; default 80)")
    p.add_argument("--delay", type=int, default=None,
                   help="transcription delay in ms, a multiple of the clock (Audio8/remote; default 480)")
    p.add_argument("--language", choices=("en", "zh"), default="en", help="spoken language")
    p.add_argument("--device", default=None, help="Audio8: cuda, cuda:N, mps or cpu (default: automatic)")
    p.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default=None, help="Audio8: weight dtype")
    p.add_argument("--vad-horizon", type=float, default=1.0, choices=(0.5, 1.0, 2.0, 3.0),
                   help="Audio8/remote: semantic-VAD horizon in s that decides turn ends (default 1.0)")
    p.add_argument("--vad-threshold", "--turn-threshold", dest="vad_threshold", type=float, default=0.5,
                   help="end-of-turn probability a pause needs to end a turn, any backend (0-1, default 0.5; "
                        "lower ends turns sooner)")
    p.add_argument("--silence-limit", type=float, default=3.0,
                   help="seconds of silence that end a turn whatever the end-of-turn model says (default 3)")
    p.add_argument("--ca-file", default=None, metavar="PEM",
                   help="remote: certificate (or CA) that signs a wss:// server, e.g. the proxy's self-signed "
                   "server.crt. The server key, if any, is read from $CAPTIONER_REMOTE_TOKEN")
    p.add_argument("--server-model", default=None, metavar="NAME",
                   help="remote: served model name (default audio8-asr-infinite)")
    p.add_argument("--hotword", action="append", default=[], metavar="WORD",
                   help="a name or term the model should prefer, as it should be written, e.g. --hotword Siobhan "
                        "(repeatable; default and remote backends; at most 500 in all)")
    p.add_argument("--hotwords-file", action="append", default=[], metavar="FILE",
                   help="UTF-8 text file of hotwords, one per line; '#' starts a comment (repeatable)")
    p.add_argument("--hotword-boost", type=float, default=None, metavar="B",
                   help="how strongly hotwords are preferred, 0-10 (default 6 on the default backend; "
                        "the server's own default on remote)")


#: Clock and delay used when the user gives none (model card: 80 ms clock, 480 ms delay).
DEFAULT_CLOCK_MS = 80
DEFAULT_DELAY_MS = 480
#: Backends whose timing comes from the model itself; --clock/--delay do not apply.
UNCLOCKED = ("default", "tflite")


def check_backend_arguments(args: argparse.Namespace) -> str | None:
    """Validate backend options before anything heavy loads; returns a usage message or None.

    Fills in the default clock/delay, and warns on stderr when ``--clock``/``--delay`` were
    given to a backend that does not use them.
    """
    if args.backend in UNCLOCKED and (args.clock is not None or args.delay is not None):
        print(f"captioner: warning: --clock/--delay do not apply to the {args.backend} backend "
              "(its timing comes from the model); ignoring them", file=sys.stderr)
    args.clock = DEFAULT_CLOCK_MS if args.clock is None else args.clock
    args.delay = DEFAULT_DELAY_MS if args.delay is None else args.delay
    problem = model_problem(args.backend, args.model)
    if problem:
        return problem
    if args.backend in ("audio8", "remote"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ChunkGeometry.from_clock(args.clock, args.delay)
        except GeometryError as exc:
            return str(exc)
    if args.backend == "remote" and args.clock != 80:
        return f"the remote server runs the 80 ms clock only, not {args.clock} ms"
    if args.backend == "remote":
        from captioner.asr.remote.protocol import ProtocolError, check_delay

        try:
            check_delay(args.delay)
        except ProtocolError as exc:
            return str(exc)
    if args.backend != "remote" and (args.ca_file or args.server_model):
        return "--ca-file and --server-model apply to --backend remote only"
    problem = check_hotword_arguments(args)
    if problem:
        return problem
    if args.ca_file and not os.path.isfile(args.ca_file):
        return f"CA file not found: {args.ca_file}"
    if not 0.0 < args.vad_threshold < 1.0:
        return f"--vad-threshold must be between 0 and 1, got {args.vad_threshold}"
    if not args.silence_limit > 0:
        return f"--silence-limit must be more than 0 s, got {args.silence_limit}"
    if args.backend == "default" and args.language != "en":
        return "the default model is English-only; use --backend audio8 for Chinese"
    return None


def check_hotword_arguments(args: argparse.Namespace) -> str | None:
    """Read and check ``--hotword``/``--hotwords-file``/``--hotword-boost`` into ``args.hotwords``
    (a tuple) and ``args.hotword_boost``; returns a one-line usage message or None.

    The default backend's words are spelled with its tokenizer here (the model's small
    ``tokenizer.bin`` only), so a word it cannot write is refused before the model loads.
    """
    from captioner.asr.hotword_list import HotwordError, check_boost, check_hotwords, default_model_spelling, gather

    args.hotwords = ()
    given = list(getattr(args, "hotword", []) or [])
    files = list(getattr(args, "hotwords_file", []) or [])
    boost = getattr(args, "hotword_boost", None)
    if not given and not files and boost is None:
        return None
    if args.backend not in ("default", "remote"):
        return "--hotword, --hotwords-file and --hotword-boost apply to the default and remote backends only"
    try:
        if boost is not None:
            args.hotword_boost = check_boost(boost)
        spell = default_model_spelling(args.model) if args.backend == "default" else None
        args.hotwords = check_hotwords(gather(given, files), spell)
    except HotwordError as exc:
        return str(exc)
    return None


def output_format(args: argparse.Namespace) -> str:
    """The transcript format: ``--format``, else ``-o``'s suffix, else "txt" (may be an unknown suffix)."""
    from captioner.transcript.writers import format_from_path

    return args.format or (format_from_path(args.output) if args.output else "") or "txt"


def add_mask_argument(p: argparse.ArgumentParser) -> None:
    """``--mask-profanity`` (see :mod:`captioner.transcript.profanity`)."""
    p.add_argument("--mask-profanity", action="store_true",
                   help='mask offensive words ("f***") in the printed text and the written transcript; the '
                        "autosave journal keeps what the model wrote")


def _speakers_value(value: str):
    """argparse ``type`` of ``--speakers``: a ``SpeakerOptions``; a bad value is argparse's usage error (exit 2)."""
    from captioner.speakers.options import parse_speakers

    try:
        return parse_speakers(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_speakers_argument(p: argparse.ArgumentParser, *, where: str = "system audio and files") -> None:
    """``--speakers auto|off|N`` (issue 38; :mod:`captioner.speakers.options`); ``args.speakers``
    is a :class:`~captioner.speakers.options.SpeakerOptions` (default ``AUTO``)."""
    from captioner.speakers.options import AUTO, AUTO_MAX_SPEAKERS

    p.add_argument("--speakers", type=_speakers_value, default=AUTO, metavar="auto|off|N",
                   help=f"label who is speaking (\"Speaker 1: ...\") in {where}; the microphone stays its own "
                        f"label. auto (default): up to {AUTO_MAX_SPEAKERS} speakers; N: at most N, e.g. "
                        "--speakers 2 for an interview; off: no labels, no speaker model")


def _sounds_value(value: str):
    """argparse ``type`` of ``--sounds``: a ``SoundOptions``; a bad value is argparse's usage error (exit 2)."""
    from captioner.engine.sound_captions import parse_sounds

    try:
        return parse_sounds(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_sounds_argument(p: argparse.ArgumentParser) -> None:
    """``--sounds on|off`` (issue 49; :mod:`captioner.engine.sound_captions`); ``args.sounds`` is a
    :class:`~captioner.engine.sound_captions.SoundOptions` (default ``ON``)."""
    from captioner.engine.sound_captions import ON

    p.add_argument("--sounds", type=_sounds_value, default=ON, metavar="on|off",
                   help='caption sounds that are not speech, each once when it starts: "[music]", "[phone ringing]", '
                        '"[siren]", "[applause]", ... (default on; off: no sound model)')


def text_mask(args: argparse.Namespace):
    """The profanity filter asked for with ``--mask-profanity``, or None."""
    if not getattr(args, "mask_profanity", False):
        return None
    from captioner.transcript.profanity import ProfanityFilter

    return ProfanityFilter()


def deliver_transcript(transcript, output: str | None, fmt: str, mask=None) -> str | None:
    """Write ``transcript`` to ``output`` (or standard output when None) as ``fmt``.

    Args:
        mask: text mask for every segment (``--mask-profanity``), or None.

    Returns:
        None on success, else the error message (names the file, the cause and the journal).
    """
    from captioner.transcript.atomic_write import TranscriptWriteError
    from captioner.transcript.writers import format_transcript, write_transcript

    if not output:
        sys.stdout.write(format_transcript(transcript, fmt, mask=mask))
        sys.stdout.flush()
        return None
    try:
        write_transcript(transcript, output, fmt, mask=mask)
    except TranscriptWriteError as exc:
        return f"{exc} Journal: {transcript.metadata.get('journal', 'not available')}"
    return None


def check_output_path(path: str | None) -> str | None:
    """Check before decoding that ``-o PATH`` can be written; returns a usage message or None.

    Catches a missing folder, a file where the folder should be, a folder given as the
    output, and a read-only folder, so a long file is not decoded only to fail at the end.
    A symlink is checked at its real target; pipes and devices only for write permission.
    """
    if not path:
        return None
    from captioner.transcript.atomic_write import resolve_output

    if os.path.isdir(path):
        return f"-o {path} is a folder; give a file name such as {os.path.join(path, 'transcript.srt')}"
    real, in_place = resolve_output(path)
    if in_place:  # a pipe, a device or /dev/stdout: written like a shell redirection
        if os.path.exists(real) and not os.access(real, os.W_OK):
            return f"cannot write {path}: permission denied"
        return None
    target = os.path.abspath(real)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        return f"-o {path} points to the folder {target}; give a file name"
    if not os.path.exists(folder):
        return f"cannot write {path}: the folder {folder} does not exist"
    if not os.path.isdir(folder):
        return f"cannot write {path}: {folder} is a file, not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write {path}: the folder {folder} is not writable; choose another folder"
    return None


def turn_settings(args: argparse.Namespace):
    """The :class:`~captioner.engine.turns.TurnSettings` of ``--vad-threshold`` and ``--silence-limit``."""
    from captioner.engine.turns import TurnSettings

    return TurnSettings(threshold=args.vad_threshold, silence_s=args.silence_limit)


def open_backend(args: argparse.Namespace):
    """Load the backend chosen by the arguments (raises BackendError/GeometryError)."""
    options = {}
    if args.backend == "default" and getattr(args, "realtime", True) is False:
        # a file decoded as fast as possible: one decode per line, no partial re-decodes
        # (deterministic, the one-pass WER, and quicker: nobody is watching partials), the
        # lines read on both cores (captioner.asr.moonshine.line_pool; the same text)
        from captioner.asr.moonshine.line_pool import WORKERS

        options = dict(partials=False, line_workers=WORKERS)
    hotwords = tuple(getattr(args, "hotwords", ()) or ())
    boost = getattr(args, "hotword_boost", None)
    if args.backend == "default" and hotwords:
        options.update(hotwords=hotwords, hotword_boost=boost)
    if args.backend == "audio8":
        options = dict(device=args.device, dtype=args.dtype, vad_horizon_s=args.vad_horizon,
                       vad_threshold=args.vad_threshold)
    elif args.backend == "remote":
        options = dict(vad_horizon_s=args.vad_horizon, vad_threshold=args.vad_threshold, ca_file=args.ca_file,
                       model_name=args.server_model, hotwords=hotwords, hotword_boost=boost)
    return load_backend(
        args.backend,
        args.model,
        clock_ms=args.clock,
        delay_ms=args.delay,
        language=args.language,
        **options,
    )
