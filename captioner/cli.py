"""Command line entry point ``captioner``.

``captioner`` alone starts the GUI; subcommands live one per module in
``captioner/commands/`` and register themselves through :data:`COMMANDS`.
Exit codes: 0 success, 1 runtime failure, 2 usage error.
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
    parser = argparse.ArgumentParser(prog="captioner", description="Live captions for meetings, lectures and calls.")
    sub = parser.add_subparsers(dest="command")
    for name, module in COMMANDS.items():
        importlib.import_module(module).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``captioner [command] ...``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    if not args.command:
        from captioner.ui.app import run_gui

        return run_gui()
    return int(importlib.import_module(COMMANDS[args.command]).run(args))


if __name__ == "__main__":
    sys.exit(main())
