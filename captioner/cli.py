"""Command line entry point ``captioner``.

``captioner`` alone starts the GUI; subcommands live one per module in
``captioner/commands/`` and register themselves through :data:`COMMANDS`.
Exit codes: 0 success, 1 runtime failure, 2 usage error, 130 a Ctrl-C before anything
was captioned (`listen` while the model loads).
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: subcommand name -> module in captioner.commands exposing add_parser(subparsers) and run(args) -> int
COMMANDS = {
    "transcribe": "captioner.commands.transcribe",
    "devices": "captioner.commands.devices",
    "listen": "captioner.commands.listen",
    "recover": "captioner.commands.recover",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    from captioner import __version__

    parser = argparse.ArgumentParser(
        prog="captioner", description="Live captions for meetings, lectures and calls. Without a command: the desktop app.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  captioner                                   # the desktop app\n"
               "  captioner transcribe talk.flac -o talk.srt  # caption a file\n"
               "  captioner listen --mic --system -o call.srt # caption a call in the terminal\n\n"
               "Each command's options: captioner COMMAND --help; the guide: docs/README.md, docs/cli.md.")
    parser.add_argument("--version", action="version", version=f"captioner {__version__}")
    menu = parser.add_mutually_exclusive_group()
    menu.add_argument("--install-desktop", action="store_true",
                      help="add captioner (entry, icon, metainfo) to your Linux applications menu and exit")
    menu.add_argument("--uninstall-desktop", action="store_true",
                      help="remove what --install-desktop added and exit (transcripts and settings are kept)")
    sub = parser.add_subparsers(dest="command")
    for name, module in COMMANDS.items():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``captioner [command] ...``; returns the process exit code.

    Run as the program (``argv`` None: the console script, ``python -m captioner.cli``), it
    ends through :func:`captioner.native_calls.exit_process`, so a model call a bounded stop
    left running cannot abort the process at exit (status 134, issue 30.2).
    """
    try:
        code = _run(argv)
    except KeyboardInterrupt:  # Ctrl-C while the commands' modules import (the first ~0.3 s)
        print("captioner: interrupted", file=sys.stderr)  # (a command may have said what it kept already)
        code = 130
    if argv is None:
        from captioner.native_calls import exit_process

        return exit_process(code)
    return code


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.install_desktop or args.uninstall_desktop:
        from captioner import desktop

        if args.command:
            print("captioner: --install-desktop/--uninstall-desktop take no subcommand", file=sys.stderr)
            return 2
        return desktop.run_install() if args.install_desktop else desktop.run_uninstall()
    if not args.command:
        from captioner.audio.libnoise import route_library_noise_to_log
        from captioner.ui.app import run_gui

        route_library_noise_to_log()  # PortAudio/ALSA lines (device switches, server restarts) to the log

        code = run_gui()
    else:
        code = int(importlib.import_module(COMMANDS[args.command]).run(args))
    return code


if __name__ == "__main__":
    sys.exit(main())
