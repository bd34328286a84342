"""The capture thread of live captioning: every source read into its lane, levels, device loss, gaps.

:class:`CaptureThread` is mixed into :class:`~captioner.engine.live.LiveCaptioner`, which starts
:meth:`~CaptureThread._capture_loop` on its own thread and owns what it uses (the lanes, the
watchdog, the wake-up events, ``_emit``). It reads every source about every 10-20 ms
(conversion, levels, watchdog) into the source's lane, so a slow model never delays level
meters, device-loss detection or the capture queues; the decode thread feeds the lanes to the
sessions.

Sound captions (issue 49) are detected here too, on the audio as it is queued, and emitted at
once: a sound's caption waits for its own 0.96 s patches and never for the speech model (fed by
the decode thread from the same queue, it may be reading a line for up to a second, and a sound
handed over with the next decoded row came 2-4 s late live). Its times are the queue's stream
times (:attr:`~captioner.engine.lanes.Lane.gap_samples`), which are the times the session's
events take, so the transcript (kept in time order) puts each sound where it was heard.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from captioner.engine.lanes import Gap, Lane
from captioner.engine.session import sanitize
from captioner.events import Notice
from captioner.native_calls import ProcessExiting, model_call

log = logging.getLogger("captioner.engine.live")

#: Shortest time (s) between two passes of the capture thread over its sources while
#: audio is arriving. A device calls back every 10-20 ms; reading each block as it comes
#: woke the capture and decode threads 50-100 times a second for 5 % of a core (measured
#: in bench/latency.py). The engine decodes in 100 ms chunks, so reading every 50 ms
#: costs no caption latency that matters (25 ms on average) and halves the wake-ups.
#: Files played as fast as possible (``FileSource(realtime=False)``) are not held back.
READ_INTERVAL_S = 0.05


class CaptureThread:
    """The capture thread's methods of :class:`~captioner.engine.live.LiveCaptioner` (a mixin)."""

    def _capture_loop(self) -> None:
        try:
            while True:
                lanes = [lane for lane in self._lanes if not lane.capture_done]
                if not lanes:
                    break
                self._wakeup.clear()
                halt = self._halt.is_set()
                t_pass = time.monotonic()
                got = False
                for lane in lanes:
                    got |= self._capture(lane, halt)
                if got or halt or any(lane.capture_done for lane in lanes):
                    self._decode_wakeup.set()
                if halt:
                    continue
                if got and all(getattr(lane.source, "realtime", True) for lane in lanes):
                    # let the devices queue a few blocks: one pass per READ_INTERVAL_S
                    self._halt.wait(max(0.0, t_pass + READ_INTERVAL_S - time.monotonic()))
                else:
                    self._wakeup.wait(self._sleep_s(lanes))
        except Exception:  # noqa: BLE001 - must never leave the decoder waiting forever
            log.exception("audio capture failed")
            for lane in self._lanes:
                lane.source.stop()
                lane.capture_done = True
        finally:
            self._decode_wakeup.set()

    def _capture(self, lane: Lane, halt: bool) -> bool:
        src = lane.source
        final = halt or src.finished or not src.is_running
        if halt:
            src.stop()
        elif not final:
            for notice in src.take_notices():
                self._emit(notice)
            message = self.watchdog.check(src, self.clock())
            if message:
                src.stop()
                lane.end_notice = Notice(message, "error", "device_lost", src.label)
                final = True
        if final and lane.end_notice is None and src.finished:
            lane.end_notice = Notice(f"{src.description} has ended.", "info", "source_ended", src.label)
        block = src.read(flush=final)
        if block is not None:
            if block.gap_before > 0:
                self._gap(lane, block)
            lane.meter.source = src.label
            for level in lane.meter.feed(block.samples):
                self._emit(level)
            at = lane.pushed + lane.gap_samples
            self._sounds(lane, self._enqueue(lane, block.samples), at)
        if final:
            lane.capture_done = True
        return block is not None

    def _sounds(self, lane: Lane, samples: np.ndarray, at: int) -> None:
        """Run ``lane``'s sound detector over the ``[n] float32`` samples just queued (stream index
        ``at``) and emit the sounds that started (and a sound-model notice) now."""
        if lane.sounds is None or not len(samples):
            return
        try:
            with model_call():  # an ONNX Runtime call (captioner.native_calls)
                events = lane.sounds.feed(sanitize(samples)[0], at)  # NaN as silence, clipped, as the session does
        except ProcessExiting:
            return
        for ev in events:
            self._emit(ev)

    def _gap(self, lane: Lane, block) -> None:
        """Queue a gap marker before ``block``; its notice (true times) follows the words before it."""
        t1 = self.time_offset + block.start
        lane.gap_samples += int(round(block.gap_before * lane.source.target_rate))
        if lane.sounds is not None:
            lane.sounds.reset()  # the audio after a gap is a new stream for the detector's patches
        lane.mark_gap(Gap(block.gap_before, Notice(
            f"No audio from {lane.source.label} between {_clock(t1 - block.gap_before)} and {_clock(t1)} "
            f"({block.gap_before:.1f} s); the transcript's times continue after the gap.",
            "info",
            "gap",
            lane.source.label,
        )))

    def _enqueue(self, lane: Lane, samples) -> np.ndarray:
        """Queue ``samples`` on ``lane``; returns the part queued (the rest past the backlog is dropped)."""
        return lane.enqueue(samples, int(self.max_backlog_s * lane.source.target_rate))

    def _sleep_s(self, lanes: list[Lane]) -> float:
        waits = [self.poll_s]
        for lane in lanes:
            due = getattr(lane.source, "seconds_until_due", None)
            if due is not None:
                waits.append(due())
        return max(0.0, min(waits))


def _clock(t: float) -> str:
    """Stream time ``t`` (s) as ``M:SS.s`` (``H:MM:SS.s`` past an hour)."""
    m, sec = divmod(max(0.0, t), 60.0)
    h, m = divmod(int(m), 60)
    return f"{h}:{m:02d}:{sec:04.1f}" if h else f"{m}:{sec:04.1f}"
