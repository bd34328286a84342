"""The caption page's HTTP server: aiohttp on its own thread and asyncio loop, never the engine's.

Paths (under ``/TOKEN/`` in network mode, else under ``/``; only GET/HEAD; nothing changes state):

- ``/`` the rolling caption page, ``/transcript`` the whole session so far (static files from
  ``resources/``; their query parameters are checked by :mod:`.appearance`, HTTP 400 when refused);
- ``/style/captions`` and ``/style/transcript``: the checked appearance as JSON;
- ``/events``: Server-Sent Events, one caption operation per message (:mod:`.hub`). A viewer
  says what it has (``?since=EPOCH.SEQ`` or the ``Last-Event-ID`` header a browser resends on
  its own) and gets what it missed, then every new operation.

Costs are bounded: at most ``max_viewers`` viewers (HTTP 503 beyond); each has a queue of
``queue_limit`` messages and a small socket send buffer, and one that falls that far behind
(stopped reading) is disconnected; its page reconnects and catches up from where it was when it
reads again. Every response forbids framing by others' pages, sniffing and referrers; there is
no ``Access-Control-Allow-Origin`` at all, so other sites' scripts cannot read the captions.
"""

from __future__ import annotations

import asyncio
import hmac
import socket
import threading
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable

from captioner.caption_page import appearance
from captioner.caption_page.address import (
    MAX_VIEWERS,
    AddressError,
    Bind,
    base_url,
    check_token,
    free_port_near,
    host_allowed,
    port_in_use,
)
from captioner.caption_page.hub import CaptionHub, sse_message

#: Messages a viewer may have waiting before it counts as stalled and is dropped (a few minutes
#: of fast speech with partials; a reading browser keeps it near 0).
QUEUE_LIMIT = 1024
#: Socket send buffer per viewer (bytes): with the queue, what a stalled viewer can hold.
SEND_BUFFER = 64 * 1024
#: Seconds between keep-alive comments on an idle stream (finds closed connections).
KEEPALIVE_S = 15.0
#: How long (ms) a browser waits before reconnecting after the stream broke.
RETRY_MS = 1000
STATIC = {"caption-page.js": "application/javascript", "caption-page.css": "text/css",
          "favicon.png": "image/png"}
#: Resource file behind each static name (the favicon is the app icon).
FILES = {"favicon.png": "io.github.captioner.Captioner-32.png"}
PAGES = {"": ("caption-page.html", "captions"), "transcript": ("caption-transcript.html", "transcript")}
CSP = ("default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self'; "
       # inline styles only so that OBS's "Custom CSS" box still works; the page never builds CSS from input
       "style-src 'self' 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


class CaptionPageError(RuntimeError):
    """The caption page could not start; the message says why and what to do.

    Attributes:
        free_port: for a port in use, a port that was free when checked (else None).
    """

    def __init__(self, message: str, free_port: int | None = None) -> None:
        super().__init__(message)
        self.free_port = free_port


def resource(name: str) -> bytes:
    """A file of the page from ``resources/`` (raises FileNotFoundError in a broken install)."""
    return resources.files("captioner.resources").joinpath(name).read_bytes()


@dataclass(eq=False)
class _Viewer:
    queue: asyncio.Queue
    task: asyncio.Task
    transport: object
    last: int = 0


@dataclass(eq=False)
class CaptionServer:
    """Serves ``hub`` to browsers until :meth:`stop`.

    Args:
        hub: the session's caption operations (events reach it with ``hub.publish``).
        bind: address and port (:func:`.address.parse_bind`); port 0 picks a free one.
        token: network mode only: pinned token, or None for a new random one.
        max_viewers: connected viewers at most.
        queue_limit: messages waiting per viewer before it is dropped.
        on_viewers: called with the viewer count (on the server's thread) when it changes.

    Attributes:
        token: the URL token (None in loopback mode).
        port: the port listened on (after :meth:`start`).
        dropped: viewers disconnected for not reading.
    """

    hub: CaptionHub
    bind: Bind = field(default_factory=Bind)
    token: str | None = None
    max_viewers: int = MAX_VIEWERS
    queue_limit: int = QUEUE_LIMIT
    on_viewers: Callable[[int], None] | None = None
    port: int = 0
    dropped: int = 0
    _viewers: set = field(default_factory=set, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _stop_event: asyncio.Event | None = field(default=None, repr=False)
    _error: BaseException | None = field(default=None, repr=False)
    _files: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.token = check_token(self.token) if self.bind.network else None

    # -- control (any thread) -----------------------------------------------------------------
    @property
    def url(self) -> str:
        """The caption page's URL (with the token in network mode)."""
        return base_url(self.bind, self.port, self.token)

    @property
    def transcript_url(self) -> str:
        """The whole-session transcript page's URL."""
        return self.url + "transcript"

    @property
    def viewers(self) -> int:
        """Viewers connected now."""
        return len(self._viewers)

    def start(self, timeout: float = 15.0) -> "CaptionServer":
        """Import aiohttp, bind and serve on a new daemon thread; returns once listening.

        Raises:
            CaptionPageError: aiohttp is missing, the port is in use (``free_port`` offers
                another), or the address cannot be bound.
        """
        for name in [p[0] for p in PAGES.values()] + list(STATIC):
            self._files[name] = resource(FILES.get(name, name))
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="caption-page", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise CaptionPageError("the caption page did not start in time")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 2.0) -> bool:
        """Disconnect every viewer and close the port; True when done within ``timeout`` s."""
        loop, thread = self._loop, self._thread
        if loop is not None and self._stop_event is not None:
            try:
                loop.call_soon_threadsafe(self._stop_event.set)
            except RuntimeError:  # loop already closed
                pass
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    # -- server thread ---------------------------------------------------------------------------
    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(ready))
        except BaseException as exc:  # noqa: BLE001 - reported by start()
            self._error = exc if isinstance(exc, CaptionPageError) else CaptionPageError(
                f"the caption page stopped: {exc}")
        finally:
            self.hub.wake = None
            if self._fanout in self.hub.listeners:
                self.hub.listeners.remove(self._fanout)
            loop.close()
            ready.set()

    async def _serve(self, ready: threading.Event) -> None:
        try:
            from aiohttp import web
        except ImportError as exc:
            raise CaptionPageError("the caption page needs the aiohttp package: pip install aiohttp") from exc
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        app = web.Application(middlewares=[self._guard])
        app.on_response_prepare.append(self._headers)
        base = f"/{self.token}/" if self.token else "/"
        app.router.add_get(base, self._page)
        app.router.add_get(base + "transcript", self._page)
        app.router.add_get(base + "events", self._events)
        app.router.add_get(base + "style/{page}", self._style)
        for name in STATIC:
            app.router.add_get(base + name, self._static)
        runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.bind.host, self.bind.port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            raise self._bind_error(exc) from None
        server = getattr(site, "_server", None)
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1] if sockets else self.bind.port
        self.hub.listeners.append(self._fanout)
        self.hub.wake = lambda: self._loop.call_soon_threadsafe(self.hub.drain)
        self.hub.drain()
        ready.set()
        await self._stop_event.wait()
        for v in list(self._viewers):
            v.task.cancel()
        await runner.cleanup()

    def _bind_error(self, exc: OSError) -> CaptionPageError:
        where = f"{self.bind.host}:{self.bind.port}"
        if port_in_use(exc):
            free = free_port_near(self.bind.host, self.bind.port)
            offer = f" Port {free} is free: use it (--serve-captions {self.bind.host}:{free}, or the Port box in " \
                    "Settings)." if free else " Choose another port."
            return CaptionPageError(f"the caption page cannot listen on {where}: another program uses that "
                                    f"port.{offer}", free)
        return CaptionPageError(f"the caption page cannot listen on {where}: {exc.strerror or exc}. Use 127.0.0.1 "
                                "(this computer) or 0.0.0.0 (every network), or one of this computer's addresses.")

    # -- HTTP ------------------------------------------------------------------------------------
    async def _guard(self, request, handler):
        from aiohttp import web

        if not host_allowed(request.headers.get("Host"), self.bind.network):
            return web.Response(status=403, text="captioner: this address is not served (Host header refused)\n")
        if self.token is not None:
            first = request.path.split("/")[1] if request.path.count("/") >= 2 else ""
            if not hmac.compare_digest(first.encode(), self.token.encode()):
                return web.Response(status=403, text="captioner: wrong or missing caption page token; copy the "
                                                     "address from captioner again\n")
        return await handler(request)

    _guard.__middleware_version__ = 1  # aiohttp's marker for new-style middlewares (web.middleware)

    @staticmethod
    async def _headers(request, response) -> None:
        h = response.headers
        h["X-Content-Type-Options"] = "nosniff"
        h["Referrer-Policy"] = "no-referrer"
        h["Content-Security-Policy"] = CSP
        h["Cache-Control"] = "no-store"
        h.pop("Access-Control-Allow-Origin", None)
        h["Server"] = "captioner"  # not the library's name and version

    async def _page(self, request):
        from aiohttp import web

        name, page = PAGES["transcript" if request.path.endswith("/transcript") else ""]
        try:
            appearance.parse(request.query, page)
        except appearance.AppearanceError as exc:
            return web.Response(status=400, text=f"captioner caption page: {exc}\n")
        return web.Response(body=self._files[name], content_type="text/html", charset="utf-8")

    async def _style(self, request):
        from aiohttp import web

        page = request.match_info["page"]
        if page not in ("captions", "transcript"):
            return web.Response(status=404, text="no such page\n")
        try:
            checked = appearance.parse(request.query, page)
        except appearance.AppearanceError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(appearance.style_json(checked))

    async def _static(self, request):
        from aiohttp import web

        name = request.path.rpartition("/")[2]
        kind = STATIC[name]
        return web.Response(body=self._files[name], content_type=kind,
                            charset=None if kind.startswith("image/") else "utf-8")

    async def _events(self, request):
        from aiohttp import web

        if len(self._viewers) >= self.max_viewers:
            return web.Response(status=503, text=f"captioner: the caption page has its maximum of "
                                                 f"{self.max_viewers} viewers\n", headers={"Retry-After": "10"})
        epoch, seq = _since(request.query.get("since") or request.headers.get("Last-Event-ID"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"})
        sock = request.transport.get_extra_info("socket") if request.transport else None
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
            except OSError:
                pass
        await resp.prepare(request)
        reset, ops = self.hub.since(epoch, seq)  # drains: every op up to hub.last_seq is in here
        viewer = _Viewer(asyncio.Queue(self.queue_limit), asyncio.current_task(), request.transport,
                         self.hub.last_seq)
        first = [f"retry: {RETRY_MS}\n\n".encode()]
        if reset:
            first.append(sse_message({"t": "reset", "epoch": self.hub.epoch}))
        first += [op.wire for op in ops]
        self._viewers.add(viewer)
        self._count_changed()
        try:
            await resp.write(b"".join(first))
            while True:
                try:
                    msg = await asyncio.wait_for(viewer.queue.get(), KEEPALIVE_S)
                except asyncio.TimeoutError:
                    msg = b": keep-alive\n\n"
                await resp.write(msg)
        except (ConnectionError, asyncio.CancelledError, RuntimeError):
            pass
        finally:
            self._viewers.discard(viewer)
            self._count_changed()
        return resp

    # -- fan-out (server thread, from hub.drain) --------------------------------------------------
    def _fanout(self, ops) -> None:
        if ops is None:
            msg = sse_message({"t": "reset", "epoch": self.hub.epoch})
            for v in list(self._viewers):
                v.last = 0
                self._put(v, msg)
            return
        for v in list(self._viewers):
            for op in ops:
                if op.seq > v.last:
                    v.last = op.seq
                    if not self._put(v, op.wire):
                        break

    def _put(self, v: _Viewer, msg: bytes) -> bool:
        try:
            v.queue.put_nowait(msg)
            return True
        except asyncio.QueueFull:  # stopped reading: drop it (its page reconnects when it reads again)
            self._viewers.discard(v)
            self.dropped += 1
            abort = getattr(v.transport, "abort", None)
            if abort is not None:
                abort()
            v.task.cancel()
            self._count_changed()
            return False

    def _count_changed(self) -> None:
        if self.on_viewers is not None:
            try:
                self.on_viewers(len(self._viewers))
            except Exception:  # noqa: BLE001 - a view's callback must not break the server
                pass


def _since(text: str | None) -> tuple[str | None, int]:
    """``"EPOCH.SEQ"`` -> ``(epoch, seq)``; anything else -> ``(None, 0)`` (a new viewer)."""
    epoch, _, seq = (text or "").partition(".")
    if not epoch or not seq.isdigit() or len(epoch) > 32:
        return None, 0
    return epoch, int(seq)


__all__ = ["AddressError", "CaptionPageError", "CaptionServer"]
