"""The activity indicator for backends that decide turn ends themselves (Audio8's VAD heads).

Backends with their own semantic-VAD heads report :class:`~captioner.events.VadProbabilities`
instead of audio for a :class:`~captioner.engine.turns.TurnDetector`; this turns them into the
same :class:`~captioner.events.VoiceActivity` states the detector reports.
"""

from __future__ import annotations

from typing import Any

from captioner.events import TurnBoundary, VoiceActivity

#: Speech probability that counts as speech: here 1 - the shortest horizon's end-of-turn
#: probability; the turn detector starts speech at the same VAD probability.
SPEECH_ON = 0.5
#: Stream seconds between VoiceActivity reports while nothing changes.
ACTIVITY_INTERVAL_S = 0.5


class HeadActivity:
    """Indicator state for backends with their own semantic-VAD heads (Audio8).

    Speech probability = 1 - the end-of-turn probability of the shortest horizon
    ("no speech within 0.5 s"); a turn boundary switches to "turn over" until speech
    is heard again.

    Args:
        source: label stamped on events.
    """

    def __init__(self, source: str = "") -> None:
        self.source = source
        self.state = "idle"
        self._t = -1.0

    def vad(self, ev: Any) -> VoiceActivity | None:
        """A :class:`~captioner.events.VadProbabilities` step -> activity, or None when nothing changed."""
        if not ev.eot:
            return None
        shortest = min(range(len(ev.eot)), key=lambda i: ev.horizons[i] if i < len(ev.horizons) else i)
        speech = 1.0 - float(ev.eot[shortest])
        if speech >= SPEECH_ON:
            state = "speaking"
        elif self.state in ("speaking", "pause"):
            state = "pause"
        else:
            state = self.state
        if state == self.state and (state in ("idle", "turn_over") or ev.time - self._t < ACTIVITY_INTERVAL_S):
            return None
        self.state, self._t = state, float(ev.time)
        return VoiceActivity(float(ev.time), speech, state, self.source)

    def boundary(self, ev: TurnBoundary) -> VoiceActivity:
        """A turn boundary fired: the dot shows "turn over"."""
        self.state, self._t = "turn_over", float(ev.time)
        return VoiceActivity(float(ev.time), 0.0, "turn_over", self.source)
