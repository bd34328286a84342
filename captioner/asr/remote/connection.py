"""One websocket to an Audio8 realtime server: connect, greet, liveness, close (no Qt).

Faults are raised as the three kinds of :mod:`captioner.asr.remote.faults`.

The liveness rule (:func:`check_quiet`) uses the server's 80 ms cadence: every step brings a
``transcription.delta``, empty ones included (DESIGN section 2, "Liveness"), so a quiet socket
while audio is waiting for its tokens is a stall after ``stall_timeout_s`` (2 s: 25 missing
steps, far beyond a GPU's p99 step time of 73 ms and any LAN jitter), whether or not TCP
ever notices (a half-open connection never closes by itself).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import TYPE_CHECKING, Any, Callable

from captioner.asr.remote import protocol as P
from captioner.asr.remote.config import StreamConfig, end_wait_s
from captioner.asr.remote.faults import EndedWithoutDone, Fatal, Stalled, Transient

if TYPE_CHECKING:  # pragma: no cover
    from captioner.asr.remote.generation import Generation

#: The websockets library logs every frame and handshake header (audio, the key) at DEBUG:
#: give it a logger that never goes below INFO, whatever the application's logging level.
WIRE_LOG = logging.getLogger("captioner.asr.remote.stream.wire")
WIRE_LOG.setLevel(logging.INFO)
#: Largest server message accepted (bytes): a delta is a few bytes, ``transcription.done`` the
#: text of one generation (a 30 s window); anything bigger is garbage and ends the connection.
MAX_MESSAGE_BYTES = 2**22


def check_quiet(gen: "Generation", config: "StreamConfig", url: str, first_session: bool, now: float) -> None:
    """Apply the liveness rules to a generation that received nothing for a while.

    Raises:
        EndedWithoutDone: the final commit was sent and nothing came for :func:`end_wait_s`.
        Fatal: the very first session never answered for ``busy_timeout_s`` (the server
            serves another stream: it accepts, greets and then says nothing).
        Stalled: audio waited for its tokens and nothing came for ``stall_timeout_s``.
    """
    if gen.final_sent:
        quiet = now - max(gen.final_at, gen.last_event)
        if quiet > end_wait_s(config):
            raise EndedWithoutDone(f"no transcription.done within {quiet:.1f} s of the last message")
        return
    if not gen.unanswered():
        return
    quiet = now - max(gen.sent_at, gen.last_event)
    if first_session and not gen.answered_once:
        if quiet > config.busy_timeout_s:
            raise Fatal(
                f"Caption server {url} accepted the stream but sent nothing for {quiet:.0f} s: it is busy "
                "serving another stream (one stream per server as deployed). Start a second server "
                "(docker compose --profile second) or stop the other client."
            )
        return
    if quiet > config.stall_timeout_s:
        raise Stalled(f"no message for {quiet:.1f} s while audio was waiting (a stalled connection)")


def abort(ws: Any) -> None:
    """Drop the TCP connection at once: no close handshake (a stalled peer never answers one)."""
    transport = getattr(ws, "transport", None)
    if transport is not None:
        transport.abort()


def close_reason(exc: BaseException) -> str:
    """What a ``ConnectionClosed`` (or other send/recv failure) says, for the user."""
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is not None:
        reason = f": {rcvd.reason}" if rcvd.reason else ""
        return f"the server closed the connection (code {rcvd.code}{reason})"
    sent = getattr(exc, "sent", None)
    if sent is not None and sent.code == 1009:  # the client refused an oversized frame itself
        return f"the server sent a message over the {MAX_MESSAGE_BYTES // 2**20} MiB limit"
    if type(exc).__name__.startswith("ConnectionClosed"):
        return "the connection dropped"
    return f"{type(exc).__name__}: {exc}"


async def open_session(config: "StreamConfig", on_socket: Callable[[Any], None]) -> Any:
    """Connect, wait for ``session.created``, send the settings and start a generation.

    Args:
        config: the stream's settings (URL, key, CA file, timeouts, session settings).
        on_socket: called with the websocket as soon as it exists (so a cancel can abort it).

    Returns:
        The open websocket, a generation started on it.

    Raises:
        Fatal, Transient: see the module docstring; messages name the URL.
    """
    from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

    c = config
    kwargs: dict[str, Any] = dict(open_timeout=c.connect_timeout_s, ping_interval=None, max_size=MAX_MESSAGE_BYTES,
                                  write_limit=2**16, proxy=None, compression=None,
                                  close_timeout=1.0, logger=WIRE_LOG)
    if c.token:
        kwargs["additional_headers"] = {"Authorization": f"Bearer {c.token}"}
    url = c.url.url
    if c.url.secure:
        try:
            kwargs["ssl"] = ssl.create_default_context(cafile=c.ca_file) if c.ca_file else ssl.create_default_context()
        except (OSError, ssl.SSLError) as exc:
            raise Fatal(f"cannot read the CA file {c.ca_file} for {url}: {exc}") from None
    try:
        ws = await _connect(url, **kwargs)
    except InvalidStatus as exc:
        status = exc.response.status_code
        if status in (401, 403):
            raise Fatal(f"Caption server {url} refused the key (HTTP {status}): set the server key "
                        "(CAPTIONER_REMOTE_TOKEN or the app's key field)") from None
        if 300 <= status < 400:
            where = exc.response.headers.get("Location", "?")
            raise Fatal(f"Caption server {url} redirects to {where}; captioner sends audio only where you "
                        "point it: configure that URL directly") from None
        if status == 404:
            raise Fatal(f"Caption server {url} has no realtime endpoint (HTTP 404): check the path "
                        f"(usually {P.DEFAULT_PATH})") from None
        raise Transient(f"Caption server {url} answered HTTP {status}") from None
    except InvalidURI as exc:
        raise Fatal(f"invalid server URL {url}: {exc}") from None
    except ssl.SSLCertVerificationError as exc:
        raise Fatal(f"Caption server {url}: its TLS certificate is not trusted ({exc.verify_message}); "
                    "give the server's certificate or CA with --ca-file") from None
    except socket.gaierror:
        raise Transient(f"Cannot connect to caption server {url}: the host {c.url.host!r} is unknown "
                        "(DNS lookup failed)") from None
    except ConnectionRefusedError:
        raise Transient(f"Cannot connect to caption server {url}: connection refused (is the server "
                        f"running and listening on port {c.url.port}?)") from None
    except (TimeoutError, asyncio.TimeoutError):
        raise Transient(f"Cannot connect to caption server {url}: no answer within "
                        f"{c.connect_timeout_s:g} s") from None
    except (InvalidHandshake, OSError, ssl.SSLError) as exc:
        raise Transient(f"Cannot connect to caption server {url}: {type(exc).__name__}: {exc}") from None
    on_socket(ws)
    try:
        try:
            first = await asyncio.wait_for(ws.recv(), c.greet_timeout_s)
            ev = P.parse_event(first)
        except (TimeoutError, asyncio.TimeoutError):
            raise Fatal(f"Caption server {url} accepted the connection but sent no session.created within "
                        f"{c.greet_timeout_s:g} s (is it an Audio8 realtime server?)") from None
        except P.ProtocolError as exc:
            raise Fatal(f"Caption server {url}: {exc}") from None
        if ev["type"] == "error":
            raise Fatal(P.error_message(ev, url))
        if ev["type"] != "session.created":
            raise Fatal(f"Caption server {url} began with {ev['type']!r} instead of session.created (is it an "
                        "Audio8 realtime server?)")
        await ws.send(P.session_update(c.model_name, c.language, c.delay_ms, c.hotwords, c.hotword_boost))
        await ws.send(P.commit(False))
    except Fatal:
        abort(ws)
        raise
    except Exception as exc:  # ConnectionClosed while greeting
        abort(ws)
        raise Transient(f"connection closed during the greeting ({close_reason(exc)})") from None
    return ws


_NO_REDIRECT: Any = None


def _connect(url: str, **kwargs: Any) -> Any:
    """``websockets.asyncio.client.connect(url, **kwargs)`` that refuses HTTP redirects, so
    audio (and the key) go only to the URL the user configured. Await it for the connection."""
    global _NO_REDIRECT
    if _NO_REDIRECT is None:
        from websockets.asyncio.client import connect

        class NoRedirect(connect):
            def process_redirect(self, exc: Exception) -> Exception:  # type: ignore[override]
                return exc  # "not a redirect": connect() raises the 3xx InvalidStatus

        _NO_REDIRECT = NoRedirect
    return _NO_REDIRECT(url, **kwargs)
