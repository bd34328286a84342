"""Remote backend: Audio8 ASR Infinite served by its vLLM build over ``/v1/realtime`` (no Qt).

Install with ``pip install 'captioner[remote]'`` (the ``websockets`` client). Modules:
``protocol`` (URLs, client events, error codes; pure), ``config`` (a stream's settings),
``faults`` (the three fault kinds), ``connection`` (one websocket: connect, greet, the liveness
and end rules), ``generation`` (one server generation's events,
errors by kind, the reconnect seam), ``timemap`` (step clock -> stream time), ``resend`` (audio
queued and kept for a resend), ``session`` (sessions and reconnects on the loop thread),
``stream`` (one source's stream, the caller's API, Stop), ``backend`` (the
:class:`~captioner.asr.base.Backend`).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from captioner.asr.base import BackendError

#: Environment variable holding the server key (``Authorization: Bearer``); never logged.
TOKEN_ENV = "CAPTIONER_REMOTE_TOKEN"
INSTALL_HINT = "pip install 'captioner[remote]'"


def url_problem(model: str | None) -> str | None:
    """Why ``model`` is not a valid list of server URLs, or None (cheap, no import of websockets)."""
    from captioner.asr.remote.protocol import ProtocolError, parse_server_urls

    try:
        parse_server_urls(str(model or ""))
    except ProtocolError as exc:
        return str(exc)
    return None


def load_remote_backend(
    urls: str | Sequence[str],
    delay_ms: int = 480,
    language: str = "en",
    *,
    model_name: str | None = None,
    token: str | None = None,
    ca_file: str | None = None,
    hotwords: Sequence[str] = (),
    hotword_boost: float | None = None,
    vad_horizon_s: float = 1.0,
    vad_threshold: float = 0.5,
    vad_hysteresis: float | None = None,
    batch_size: int | None = None,
    **timeouts: Any,
) -> Any:
    """Build a :class:`~captioner.asr.remote.backend.RemoteBackend` (connects lazily, per session).

    Args:
        urls: ``ws://``/``wss://`` URL(s), a list or comma-separated; one per live source.
        delay_ms: ``target_delay_ms`` (multiple of 80 in 80..1200, 1600, 2400).
        language: "en" or "zh" (always sent; the server would default to zh).
        model_name: served model name (default ``audio8-asr-infinite``).
        token: server key; default from ``$CAPTIONER_REMOTE_TOKEN``; sent only in the
            handshake's ``Authorization: Bearer`` header.
        ca_file: PEM CA/certificate that signs a ``wss://`` server (self-signed proxy).
        hotwords, hotword_boost: optional contextual biasing (boost 0-10).
        vad_horizon_s, vad_threshold, vad_hysteresis: turn detection, the same rules and defaults
            as local Audio8 (``captioner.asr.audio8.vad``; hysteresis None = its default).
        batch_size: sessions per engine call (default: number of URLs, at least 2).
        **timeouts: :class:`~captioner.asr.remote.config.StreamConfig` timing fields.

    Raises:
        BackendError: websockets missing, an invalid URL/delay/language/VAD setting or CA file.
    """
    try:
        import websockets  # noqa: F401
    except ImportError as exc:
        raise BackendError(f"the remote backend needs the websockets package: {INSTALL_HINT}") from exc
    from captioner.asr.audio8.vad import DEFAULT_HYSTERESIS
    from captioner.asr.remote import protocol as P
    from captioner.asr.remote.backend import RemoteBackend
    from captioner.asr.remote.config import StreamConfig

    text = urls if isinstance(urls, str) else ",".join(urls)
    try:
        parsed = P.parse_server_urls(text)
        delay = P.check_delay(delay_ms)
    except P.ProtocolError as exc:
        raise BackendError(str(exc)) from None
    lang = str(language).strip().lower()
    if lang not in ("en", "zh"):
        raise BackendError(f"language {language!r} is not supported by Audio8 ASR Infinite; choose en or zh")
    if not 0.0 < float(vad_threshold) <= 1.0:
        raise BackendError(f"VAD threshold must be in (0, 1], got {vad_threshold}")
    if ca_file and not os.path.isfile(ca_file):
        raise BackendError(f"CA file not found: {ca_file}")
    if ca_file and not any(u.secure for u in parsed):
        raise BackendError("--ca-file applies to wss:// servers only")
    if hotword_boost is not None and not 0.0 <= float(hotword_boost) <= 10.0:
        raise BackendError(f"hotword boost must be between 0 and 10, got {hotword_boost}")
    unknown = set(timeouts) - set(StreamConfig.__dataclass_fields__)
    if unknown:
        raise BackendError(f"unknown remote option(s): {', '.join(sorted(unknown))}")
    config = StreamConfig(
        url=parsed[0], model_name=model_name or P.DEFAULT_MODEL_NAME, language=lang, delay_ms=delay,
        hotwords=tuple(str(h).strip() for h in hotwords if str(h).strip()), hotword_boost=hotword_boost,
        token=token if token is not None else (os.environ.get(TOKEN_ENV) or None), ca_file=ca_file,
        vad_horizon_s=float(vad_horizon_s), vad_threshold=float(vad_threshold),
        vad_hysteresis=DEFAULT_HYSTERESIS if vad_hysteresis is None else float(vad_hysteresis), **timeouts,
    )
    return RemoteBackend(parsed, config, batch_size or max(2, len(parsed)))


__all__ = ["INSTALL_HINT", "TOKEN_ENV", "load_remote_backend", "url_problem"]
