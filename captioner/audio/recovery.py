"""Self-supervision of a sound-server stream: stall vs. device gone, resume, moved streams, default output.

:class:`Recovery` runs beside one :class:`~captioner.audio.device_source.DeviceSource`
opened on a PulseAudio/PipeWire source, on its own daemon thread, with a
:class:`~captioner.audio.pulse_watch.PulseWatch` for what the server says. Every
:data:`TICK_S` (and at once on a server event) it decides:

* **moved**: the server shows our (tagged) stream on another source than the one
  we opened (a removed output's monitor is "rescued" to the default source, the
  microphone). The stream's audio is marked untrusted at once, from the watch
  thread (queued audio of that stream is discarded, never delivered), the user is
  told, and the right source is reopened.
* **default output changed** (system audio chosen as "the default output"): the
  new default sink's monitor is opened instead, with a one-line notice.
* **stall**: no callback for ``stall_s`` (``startup_s`` before the first one) while
  the stream is still there: the session is kept, the user is told whether the
  device is suspended/idle or the server is not answering; when callbacks return,
  capture goes on (the break in the queue marks the gap with its real length).
* **stream ended or server gone** (PortAudio finished the stream, the server lost
  it, or the server is not running): the stream is abandoned and reopened every
  :data:`RETRY_S` once a server answers again (a sound-server restart reconnects).
* **gone**: the server answers but the pinned source has not existed for
  :data:`GONE_S`: the source fails with a "device gone" error (the live pipeline
  ends it, text kept).

No call here blocks on the server: opens run on their own (abandonable) threads,
pulsectl runs on the watch thread.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from typing import Any

from captioner.audio.abandon import OPEN_TIMEOUT_S, abandon_stream
from captioner.audio.portaudio import stream_tag
from captioner.audio.pulse_watch import PulseWatch
from captioner.audio.source import AudioSource, SourceError
from captioner.audio.watchdog import DEFAULT_STARTUP_S, DEFAULT_TIMEOUT_S

log = logging.getLogger(__name__)

#: Seconds between two supervision passes (a server event wakes it at once).
TICK_S = 0.05
#: Seconds between reopen attempts while the stream is gone.
RETRY_S = 0.5
#: Seconds a pinned source may be missing from a live server before it counts as gone
#: (after a sound-server restart the devices reappear within a second or two).
GONE_S = 3.0

_WHAT = {"microphone": "Microphone", "system": "System audio"}


class Recovery:
    """Supervises ``source`` (see the module docstring).

    Args:
        source: the started :class:`~captioner.audio.device_source.DeviceSource` (its
            ``device.pulse_source`` is set; it creates this supervisor, so it is not imported here).
        rate: native rate (Hz) of the stream it opened.
        channels: its channel count.
        stall_s: seconds without a callback that count as a stall once audio flowed.
        startup_s: seconds a fresh stream may take to deliver its first callback.
    """

    def __init__(
        self,
        source: AudioSource,
        rate: int,
        channels: int,
        stall_s: float = DEFAULT_TIMEOUT_S,
        startup_s: float = DEFAULT_STARTUP_S,
    ) -> None:
        self.src = source
        self.stall_s = float(stall_s)
        self.startup_s = float(startup_s)
        self.pinned = source.device.pulse_source
        self.opened = source.device.pulse_source  # the source our current stream was opened on
        self.expect = self.opened  # the source the stream with the current tag must be on
        self.format = (rate, channels)
        self.watch = PulseWatch(stream_tag(source, source._gen), self._on_state)
        self._halt = threading.Event()
        self._kick = threading.Event()
        self._thread: threading.Thread | None = None
        self._since = source.clock()  # when the current state began (source clock)
        self._callbacks = source.callback_count  # callbacks when the current state began
        self._seen = False  # the watch has seen the current stream on the server
        self._dead = False  # PortAudio finished the current stream
        self._attempt: threading.Thread | None = None
        self._attempt_started = 0.0
        self._next_attempt = 0.0
        self._missing_since: float | None = None
        self._switch_note: str | None = None
        self._stalled_told = False
        self._detached_at = 0.0  # time.monotonic() of the last detach

    @property
    def what(self) -> str:
        """"Microphone" or "System audio", for messages."""
        return _WHAT.get(self.src.kind, "Input")

    def start(self) -> None:
        """Start the watch and the supervision thread (returns at once)."""
        self.watch.start()
        self._thread = threading.Thread(target=self._run, name="captioner-recovery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End supervision; waits at most ``TICK_S`` + 0.2 s (never for the server)."""
        self._halt.set()
        self._kick.set()
        self.watch.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(TICK_S + 0.2)

    def stream_ended(self) -> None:
        """PortAudio finished the current stream by itself (its finished callback)."""
        self._dead = True
        self._kick.set()

    # -- watch thread ----------------------------------------------------------------------------------
    def _on_state(self) -> None:
        st = self.watch.state
        src = self.src
        if st is not None and st.connected and st.tag == self.watch.tag and st.stream_source is not None:
            if st.stream_source != self.expect:
                src._untrusted.add(src._gen)  # privacy first: this stream's audio is not what was chosen
        self._kick.set()

    # -- supervision thread ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._halt.is_set():
            self._kick.wait(TICK_S)
            self._kick.clear()
            if self._halt.is_set() or self.src._closing.is_set():
                break
            try:
                self._step()
            except Exception:  # noqa: BLE001 - supervision must go on
                log.exception("capture supervision failed")

    def _set(self, state: str) -> None:
        self.src.state = state
        self._since = self.src.clock()
        self._callbacks = self.src.callback_count

    def _step(self) -> None:
        src = self.src
        now = src.clock()
        mono = time.monotonic()
        st = self.watch.state
        answering = self.watch.answering(mono)
        fresh = st is not None and st.connected and st.tag == self.watch.tag
        if fresh and st.stream_source == self.expect:
            self._seen = True
        state = src.state
        if state in ("starting", "running", "stalled") and answering and fresh:
            if st.stream_source is not None and st.stream_source != self.expect:
                src._untrusted.add(src._gen)
                target = st.default_monitor if src.follow_default else self.pinned
                src._notify(
                    f"The sound server moved the {self.what.lower()} stream from {self.opened!r} to "
                    f"{st.stream_source!r}; that audio is discarded, never captioned as {src.label!r}. "
                    f"Reopening {target or 'the default output'!r}.",
                    "warning", "stream_moved",
                )
                self._detach()
                return
            if src.follow_default and st.default_monitor and st.default_monitor != self.expect:
                self._switch_note = (
                    f"System audio now follows the default output {st.default_sink!r} "
                    f"({st.default_monitor!r}, was {self.opened!r})."
                )
                self._detach()
                return
        if state == "starting":
            if src.callback_count > self._callbacks:
                self._running()
            elif self._dead or now - self._since > self.startup_s:
                self._stall(now - self._since, answering, st)
        elif state == "running":
            quiet = now - src.last_callback
            if self._dead or quiet > self.stall_s:
                self._stall(quiet, answering, st)
        elif state == "stalled":
            if src.callback_count > self._callbacks and not self._dead:
                self._running()
            elif self._dead or (st is not None and not st.connected) or (
                answering and fresh and self._seen and st.stream_source is None
            ):
                self._detach()  # the stream is gone: reopen it when a server answers
        if src.state == "reopening":
            self._reopen(now, mono, answering, st)

    def _running(self) -> None:
        src = self.src
        if self._stalled_told:
            src._notify(f"{self.what} {self.opened!r} is delivering audio again; captioning goes on.", "info", "resumed")
            self._stalled_told = False
        if self._switch_note:
            src._notify(self._switch_note, "info", "source_switched")
            self._switch_note = None
        self._set("running")

    def _stall(self, quiet: float, answering: bool, st: Any) -> None:
        src = self.src
        if self._dead or (st is not None and not st.connected):
            why = "the stream ended (sound server stopped or restarted?); captioner reconnects when it is back"
        elif not answering:
            why = "the sound server is not answering"
        else:
            why = "the device is still there (suspended or idle)"
        src._notify(
            f"{self.what} {self.opened!r} has delivered no audio{f' for {quiet:.1f} s' if quiet >= 0.1 else ''}: {why}. "
            "The session is kept and captioning resumes when audio returns.",
            "warning", "stalled",
        )
        self._stalled_told = True
        src._push_break(*self.format)  # the audio after this point comes after a gap
        if self._dead or (st is not None and not st.connected):
            self._detach()
        else:
            self._set("stalled")

    def _detach(self) -> None:
        """Give up the current stream (its callbacks are ignored from now on) and reopen."""
        src = self.src
        src._gen += 1
        stream, src._stream = src._stream, None
        self._dead = False
        self._seen = False
        self._set("reopening")
        self._next_attempt = 0.0
        self._detached_at = time.monotonic()
        threading.Thread(target=abandon_stream, args=(stream,), name="captioner-abandon", daemon=True).start()

    def _reopen(self, now: float, mono: float, answering: bool, st: Any) -> None:
        src = self.src
        if self._attempt is not None:
            if self._attempt.is_alive() and mono - self._attempt_started < OPEN_TIMEOUT_S:
                return
            if self._attempt.is_alive():  # blocked on a frozen server: abandoned; it closes its own stream
                src._gen += 1
            self._attempt = None
            self._next_attempt = mono + RETRY_S
        if mono < self._next_attempt or not answering or st.at <= self._detached_at:
            return  # only once a server has answered since the stream was given up
        target = st.default_monitor if src.follow_default else self.pinned
        if not target or target not in st.sources:
            if src.follow_default:
                return
            self._missing_since = self._missing_since or mono
            if mono - self._missing_since > GONE_S:
                self._set("gone")
                src._fail(f"the {src.kind} {self.pinned!r} is gone from the sound server (removed or unplugged)")
            return
        self._missing_since = None
        gen = src._gen + 1
        self.expect = target  # before the tag: a state for the new tag is judged against it
        src._gen = gen
        self.watch.tag = stream_tag(src, gen)
        self._attempt_started = mono
        self._attempt = threading.Thread(
            target=self._attempt_open, args=(target, gen), name="captioner-reopen", daemon=True
        )
        self._attempt.start()

    def _attempt_open(self, target: str, gen: int) -> None:
        src = self.src
        try:
            stream, rate, channels = src._open_stream(target, gen)
        except SourceError as exc:
            log.info("reopening %s failed: %s", target, exc)
            self._kick.set()
            return
        if gen != src._gen or self._halt.is_set():
            abandon_stream(stream)
            return
        src._stream = stream
        if target != self.opened and self._switch_note is None and target != self.pinned:
            self._switch_note = f"System audio now records {target!r} (was {self.opened!r})."
        self.opened = target
        self.format = (rate, channels)
        if target != src.device.pulse_source:
            src.device = replace(src.device, name=target, pulse_source=target, description=target)
        self._set("starting")
        self._kick.set()


__all__ = ["GONE_S", "RETRY_S", "Recovery"]
