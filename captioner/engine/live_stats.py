"""Live captioning's per-source statistics: Stats events, dropped audio, the backlog, "too slow".

:class:`LiveStats` is mixed into :class:`~captioner.engine.live.LiveCaptioner`, which owns what it
uses (the lanes, the backend, :class:`~captioner.engine.too_slow.TooSlow`, ``_emit``).
"""

from __future__ import annotations

import dataclasses

from captioner.engine.lanes import Lane
from captioner.events import Notice


class LiveStats:
    """Stats and backlog of :class:`~captioner.engine.live.LiveCaptioner` (a mixin)."""

    def _emit_stats(self, lanes: list[Lane] | None = None, ended: dict | None = None) -> None:
        if not ended:
            self._check_too_slow()
        budget = getattr(self.backend, "budget", None)
        for lane in lanes or [lane for lane in self._lanes if not lane.ended]:
            st = lane.source.stats()
            ss = ended[id(lane)] if ended else lane.session.stats()
            rate = lane.source.target_rate
            dropped_s = st.dropped_s + lane.dropped / rate
            dropped_s += ss.dropped_s  # audio a remote backend could not deliver during an outage
            self._emit(
                dataclasses.replace(
                    ss,
                    backlog_s=0.0 if ended else self._backlog(lane),
                    dropped_s=dropped_s,
                    overflows=st.overflows,
                    source=lane.source.label,
                    load=budget.load() if budget is not None else 0.0,
                    partials_shed=budget.shed if budget is not None else 0,
                )
            )
            drops = st.dropped_blocks + lane.drops
            if drops > lane.drops_reported:
                lane.drops_reported = drops
                self._emit(
                    Notice(
                        f"{dropped_s:.1f} s of {lane.source.label} audio were dropped because decoding fell "
                        f"{self.max_backlog_s:g} s behind; choose a faster model or fewer sources.",
                        "warning",
                        "dropped",
                        lane.source.label,
                    )
                )

    def _check_too_slow(self) -> None:
        """Tell the user once per run when the model cannot keep up even without partials."""
        notice = self._too_slow.check(self.backlog_s(), getattr(self.backend, "budget", None), self.clock(),
                                      self.backend.name)
        if notice is not None:
            self._emit(notice)

    def _backlog(self, lane: Lane) -> float:
        rate = lane.session.sample_rate
        return lane.source.stats().queued_s + (lane.pending_samples + lane.session.pending_samples) / rate
