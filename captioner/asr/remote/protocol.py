"""The Audio8 realtime wire protocol (``/v1/realtime``): URLs, client events, server errors.

Pure functions, no I/O (DESIGN section 2, "Remote"). The server speaks JSON text frames only:

* server -> client: ``session.created``, then per 80 ms step ``metrics.delta``,
  ``semantic_vad.delta`` (VAD checkpoints only) and exactly one ``transcription.delta``
  (also when empty); ``transcription.done`` after ``commit final=true``; flat ``error``
  events ``{type, error, code}`` that never close the socket.
* client -> server: ``session.update`` (model, language, target_delay_ms, hotwords),
  ``input_audio_buffer.commit {final:false}`` (starts a generation),
  ``input_audio_buffer.append {audio: base64 PCM16 LE mono 16 kHz}``,
  ``input_audio_buffer.commit {final:true}`` (ends it).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import numpy as np

#: The only clock the server runs: one ``transcription.delta`` per 80 ms of audio.
STEP_MS = 80
SAMPLE_RATE = 16000
STEP_SAMPLES = SAMPLE_RATE * STEP_MS // 1000  # 1280
#: Model name the reference compose serves (``--served-model-name``).
DEFAULT_MODEL_NAME = "audio8-asr-infinite"
DEFAULT_PATH = "/v1/realtime"
#: Steps of text after the last audio step: the server pads delay + 1 + 10 steps of silence
#: after ``final`` (N steps of audio give N + delay + 11 deltas, the first delay ones about
#: its left pad).
SERVER_FLUSH_STEPS = 11
#: Audio the server needs beyond a step before it can decode it (2.5 ms look-ahead).
LOOKAHEAD_SAMPLES = 40
#: ``target_delay_ms`` values the server accepts: multiples of 80 in 80..1200, 1600, 2400.
SERVER_DELAYS_MS = tuple(range(80, 1201, 80)) + (1600, 2400)


class ProtocolError(ValueError):
    """A malformed server event or an invalid setting; the message says which."""


@dataclass(frozen=True)
class ServerURL:
    """A validated server address.

    Attributes:
        url: the normalised ``ws://`` / ``wss://`` URL (path defaults to ``/v1/realtime``).
        secure: True for ``wss://``.
        host, port: where the socket goes (port defaults to 80/443).
    """

    url: str
    secure: bool
    host: str
    port: int

    def __str__(self) -> str:
        return self.url


def parse_server_url(text: str) -> ServerURL:
    """Validate one server URL.

    Accepts ``ws://HOST[:PORT][/PATH][?QUERY]`` and ``wss://...``; an empty path becomes
    ``/v1/realtime``. Credentials in the URL are refused (they would be logged and shown):
    use a token (``CAPTIONER_REMOTE_TOKEN``) instead.

    Raises:
        ProtocolError: not a ws/wss URL, no host, a bad port, user info or a fragment.
    """
    raw = (text or "").strip()
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise ProtocolError(f"invalid server URL {raw!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme in ("http", "https"):
        suggestion = ("ws" if scheme == "http" else "wss") + raw[len(scheme):]
        raise ProtocolError(f"server URL {raw!r} must be a websocket URL: did you mean {suggestion}?")
    if scheme not in ("ws", "wss"):
        raise ProtocolError(
            f"server URL {raw!r} must start with ws:// or wss://, e.g. ws://HOST:18191{DEFAULT_PATH}"
        )
    if not parts.hostname:
        raise ProtocolError(f"server URL {raw!r} has no host, e.g. ws://HOST:18191{DEFAULT_PATH}")
    if parts.username is not None or parts.password is not None:
        raise ProtocolError(
            "server URL must not contain a user name or password; give a token with the "
            "CAPTIONER_REMOTE_TOKEN environment variable (or the key field of the app) instead"
        )
    if parts.fragment:
        raise ProtocolError(f"server URL {raw!r} must not contain a #fragment")
    path = parts.path if parts.path not in ("", "/") else DEFAULT_PATH
    netloc = parts.netloc
    url = urlunsplit((scheme, netloc, path, parts.query, ""))
    secure = scheme == "wss"
    return ServerURL(url, secure, parts.hostname, port or (443 if secure else 80))


def parse_server_urls(text: str) -> list[ServerURL]:
    """Validate a comma-separated list of server URLs (one stream per server and source).

    Raises:
        ProtocolError: an empty list or an invalid URL.
    """
    items = [t for t in (text or "").replace(" ", ",").split(",") if t.strip()]
    if not items:
        raise ProtocolError(f"the remote backend needs a server URL, e.g. ws://HOST:18191{DEFAULT_PATH}")
    return [parse_server_url(t) for t in items]


def check_delay(delay_ms: int) -> int:
    """The delay as ``target_delay_ms``; raises :class:`ProtocolError` for one the server refuses."""
    d = int(delay_ms)
    if d not in SERVER_DELAYS_MS:
        raise ProtocolError(
            f"delay {d} ms is not served: the server takes a multiple of {STEP_MS} ms from 80 to 1200, "
            "or 1600 or 2400 ms"
        )
    return d


# -- client events -----------------------------------------------------------------------------
def session_update(model: str, language: str, delay_ms: int, hotwords: tuple[str, ...] = (),
                   hotword_boost: float | None = None) -> str:
    """``session.update`` JSON. ``language`` is always sent (the server defaults to zh)."""
    ev: dict = {"type": "session.update", "model": model, "language": language, "target_delay_ms": int(delay_ms)}
    if hotwords:
        ev["hotwords"] = [str(w) for w in hotwords]
        if hotword_boost is not None:
            ev["hotword_boost"] = float(hotword_boost)
    return json.dumps(ev)


def commit(final: bool) -> str:
    """``input_audio_buffer.commit`` JSON: ``final=False`` starts a generation, True ends it."""
    return json.dumps({"type": "input_audio_buffer.commit", "final": bool(final)})


def append(pcm: bytes) -> str:
    """``input_audio_buffer.append`` JSON for ``pcm`` (PCM16 LE bytes, non-empty, even length)."""
    if not pcm or len(pcm) % 2:
        raise ProtocolError(f"an append needs a non-empty even number of PCM16 bytes, got {len(pcm)}")
    return '{"type":"input_audio_buffer.append","audio":"' + base64.b64encode(pcm).decode("ascii") + '"}'


def to_pcm16(samples: np.ndarray) -> bytes:
    """``[n] float32`` in [-1, 1] -> ``2n`` bytes of little-endian PCM16 (clipped, rounded)."""
    x = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    return np.round(x * 32767.0).astype("<i2").tobytes()


def parse_event(message: str | bytes) -> dict:
    """Decode one server frame into a dict with a string ``type``.

    Raises:
        ProtocolError: a binary frame, invalid JSON, or no ``type`` (the message names it).
    """
    if isinstance(message, (bytes, bytearray, memoryview)):
        raise ProtocolError("the server sent a binary frame; the realtime protocol uses JSON text frames only")
    try:
        ev = json.loads(message)
    except ValueError:
        raise ProtocolError(f"the server sent invalid JSON ({len(message)} characters)") from None
    if not isinstance(ev, dict) or not isinstance(ev.get("type"), str):
        raise ProtocolError("the server sent an event without a type")
    return ev


# -- server errors -----------------------------------------------------------------------------
#: ``error.code`` -> what it means for the user (the server's own text follows in the message).
ERROR_MESSAGES = {
    "invalid_json": "the server could not parse a message from captioner (client/server version mismatch)",
    "invalid_event": "the server refused the session settings (the model name is missing)",
    "model_not_found": "the server does not serve this model name; set the served model name "
                       "(the compose file serves 'audio8-asr-infinite')",
    "invalid_audio": "the server refused an audio packet (bad PCM16 data)",
    "model_not_validated": "the server received audio before accepting the session settings",
    "unknown_event": "the server does not understand a captioner message (is this an Audio8 realtime server?)",
    "processing_error": "the server failed while transcribing",
}


def error_message(event: dict, url: str) -> str:
    """One user-facing sentence for a server ``error`` event from ``url``."""
    code = str(event.get("code") or "")
    detail = str(event.get("error") or "").strip()
    meaning = ERROR_MESSAGES.get(code, f"the server reported an error ({code or 'no code'})")
    return f"Caption server {url}: {meaning}" + (f" [{code}: {detail[:200]}]" if detail else f" [{code}]")
