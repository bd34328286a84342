"""When to tell the user that the model cannot keep up: the ``too_slow`` notice, once per run.

The decode thread of :class:`~captioner.engine.live.LiveCaptioner` asks about once a
second (with its Stats). A run is too slow when the captions fall more than
``backlog_s`` behind, or when the backend's budget (:mod:`captioner.asr.moonshine.partial_worker`
style ``budget.overloaded``) reports that its required work alone does not fit in real
time. Audio queued while the model loaded (the sources open first, issue 27.3) is a
backlog to catch up on, not a slow model: it is added to the bound until the run has
caught up (backlog under 1 s), and the budget's verdict is ignored for one more budget
window after that (its load still counts those busy seconds).

Qt-free.
"""

from __future__ import annotations

from typing import Any

from captioner.events import Notice


class TooSlow:
    """Decides the one ``too_slow`` notice of a run.

    Args:
        backlog_s: seconds of captions behind past which the run is too slow.
        max_backlog_s: seconds a source may queue before audio is dropped (said in the notice).
    """

    def __init__(self, backlog_s: float = 10.0, max_backlog_s: float = 120.0) -> None:
        self.backlog_s = float(backlog_s)
        self.max_backlog_s = float(max_backlog_s)
        self.told = False
        self.catch_up_s = 0.0
        self.catch_up_until = 0.0

    def start(self, catch_up_s: float) -> None:
        """A new run, with ``catch_up_s`` seconds already queued before it (the model's load)."""
        self.told = False
        self.catch_up_s = float(catch_up_s)
        self.catch_up_until = 0.0

    def check(self, backlog: float, budget: Any, now: float, model: str) -> Notice | None:
        """The notice to send now, or None (not slow, or already told this run).

        Args:
            backlog: seconds of captured audio not decoded yet, worst source.
            budget: the backend's budget (``overloaded``, ``load()``, ``window_s``) or None.
            now: monotonic seconds.
            model: the backend's name, for the message.
        """
        if self.catch_up_s and backlog < 1.0:  # caught up on the audio queued while the model loaded; its
            self.catch_up_s = 0.0  # busy seconds stay in the budget's load for one more window
            self.catch_up_until = now + float(getattr(budget, "window_s", 0.0))
        catching_up = bool(self.catch_up_s) or now < self.catch_up_until
        slow = ((budget is not None and budget.overloaded and not catching_up)
                or backlog > self.backlog_s + self.catch_up_s)
        if not slow or self.told:
            return None
        self.told = True
        load = f" decoding alone takes {100 * budget.load():.0f} % of real time;" if budget else ""
        behind = (
            f"captions are {backlog:.0f} s behind" if backlog >= 1.0
            else "partial captions are skipped to keep up"
        )
        return Notice(
            f"The {model} model is too slow on this computer right now:{load} {behind}. "
            f"No audio is lost (it waits up to {self.max_backlog_s:g} s), but "
            "to keep up caption fewer sources, close busy programs, or choose a faster model "
            "(the remote backend, or Audio8 on a GPU).",
            "warning",
            "too_slow",
        )
