"""``captioner devices``: list audio input devices (placeholder until the capture layer lands)."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``devices`` subcommand."""
    sub.add_parser("devices", help="list microphones and system-audio sources")


def run(args: argparse.Namespace) -> int:
    """Print input devices; returns the exit code."""
    try:
        import sounddevice as sd
    except OSError as exc:
        print(f"captioner: error: cannot use the sound system ({exc}); install libportaudio2", file=sys.stderr)
        return 1
    for i, dev in enumerate(sd.query_devices()):
        if dev["max_input_channels"] > 0:
            print(f"{i:3d}  {dev['name']}  ({dev['max_input_channels']} ch, {dev['default_samplerate']:.0f} Hz)")
    return 0
