"""``captioner devices``: list microphones and system-audio sources separately.

System audio comes from the sound server on Linux (monitor sources, which PortAudio
never lists), WASAPI loopback on Windows and loopback drivers on macOS; when there is
none, the command says how to get one. Exit code 0, or 1 when PortAudio is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from captioner.audio.source import SourceError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``devices`` on the CLI."""
    p = subparsers.add_parser(
        "devices",
        help="list microphones and system-audio sources",
        description="List microphones and system-audio (monitor/loopback) sources. "
        "Use a name, part of a name, or a microphone's index with `captioner listen --mic/--system`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  captioner devices        # '*' marks what is used when no device is named\n"
               "  captioner listen --system alsa_output.usb-headset.analog-stereo",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    return p


def run(args: argparse.Namespace) -> int:
    """Print the two lists; ``*`` marks what is used when no device is named."""
    from captioner.audio import devices as D

    try:
        inventory = D.pulse_inventory() if sys.platform.startswith("linux") else None
        mics = D.list_microphones(inventory=inventory)
        system = D.list_system_sources(inventory=inventory)
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if getattr(args, "json", False):
        payload = {
            "microphones": [_plain(d) for d in mics],
            "system": [_plain(d) for d in system],
            "system_help": None if system else D.system_audio_help(),
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    print("Microphones:")
    if not mics:
        print("  (none found: connect a microphone, or start the sound server)")
    for d in mics:
        print(f"  {'*' if d.is_default else ' '} {_index(d)}{d.label()}")
    print("System audio:")
    if not system:
        print("  (none found)")
        print("  " + D.system_audio_help())
    for d in system:
        print(f"  {'*' if d.is_default else ' '} {d.label()}")
    return 0


def _index(d) -> str:
    return f"[{d.index}] " if d.index is not None and d.pulse_source is None else ""


def _plain(d) -> dict:
    out = asdict(d)
    out.pop("extra", None)
    return out
