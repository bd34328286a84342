"""Settings of one remote stream, and the wait for the end derived from them.

Below every module that reads them: the connection (:mod:`~captioner.asr.remote.connection`),
the session loop (:mod:`~captioner.asr.remote.session`) and the stream
(:mod:`~captioner.asr.remote.stream`).
"""

from __future__ import annotations

from dataclasses import dataclass

from captioner.asr.audio8.vad import DEFAULT_HYSTERESIS
from captioner.asr.remote import protocol as P


@dataclass(frozen=True)
class StreamConfig:
    """Settings of one remote stream.

    Attributes:
        url: the server.
        model_name: served model name sent in ``session.update``.
        language: "en" or "zh" (always sent: the server defaults to zh).
        delay_ms: ``target_delay_ms``.
        hotwords, hotword_boost: optional contextual biasing.
        token: bearer token for the handshake (``Authorization: Bearer``), or None.
        ca_file: PEM file of CA(s) that sign the ``wss://`` server certificate (a self-signed
            server certificate itself works), or None for the system store.
        connect_timeout_s: TCP + TLS + HTTP handshake limit (s).
        greet_timeout_s: wait for ``session.created`` (s).
        busy_timeout_s: no event at all this long after audio was sent on the first
            connection means the server serves another stream (s).
        stall_timeout_s: no message this long while audio waits for its tokens is a stalled
            connection: abort it and reconnect (s; the server sends a delta every 80 ms).
        end_margin_s: after the final commit, a quiet server gets the delay + look-ahead plus
            this long to send ``transcription.done`` (s; covers a few slow GPU steps, p99 73 ms,
            and network jitter: the padding steps come back to back, not at 80 ms).
        stop_flush_s: after Stop, the final flush gets at most this long (s; Stop must end
            within 2 s).
        reconnect_give_up_s: stop trying after the server was unreachable this long (s).
        backoff_s: first reconnect wait; doubles up to ``backoff_max_s`` (s).
        outage_buffer_s: audio kept while disconnected, sent after reconnecting (s of audio).
        resend_keep_s: sent audio kept before the transcribed point for a resend (s).
        max_pending_s: unsent audio while connected before ``push`` blocks (backpressure).
        keepalive_after_s: idle time before silence is sent to keep the generation alive (s).
        abandon_after_s: no audio at all for this long (the session was dropped without
            ``end()``): finish the generation and close, so the server is free again (s).
        answer_wait_s: how long a step waits for the delta of the audio it just sent, so text
            reaches the engine in the same step instead of the next one (s; 0 = never wait).
        vad_horizon_s, vad_threshold, vad_hysteresis: turn detection, as for local Audio8.
    """

    url: P.ServerURL
    model_name: str = P.DEFAULT_MODEL_NAME
    language: str = "en"
    delay_ms: int = 480
    hotwords: tuple[str, ...] = ()
    hotword_boost: float | None = None
    token: str | None = None
    ca_file: str | None = None
    connect_timeout_s: float = 5.0
    greet_timeout_s: float = 5.0
    busy_timeout_s: float = 5.0
    stall_timeout_s: float = 2.0
    end_margin_s: float = 0.5
    stop_flush_s: float = 1.2
    reconnect_give_up_s: float = 60.0
    backoff_s: float = 0.25
    backoff_max_s: float = 4.0
    outage_buffer_s: float = 30.0
    resend_keep_s: float = 3.0
    max_pending_s: float = 2.0
    keepalive_after_s: float = 2.0
    answer_wait_s: float = 0.06
    abandon_after_s: float = 30.0
    vad_horizon_s: float = 1.0
    vad_threshold: float = 0.5
    vad_hysteresis: float = DEFAULT_HYSTERESIS

    def __repr__(self) -> str:  # never show the token
        return f"StreamConfig(url={self.url.url!r}, model={self.model_name!r}, language={self.language!r})"


def end_wait_s(config: StreamConfig) -> float:
    """How long a quiet server may take to send ``transcription.done`` after the final commit
    (s): the delay plus the look-ahead it still holds, plus ``end_margin_s``."""
    return config.delay_ms / 1000 + P.LOOKAHEAD_SAMPLES / P.SAMPLE_RATE + config.end_margin_s
