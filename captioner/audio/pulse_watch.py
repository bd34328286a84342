"""Following the sound server while a stream records: where our stream is, the default output, liveness.

A :class:`PulseWatch` runs one pulsectl connection on its own daemon thread,
subscribed to source-output, source, sink and server events (``event_mask_set``,
``event_listen`` with a timeout). After every burst of events, and every
:data:`HEARTBEAT_S` without any, it asks the server for its state and publishes an
immutable :class:`PulseState`:

* the source our recording stream is connected to *now*, found by the
  ``captioner.stream`` tag that :class:`~captioner.audio.portaudio.pulse_source_env`
  put in the stream's proplist: when it differs from the source we opened, the
  server has moved the stream (a removed sink's monitor is rescued to the default
  source, i.e. the microphone);
* the default sink and its monitor (system audio follows it);
* the sources that exist (a pinned source that is gone is "device gone").

Every pulsectl call blocks while the server is frozen (``kill -STOP``), so nothing
else waits on this thread: :meth:`PulseWatch.answering` is true only while the last
published state is younger than :data:`STALE_S`. A server that went away is
reconnected every :data:`RECONNECT_S` (``connect(timeout=...)``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable

from captioner.audio.portaudio import STREAM_TAG_PROPERTY

log = logging.getLogger(__name__)

#: Seconds between state queries when no event arrives (a liveness probe; 4 small queries).
HEARTBEAT_S = 0.3
#: A state older than this (s) means the server is not answering (frozen or gone).
STALE_S = 1.0
#: Seconds between reconnection attempts while there is no server, and the connect timeout.
RECONNECT_S = 0.3
CONNECT_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class PulseState:
    """What the sound server said, at one moment.

    Attributes:
        at: ``time.monotonic()`` when the answer arrived.
        connected: a server answered (False: none is running, or the connection broke).
        default_sink: name of the default sink, or ``None``.
        default_monitor: that sink's monitor source, or ``None``.
        sources: names of every source (monitors included).
        stream_source: name of the source our tagged stream is connected to, or
            ``None`` when the server has no such stream (not open yet, or it died).
        tag: the stream tag ``stream_source`` was looked up for.
    """

    at: float
    connected: bool
    default_sink: str | None = None
    default_monitor: str | None = None
    sources: frozenset = frozenset()
    stream_source: str | None = None
    tag: str = ""


class PulseWatch:
    """Watches the sound server for one tagged recording stream.

    Args:
        tag: the stream's ``captioner.stream`` value; may be changed (``tag``
            attribute) when the stream is reopened.
        on_change: called on the watch thread after every new state (must not block).
        server: server address (``None``: libpulse's default, ``PULSE_SERVER``).

    Attributes:
        state: the newest :class:`PulseState`, or ``None`` before the first answer.
    """

    def __init__(self, tag: str, on_change: Callable[[], None] | None = None, server: str | None = None) -> None:
        self.tag = tag
        self.on_change = on_change
        self.server = server
        self.state: PulseState | None = None
        self._halt = threading.Event()
        self._pulse = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the watch thread (returns at once)."""
        self._halt.clear()
        self._thread = threading.Thread(target=self._run, name="captioner-pulse-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end; never waits for a frozen server (the thread is abandoned)."""
        self._halt.set()
        pulse = self._pulse
        if pulse is not None:
            try:
                pulse.event_listen_stop()
            except Exception:  # noqa: BLE001 - closed concurrently
                pass

    def answering(self, now: float | None = None) -> bool:
        """True when a server answered within the last :data:`STALE_S` seconds."""
        st = self.state
        now = time.monotonic() if now is None else now
        return st is not None and st.connected and now - st.at < STALE_S

    def wait_for_state(self, after: float, timeout_s: float) -> PulseState | None:
        """Poll (every 10 ms, up to ``timeout_s``) for a state taken at or after ``after``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not self._halt.is_set():
            st = self.state
            if st is not None and st.at >= after:
                return st
            self._halt.wait(0.01)
        return None

    # -- the watch thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        try:
            import pulsectl
        except Exception as exc:  # noqa: BLE001 - pulsectl missing or libpulse not loadable
            log.info("sound-server watch unavailable: %s", exc)
            return
        while not self._halt.is_set():
            pulse = self._connect(pulsectl)
            if pulse is None:
                self._publish(PulseState(time.monotonic(), False))
                self._halt.wait(RECONNECT_S)
                continue
            try:
                self._listen(pulse, pulsectl)
            except Exception as exc:  # noqa: BLE001 - PulseDisconnected, PulseError, libpulse CallError
                log.info("sound-server connection lost: %s", exc)
                self._publish(PulseState(time.monotonic(), False))
            finally:
                self._pulse = None
                try:
                    pulse.close()
                except Exception:  # noqa: BLE001
                    pass

    def _connect(self, pulsectl):
        pulse = pulsectl.Pulse("captioner-watch", server=self.server, connect=False)
        try:
            pulse.connect(timeout=CONNECT_TIMEOUT_S, autospawn=False)
        except Exception:  # noqa: BLE001 - no server (yet)
            pulse.close()
            return None
        return pulse

    def _listen(self, pulse, pulsectl) -> None:
        def on_event(ev) -> None:
            raise pulsectl.PulseLoopStop

        pulse.event_mask_set("source_output", "source", "sink", "server")
        pulse.event_callback_set(on_event)
        self._pulse = pulse
        while not self._halt.is_set():
            self._publish(self._query(pulse))
            pulse.event_listen(timeout=HEARTBEAT_S)

    def _query(self, pulse) -> PulseState:
        info = pulse.server_info()
        sources = pulse.source_list()
        by_index = {s.index: s.name for s in sources}
        default_monitor = None
        for s in pulse.sink_list():
            if s.name == info.default_sink_name:
                default_monitor = s.monitor_source_name or None
        stream_source, tag = None, self.tag
        for so in pulse.source_output_list():
            if so.proplist.get(STREAM_TAG_PROPERTY) == tag:
                stream_source = by_index.get(so.source)
        return PulseState(
            time.monotonic(), True, info.default_sink_name, default_monitor,
            frozenset(by_index.values()), stream_source, tag,
        )

    def _publish(self, state: PulseState) -> None:
        self.state = state
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - a broken listener must not end the watch
                log.exception("pulse watch listener failed")


__all__ = ["PulseState", "PulseWatch"]
