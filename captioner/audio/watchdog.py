"""Device-lost detection: no callback for ``timeout_s`` or an error reported by PortAudio.

A live input delivers a callback every few milliseconds (PortAudio block sizes are
5-40 ms; an idle PulseAudio monitor still runs on the sink's clock), so ~1 s without
one means the device is gone (unplugged headset, stopped sound server). The live
pipeline asks :meth:`Watchdog.check` on every loop and, on a message, stops that
source cleanly and keeps every word already decoded (DESIGN section 6).
"""

from __future__ import annotations

from captioner.audio.source import AudioSource

#: Seconds without a callback before a device counts as lost (issue #3: "~1 s").
DEFAULT_TIMEOUT_S = 1.0
#: Seconds a device may take to deliver its *first* callback. Measured with PulseAudio
#: 16 through the ALSA ``pulse`` device: 0.6-1.0 s for a source, up to 2.1 s for an idle
#: sink's monitor; 5 s leaves room for a slow Bluetooth headset.
DEFAULT_STARTUP_S = 5.0


class Watchdog:
    """Decides whether a running source has lost its device.

    Args:
        timeout_s: silence of the callback (s) that counts as a lost device once
            it has delivered audio.
        startup_s: how long (s) a freshly started device may take to deliver its
            first callback.
    """

    def __init__(self, timeout_s: float = DEFAULT_TIMEOUT_S, startup_s: float = DEFAULT_STARTUP_S) -> None:
        if timeout_s <= 0 or startup_s <= 0:
            raise ValueError(f"timeout_s and startup_s must be > 0, got {timeout_s}, {startup_s}")
        self.timeout_s = float(timeout_s)
        self.startup_s = max(float(startup_s), self.timeout_s)

    def check(self, source: AudioSource, now: float) -> str | None:
        """Return a user message when ``source`` lost its device at ``now``, else ``None``.

        Args:
            source: a started source (its ``last_callback`` and ``error`` are read).
            now: the source's clock reading (s).

        Finite sources (files) are only checked for errors, never for silence.
        """
        what = {"microphone": "Microphone", "system": "System audio"}.get(source.kind, "Input")
        name = source.description
        if source.error:
            err = source.error.rstrip(".")
            return f"{err[:1].upper()}{err[1:]}. Text so far is kept; press Start to continue{self._hint(source)}."
        if source.kind == "file" or not source.is_running or getattr(source, "supervised", False):
            return None  # files never stall; a supervised source handles its own stalls
        quiet = now - source.last_callback
        if source.callback_count == 0:
            if quiet > self.startup_s:
                return (
                    f"{what} {name!r} delivered no audio within {quiet:.1f} s of starting (disconnected, muted "
                    f"by the system, or taken by another program?). Press Start to try again{self._hint(source)}."
                )
            return None
        if quiet > self.timeout_s:
            return (
                f"{what} {name!r} stopped delivering audio {quiet:.1f} s ago (unplugged or taken by another "
                f"program?). Text so far is kept; press Start to continue{self._hint(source)}."
            )
        return None

    @staticmethod
    def _hint(source: AudioSource) -> str:
        return " with the default device" if source.kind == "microphone" else " with the default system-audio source"
