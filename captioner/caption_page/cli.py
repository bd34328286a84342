"""``captioner listen --serve-captions [HOST:PORT] [--caption-token TOKEN]``: the caption page from the CLI."""

from __future__ import annotations

import argparse
from typing import TextIO

from captioner.caption_page.address import DEFAULT_HOST, DEFAULT_PORT, MAX_VIEWERS, AddressError, parse_bind


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Register ``--serve-captions`` and ``--caption-token``."""
    p.add_argument("--serve-captions", nargs="?", const="", default=None, metavar="HOST:PORT",
                   help=f"serve a live caption page for browsers and OBS (default {DEFAULT_HOST}:{DEFAULT_PORT}, "
                        "this computer only; 0.0.0.0:PORT serves every network, with a secret token in the URL; "
                        f"at most {MAX_VIEWERS} viewers)")
    p.add_argument("--caption-token", default=None, metavar="TOKEN",
                   help="with --serve-captions on a network address: keep this token in the URL instead of a new "
                        "random one each run (8-64 letters, digits, '_' or '-')")


def check_arguments(args: argparse.Namespace) -> str | None:
    """A usage error about the caption page's options, or None."""
    if getattr(args, "serve_captions", None) is None:
        return "--caption-token needs --serve-captions" if getattr(args, "caption_token", None) else None
    try:
        bind = parse_bind(args.serve_captions)
        if args.caption_token and not bind.network:
            return ("--caption-token is for a network address (e.g. --serve-captions 0.0.0.0:%d); on this "
                    "computer only the page has no token" % bind.port)
        if args.caption_token:
            from captioner.caption_page.address import check_token

            check_token(args.caption_token)
    except AddressError as exc:
        return str(exc)
    return None


def start(args: argparse.Namespace, mask, err: TextIO):
    """Start the page when ``--serve-captions`` was given; returns ``(hub, server)`` or ``(None, None)``.

    Raises:
        captioner.caption_page.server.CaptionPageError: the port is in use (the message offers a
            free one) or aiohttp is missing.
    """
    if getattr(args, "serve_captions", None) is None:
        return None, None
    from captioner.caption_page.hub import CaptionHub
    from captioner.caption_page.server import CaptionServer

    bind = parse_bind(args.serve_captions)
    hub = CaptionHub(mask=mask)
    server = CaptionServer(hub, bind, token=args.caption_token).start()
    where = "every network" if bind.network else "this computer only"
    print(f"caption page ({where}): {server.url}  transcript: {server.transcript_url}", file=err, flush=True)
    return hub, server
