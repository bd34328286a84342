"""Sound captions in the engine (issue 49): one sound detector per source session, beside the speech model.

The classifier itself (YAMNet on ONNX Runtime, its classes and hysteresis) is
:mod:`captioner.sounds`; this module is the engine's side of it:

* :class:`SoundOptions` -- what the user chose (``--sounds on|off``, Settings -> "Caption sounds"),
  passed down like :class:`~captioner.speakers.options.SpeakerOptions`;
* :class:`SoundModels` -- the detectors of one run, built on a background thread as soon as the
  run is made (where the speaker encoder loads), so Start is not delayed and Stop never waits for
  them; a model that cannot load (:class:`captioner.sounds.SoundsUnavailable`, the package
  missing, a broken file) becomes one :class:`~captioner.events.Notice` for the whole run, and
  captions go on without sounds;
* :class:`SoundTracker` -- one session's detector: the session hands it every sanitised block
  with its stream index; it keeps audio that arrives while the model still loads (at most
  :data:`MAX_PENDING_S`), and stamps each :class:`~captioner.events.SoundEvent` with the
  session's source and stream time (the detector counts from its own ``reset()``, the first
  sample it was given, so the stream time of that sample is added).

No Qt here; ``captioner.sounds`` (and ONNX Runtime) are imported on the loading thread only.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from captioner.events import Event, Notice, SoundEvent

log = logging.getLogger(__name__)

#: Seconds of audio a session keeps for its detector while the model still loads (live sources
#: only; a file waits for the load). 30 s of 16 kHz float32 is 1.9 MB; the load takes 45-85 ms
#: (DESIGN "Sounds that are not speech"), so only a machine far too busy ever drops any: the
#: oldest audio goes first and the times stay right (the detector starts at the first kept sample).
MAX_PENDING_S = 30.0
#: Longest wait (s) of a file's first block for the model still loading (``transcribe``).
FILE_LOAD_WAIT_S = 30.0
#: Notice code of a run whose sound model is unavailable.
UNAVAILABLE_CODE = "sounds_unavailable"
#: Slice (s) in which a file's first block waits for the load, checking :meth:`SoundModels.cancel`
#: between slices: a Ctrl-C during the wait is answered within it, not after :data:`FILE_LOAD_WAIT_S`.
WAIT_SLICE_S = 0.05


@dataclass(frozen=True)
class SoundOptions:
    """What the user chose about sound captions.

    Attributes:
        enabled: False: no sound captions and no sound model loaded (``--sounds off``).
    """

    enabled: bool = True

    @property
    def spec(self) -> str:
        """The option as typed: ``"on"`` or ``"off"``."""
        return "on" if self.enabled else "off"


ON = SoundOptions(True)
OFF = SoundOptions(False)


def parse_sounds(value: str | bool | None) -> SoundOptions:
    """Parse ``on`` / ``off`` (also yes/no, true/false, 1/0; ``None``: on).

    Raises:
        ValueError: anything else, with a message that names the accepted values.
    """
    if value is None or value is True:
        return ON
    if value is False:
        return OFF
    text = str(value).strip().lower()
    if text in ("on", "yes", "true", "1", ""):
        return ON
    if text in ("off", "no", "false", "0", "none"):
        return OFF
    raise ValueError(f"--sounds takes on or off, got {value!r}")


def _default_detector():
    """A detector from :func:`captioner.sounds.new_detector` (imported here: it loads ONNX Runtime).

    Raises:
        captioner.sounds.SoundsUnavailable: the model cannot be loaded (its message is the status line).
        RuntimeError: the classifier package is not there at all.
    """
    try:
        from captioner.sounds import new_detector
    except ImportError as exc:
        raise RuntimeError(f"the sound classifier is not installed ({exc})") from exc
    return new_detector()


def unavailable_message(exc: BaseException) -> str:
    """The status line for a sound model that failed to load: a ``SoundsUnavailable``'s own message
    (it is written for the user), else one built from the error."""
    if type(exc).__name__ == "SoundsUnavailable" and str(exc).strip():
        return str(exc).strip()
    return f"Sound captions are off: {exc or type(exc).__name__}. Captions go on without them."


class SoundModels:
    """The sound detectors of one run, one per session, built on a background thread.

    Args:
        count: how many detectors (one per source session).
        load: builds one detector (default :func:`captioner.sounds.new_detector`); called ``count``
            times on a daemon thread started here, inside
            :func:`captioner.native_calls.model_call` (it builds an ONNX Runtime session).
        wait_s: how long a session's first block may wait for the load (0 for live sources: their
            audio waits in the tracker instead; :data:`FILE_LOAD_WAIT_S` for a file); :meth:`cancel`
            ends the wait at once.

    Attributes:
        error: why the model could not load ("" while loading or loaded).
    """

    def __init__(self, count: int = 1, load: Callable[[], object] | None = None, wait_s: float = 0.0) -> None:
        self.count = max(1, int(count))
        self.wait_s = float(wait_s)
        self.error = ""
        self._load = load or _default_detector
        self._detectors: list = []
        self._ready = threading.Event()
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._told = False
        threading.Thread(target=self._load_now, name="captioner-sound-model", daemon=True).start()

    def _load_now(self) -> None:
        from captioner.native_calls import ProcessExiting, model_call

        try:
            with model_call():  # an ONNX Runtime session is built: a run that ends meanwhile must not finalise around it
                detectors = [self._load() for _ in range(self.count)]
            self._detectors = detectors
        except ProcessExiting:
            self.error = "the program is ending"
        except Exception as exc:  # noqa: BLE001 - any failure: captions go on without sounds
            log.info("sound captions unavailable: %s", exc)
            self.error = unavailable_message(exc)
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        """True once the load finished (loaded or failed)."""
        return self._ready.is_set()

    def detector(self, index: int, wait_s: float | None = None):
        """Detector ``index`` (0-based), or ``None`` while loading (after waiting ``wait_s``,
        default :attr:`wait_s`) or when the load failed (:attr:`error` says why)."""
        wait = self.wait_s if wait_s is None else wait_s
        deadline = time.monotonic() + wait
        while not self._ready.is_set() and not self._cancelled.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._ready.wait(min(WAIT_SLICE_S, left))
        if not self._ready.is_set() or not self._detectors:
            return None
        return self._detectors[index % len(self._detectors)]

    def cancel(self) -> None:
        """The run is being stopped (Ctrl-C, Stop): a :meth:`detector` call waiting for the load
        returns ``None`` within :data:`WAIT_SLICE_S`, and later calls no longer wait. Safe from
        any thread; the load itself goes on (a daemon thread) and is used if it finishes."""
        self._cancelled.set()

    def fail(self, message: str) -> None:
        """A detector failed while running: sound captions are off for the rest of the run."""
        with self._lock:
            if not self.error:
                self.error = message
            self._detectors = []

    def notice(self) -> Notice | None:
        """The one status line of a run whose sound model is unavailable (then ``None`` ever after)."""
        with self._lock:
            if self._told or not self._ready.is_set() or not self.error:
                return None
            self._told = True
        return Notice(self.error, "warning", UNAVAILABLE_CODE)

    def tracker(self, index: int, source: str = "", sample_rate: int = 16000) -> SoundTracker:
        """A :class:`SoundTracker` for session ``index`` of the run."""
        return SoundTracker(self, index, source, sample_rate)


class SoundTracker:
    """One session's sound detector: audio in, :class:`~captioner.events.SoundEvent` out, in the
    session's stream time.

    Args:
        models: the run's :class:`SoundModels`.
        index: which of its detectors.
        source: the session's label, stamped on every event.
        sample_rate: rate (Hz) of the samples fed; the detector takes 16 kHz (every backend's).

    Not thread-safe: the session calls it from one thread at a time (its ``_push``).
    """

    def __init__(self, models: SoundModels, index: int, source: str = "", sample_rate: int = 16000) -> None:
        self.models = models
        self.index = index
        self.source = source
        self.sample_rate = int(sample_rate)
        self._detector = None
        self._offset: int | None = None  # stream index of the first sample the detector got since reset
        self._pending: deque[tuple[np.ndarray, int]] = deque()
        self._pending_n = 0
        self._broken = False

    def reset(self) -> None:
        """A fresh stream: forget kept audio and the detector's state."""
        self._pending.clear()
        self._pending_n = 0
        self._offset = None
        if self._detector is not None:
            self._call(self._detector.reset)

    def feed(self, samples: np.ndarray, at: int) -> list[Event]:
        """Run the detector over ``samples``.

        Args:
            samples: ``[n] float32`` mono samples at :attr:`sample_rate`, already sanitised.
            at: stream index (samples since the session's ``start()``) of ``samples[0]``.

        Returns:
            The sounds that started (``SoundEvent``, source and stream seconds set), and once per run
            a ``Notice`` when the model is unavailable; ``[]`` while it loads (the audio is kept).
        """
        det = self._ready_detector()
        if det is None:
            if not self.models.ready and not self._broken:
                self._keep(samples, at)
            return self._notice()
        return self._drain(det) + self._run(det.feed, samples, at) + self._notice()

    def finish(self) -> list[Event]:
        """The end of the stream: the sounds the detector still holds (:meth:`feed`'s events)."""
        det = self._ready_detector()
        if det is None:
            return self._notice()
        out = self._drain(det)
        if self._offset is not None:
            out += self._run(det.finish)
        return out + self._notice()

    # -- internals -----------------------------------------------------------------------------
    def _drain(self, det) -> list[Event]:
        """The detector's events of the audio kept while the model loaded (fed to it now, in order)."""
        out: list[Event] = []
        while self._pending:
            block, start = self._pending.popleft()
            out += self._run(det.feed, block, start)
        self._pending_n = 0
        return out

    def _ready_detector(self):
        if self._broken:
            return None
        if self._detector is None:
            det = self.models.detector(self.index)
            if det is None:
                return None
            self._detector = det
            self._call(det.reset)  # times count from the first sample this tracker gives it
        return self._detector

    def _keep(self, samples: np.ndarray, at: int) -> None:
        self._pending.append((samples.copy(), at))
        self._pending_n += len(samples)
        most = int(MAX_PENDING_S * self.sample_rate)
        while self._pending_n > most and len(self._pending) > 1:
            self._pending_n -= len(self._pending.popleft()[0])

    def _run(self, call, samples: np.ndarray | None = None, at: int | None = None) -> list[Event]:
        """``call(samples)`` (``det.feed``) or ``call()`` (``det.finish``), its events moved into stream time."""
        if self._broken:
            return []
        if samples is not None:
            if not len(samples):
                return []
            if self._offset is None:
                self._offset = int(at)
        try:
            events = call(samples) if samples is not None else call()
        except Exception as exc:  # noqa: BLE001 - bad input or a broken model never stops the captions
            log.warning("sound detector failed: %s", exc)
            self._broken = True
            self._detector = None
            self.models.fail(f"Sound captions stopped: {exc or type(exc).__name__}. Captions go on without them.")
            return []
        offset = (self._offset or 0) / self.sample_rate
        return [dataclasses.replace(ev, start=ev.start + offset, end=ev.end + offset, source=self.source)
                for ev in events or () if isinstance(ev, SoundEvent)]

    def _call(self, fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            log.warning("sound detector failed: %s", exc)
            self._broken = True
            self._detector = None
            self.models.fail(f"Sound captions stopped: {exc or type(exc).__name__}. Captions go on without them.")

    def _notice(self) -> list[Event]:
        notice = self.models.notice()
        return [notice] if notice is not None else []


def new_sound_models(options: SoundOptions | None, count: int, wait_s: float = 0.0,
                     load: Callable[[], object] | None = None) -> SoundModels | None:
    """The sound detectors of a run with ``count`` sessions (starts loading now), or ``None`` when
    sound captions are off (``options`` None or disabled)."""
    if options is None or not options.enabled:
        return None
    return SoundModels(count, load, wait_s)


__all__ = [
    "FILE_LOAD_WAIT_S",
    "MAX_PENDING_S",
    "OFF",
    "ON",
    "SoundModels",
    "SoundOptions",
    "SoundTracker",
    "UNAVAILABLE_CODE",
    "WAIT_SLICE_S",
    "new_sound_models",
    "parse_sounds",
    "unavailable_message",
]
