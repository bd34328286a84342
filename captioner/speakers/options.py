"""Speaker attribution options: ``--speakers auto|off|N`` and the Settings choice (issue 38).

Attribution runs inside sources that carry other people's voices -- system audio (a call,
a video) and files -- and never on the microphone, whose label is always "You" (with the
microphone and system audio at once, the microphone stays "You" and the system source is
split into "Speaker 1", "Speaker 2", ...). It is on by default for those sources; off costs
nothing (no model is loaded, no audio is kept).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Source kinds (:attr:`captioner.audio.source.AudioSource.kind`) attributed by default.
ATTRIBUTED_KINDS = ("system", "file")
#: The most speakers "auto" opens in one run (bounded state for a 24/7 stream).
AUTO_MAX_SPEAKERS = 20


@dataclass(frozen=True)
class SpeakerOptions:
    """What the user chose.

    Attributes:
        enabled: False: no attribution anywhere (``--speakers off``).
        max_speakers: the most distinct speakers to open (``--speakers N``); "auto" is
            :data:`AUTO_MAX_SPEAKERS`. Once reached, a new voice goes to the closest speaker.
    """

    enabled: bool = True
    max_speakers: int = AUTO_MAX_SPEAKERS

    @property
    def spec(self) -> str:
        """The option as typed: ``"auto"``, ``"off"`` or ``"N"``."""
        if not self.enabled:
            return "off"
        return "auto" if self.max_speakers == AUTO_MAX_SPEAKERS else str(self.max_speakers)

    def applies_to(self, kind: str) -> bool:
        """True when a source of this kind (``"system"``, ``"file"``, ``"microphone"``, ...)
        is attributed."""
        return self.enabled and kind in ATTRIBUTED_KINDS


OFF = SpeakerOptions(enabled=False)
AUTO = SpeakerOptions()


def parse_speakers(value: str | int | None) -> SpeakerOptions:
    """Parse ``auto``, ``off`` or a whole number N >= 1 (at most N speakers).

    Raises:
        ValueError: anything else, with a message that names the accepted values.
    """
    if value is None:
        return AUTO
    text = str(value).strip().lower()
    if text in ("auto", "on", ""):
        return AUTO
    if text in ("off", "none", "0"):
        return OFF
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"--speakers takes auto, off or a number of speakers (1-{AUTO_MAX_SPEAKERS}), "
                         f"got {value!r}") from None
    if not 1 <= n <= AUTO_MAX_SPEAKERS:
        raise ValueError(f"--speakers N takes 1 to {AUTO_MAX_SPEAKERS} speakers, got {n}")
    return SpeakerOptions(True, n)
