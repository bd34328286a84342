"""Semantic-VAD turn detection with hysteresis.

The Audio8 VAD heads give, per clock step and per horizon (0.5/1/2/3 s, model card), a
softmax over 8 classes; class 0 means "no speech within the horizon" = end of turn
(reference ``Audio8ASRInfiniteForConditionalGeneration.attach_semantic_vad_heads``). The
reference client thresholds the 1 s horizon. One pause must give one boundary, so the
detector fires once when the end-of-turn probability rises to ``threshold`` and only re-arms
after it has fallen below ``threshold - hysteresis`` (the speaker talks again). It starts
disarmed: silence before the first words is not the end of a turn.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Default gap between the firing and the re-arming level.
DEFAULT_HYSTERESIS = 0.2


@dataclass
class TurnHysteresis:
    """Per-session end-of-turn detector on one horizon.

    Attributes:
        threshold: end-of-turn probability in (0, 1] at which a boundary fires.
        hysteresis: the probability must drop below ``threshold - hysteresis`` (at least
            ``threshold / 2``) before the next boundary can fire.
        armed: True while a turn is in progress (a boundary may fire).
    """

    threshold: float = 0.5
    hysteresis: float = DEFAULT_HYSTERESIS
    armed: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"VAD threshold must be in (0, 1], got {self.threshold}")
        if self.hysteresis < 0.0:
            raise ValueError(f"VAD hysteresis must be >= 0, got {self.hysteresis}")

    @property
    def rearm_level(self) -> float:
        """Probability below which the detector re-arms: ``threshold - hysteresis``, but at
        least half the threshold so a too-large hysteresis cannot disable re-arming."""
        return max(self.threshold - self.hysteresis, self.threshold / 2.0)

    def update(self, eot: float) -> bool:
        """Feed one step's end-of-turn probability; True exactly when a boundary fires."""
        if self.armed:
            if eot >= self.threshold:
                self.armed = False
                return True
        elif eot < self.rearm_level:
            self.armed = True
        return False


def horizon_index(horizons: tuple[float, ...], horizon_s: float) -> int:
    """Index of ``horizon_s`` among the checkpoint's horizons.

    Raises:
        ValueError: not one of them (the message lists the choices).
    """
    for i, h in enumerate(horizons):
        if abs(h - float(horizon_s)) < 1e-6:
            return i
    choices = ", ".join(f"{h:g}" for h in horizons) or "none (the checkpoint has no VAD heads)"
    raise ValueError(f"VAD horizon {horizon_s:g} s is not one of the model's horizons: {choices} s")
