"""Where the caption page listens, the URLs it is reached at, and which Host headers it accepts.

- Loopback only by default (``127.0.0.1``); any other address is *network mode*, where every
  URL carries a random token (``secrets.token_urlsafe``, 128 bits, new per session unless the
  user pins one) as its first path segment.
- The Host header must name this machine in a way no DNS rebinding can fake: an IP address
  literal (a rebinding attack needs the attacker's own host *name*), ``localhost``, or this
  machine's own host name (``socket.gethostname()``, with ``.local``/``.lan``/``.home`` suffixes
  for mDNS and home routers). In loopback mode only loopback addresses and ``localhost``.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import secrets
import socket
from dataclasses import dataclass

DEFAULT_HOST = "127.0.0.1"
#: Default port (unassigned by IANA; chosen so that it rarely clashes with development servers).
DEFAULT_PORT = 47600
#: At most this many viewers at once (browser tabs, OBS sources, phones); the next one gets HTTP 503.
#: Each costs one queue and one socket write per caption operation: 20 viewers (one stalled) cost
#: the engine nothing measurable (bench/caption_page.py), 50 leaves headroom for a classroom.
MAX_VIEWERS = 50
_TOKEN = re.compile(r"[A-Za-z0-9_-]{8,64}")


class AddressError(ValueError):
    """A bad ``HOST:PORT``, a pinned token of the wrong form, or a port that cannot be used."""


@dataclass(frozen=True)
class Bind:
    """Where to listen.

    Attributes:
        host: IP address (or ``localhost``) to bind; ``0.0.0.0``/``::`` = every interface.
        port: TCP port, 1-65535 (0 = any free one, for tests).
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT

    @property
    def network(self) -> bool:
        """True when the page is reachable from other machines (token required)."""
        return not is_loopback(self.host)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP literals (``127.0.0.0/8``, ``::1``)."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_bind(text: str | None) -> Bind:
    """``--serve-captions`` value: ``""``/None (default), ``PORT``, ``HOST``, ``HOST:PORT`` or ``[V6]:PORT``.

    Port 0 picks any free port (the URL printed says which).

    Raises:
        AddressError: not one of those forms, or the port is outside 0-65535.
    """
    text = (text or "").strip()
    if not text:
        return Bind()
    host, port = text, str(DEFAULT_PORT)
    if text.isdigit():
        host, port = DEFAULT_HOST, text
    elif text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") and rest[1:] else str(DEFAULT_PORT)
    elif text.count(":") == 1:
        host, port = text.split(":")
    host = host or "0.0.0.0"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise AddressError(f"the caption page's port must be a number from 1 to 65535 (0: any free one), "
                           f"e.g. {DEFAULT_PORT}")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise AddressError("the caption page listens on an IP address: 127.0.0.1 (this computer only, the "
                               "default), 0.0.0.0 (every network) or one of this computer's addresses") from None
    return Bind(host, int(port))


def check_token(token: str | None) -> str:
    """A pinned token as given, or a new random one (None/"").

    Raises:
        AddressError: not 8-64 characters of ``A-Z a-z 0-9 _ -`` (it goes into URLs as is).
    """
    if not token:
        return secrets.token_urlsafe(16)
    if not _TOKEN.fullmatch(token):
        raise AddressError("a caption page token is 8 to 64 letters, digits, '_' or '-'")
    return token


def lan_address() -> str:
    """This machine's address on its default-route network, for URLs in network mode.

    A UDP socket "connected" to a documentation address picks the outgoing interface without
    sending anything; without a route it falls back to the host name's address, then 127.0.0.1.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            return s.getsockname()[0]
    except OSError:
        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return DEFAULT_HOST


def base_url(bind: Bind, port: int, token: str | None) -> str:
    """The caption page's URL (ends with ``/``): the token is its first path segment in network mode."""
    host = bind.host
    if host in ("0.0.0.0", "::"):
        host = lan_address()
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}/" + (f"{token}/" if token else "")


def host_allowed(host_header: str | None, network: bool) -> bool:
    """Whether a request's Host header may be served (see the module docstring)."""
    if not host_header:
        return False
    host = host_header.strip().lower()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    if host in ("localhost", "localhost."):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if not network:
            return False
        name = socket.gethostname().lower()
        return host in {name, name + ".local", name + ".lan", name + ".home", socket.getfqdn().lower()}
    return network or ip.is_loopback


def port_in_use(exc: OSError) -> bool:
    """True when binding failed because the port is taken."""
    return exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)) or "in use" in str(exc).lower()


def free_port_near(host: str, port: int, tries: int = 50) -> int | None:
    """The first port after ``port`` that ``host`` can bind right now (None when none of ``tries``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in range(port + 1, min(port + 1 + tries, 65536)):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, candidate))
                return candidate
            except OSError:
                continue
    return None
