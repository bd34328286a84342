"""What a caption run is made of: its sources, its model settings, and the factories that build them.

:class:`EngineConfig` (with its :class:`SourceSpec` list) is everything the GUI decides
before Start; the three factories turn it into a loaded backend, opened audio sources and a
live pipeline. :class:`~captioner.engine.qt_worker.EngineWorker` calls them on its thread,
so tests plug in fakes and the real ones come from :mod:`captioner.asr`,
:mod:`captioner.audio` and :mod:`captioner.engine.live` (imported lazily: they are heavy).

No Qt here, and no torch/onnxruntime at import time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from captioner.events import Event


@dataclass(frozen=True)
class SourceSpec:
    """One audio source the user chose.

    Attributes:
        kind: ``"microphone"``, ``"system"`` (monitor of the output) or ``"file"``
            (a file played as if live).
        label: label stamped on its captions ("You", "Meeting", the file name).
        device: device name/index as listed by ``captioner devices``; ``None`` = default.
        path: audio file for ``kind == "file"``.
    """

    kind: str
    label: str
    device: str | None = None
    path: str | None = None


@dataclass(frozen=True)
class EngineConfig:
    """Everything needed to start captioning.

    Attributes:
        backend: ``"default"`` | ``"audio8"`` | ``"tflite"`` | ``"remote"`` (see
            ``captioner.asr.load_backend``).
        model: checkpoint folder, ``.tflite`` file or server URL; ``None`` for the default model.
        clock_ms: Audio8 clock, 80/120/160 ms (model card operating points).
        delay_ms: transcription delay, a multiple of the clock.
        language: ``"en"`` or ``"zh"``.
        sources: the sources to caption, one session each.
        options: extra keyword arguments for ``load_backend`` as ``(name, value)`` pairs.
        turns: how turns end (a :class:`captioner.engine.turns.TurnSettings`), handed to
            the pipeline factory; ``None`` = its defaults (and a factory that takes no
            ``turns`` keyword works unchanged).
        speakers: who is speaking (a :class:`captioner.speakers.options.SpeakerOptions`), handed
            to a pipeline factory that takes a ``speakers`` keyword; ``None`` = not given
            (the pipeline's default: off).
        sounds: sound captions (a :class:`captioner.engine.sound_captions.SoundOptions`, issue 49),
            handed to a pipeline factory that takes a ``sounds`` keyword; ``None`` = not given
            (the pipeline's default: off).
    """

    backend: str = "default"
    model: str | None = None
    clock_ms: int = 80
    delay_ms: int = 480
    language: str = "en"
    sources: tuple[SourceSpec, ...] = ()
    options: tuple[tuple[str, Any], ...] = ()
    turns: Any = None
    speakers: Any = None
    sounds: Any = None

    def backend_key(self) -> tuple:
        """What identifies a loaded backend: a run with the same key reuses it."""
        return (self.backend, self.model, self.clock_ms, self.delay_ms, self.language, self.options)


class Pipeline(Protocol):
    """What the worker needs from a live pipeline (``LiveCaptioner`` has this shape)."""

    def start(self) -> None: ...

    def stop(self, drain: bool = True, timeout: float | None = None) -> bool: ...

    def backlog_s(self) -> float: ...

    def skip_backlog(self) -> float: ...

    @property
    def is_running(self) -> bool: ...


BackendFactory = Callable[[EngineConfig], Any]
SourceFactory = Callable[[Sequence[SourceSpec], Any], list]  # (specs, backend or ModelRate) -> sources
PipelineFactory = Callable[[Any, list, Callable[[Event], None]], Pipeline]


def takes_keyword(factory: Callable[..., Any], name: str) -> bool:
    """True when ``factory`` can be called with keyword ``name`` (a parameter of that name, or
    ``**kwargs``), so an option added later (``speakers``) never breaks a factory written
    before it (tests' fakes, scripts); a callable whose signature cannot be read counts as no."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name and p.kind is not inspect.Parameter.POSITIONAL_ONLY
               or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def default_backend_factory(config: EngineConfig) -> Any:
    """Load a backend with ``captioner.asr.load_backend`` (imported lazily: heavy)."""
    from captioner.asr import load_backend

    return load_backend(
        config.backend,
        model=config.model,
        clock_ms=config.clock_ms,
        delay_ms=config.delay_ms,
        language=config.language,
        **dict(config.options),
    )


@dataclass(frozen=True)
class ModelRate:
    """What the source factory is given instead of the backend before it is loaded (the sources
    open first): the rate the model is expected to take (Hz; every backend takes 16 kHz so far,
    and a model at another rate has its sources opened again once loaded)."""

    sample_rate: int


def default_source_factory(specs: Sequence[SourceSpec], backend: Any) -> list:
    """Make the audio sources with :mod:`captioner.audio` (not started), delivering the backend's rate.

    Args:
        specs: the sources chosen.
        backend: the loaded backend, or a :class:`ModelRate` while it loads (its ``sample_rate``).

    Raises:
        SourceError (from captioner.audio): a device does not exist (the message lists
            the ones that do) or there is no system-audio source.
        ValueError: an unknown source kind.
    """
    rate = backend.sample_rate
    sources = []
    for s in specs:
        if s.kind == "microphone":
            from captioner.audio.microphone import MicrophoneSource

            sources.append(MicrophoneSource(s.device or None, label=s.label, target_rate=rate))
        elif s.kind == "system":
            from captioner.audio.system import open_system_audio

            sources.append(open_system_audio(s.device or None, label=s.label, target_rate=rate))
        elif s.kind == "file":
            from captioner.audio.filesource import FileSource

            if not s.path:
                raise ValueError("no audio file is selected; choose one with Browse")
            sources.append(FileSource(s.path, label=s.label, realtime=True, target_rate=rate))
        else:
            raise ValueError(f"unknown source kind {s.kind!r}")
    return sources


def default_pipeline_factory(
    backend: Any, sources: list, on_event: Callable[[Event], None], turns: Any = None, speakers: Any = None,
    sounds: Any = None,
) -> Pipeline:
    """The Qt-free live pipeline, ``captioner.engine.live.LiveCaptioner`` (``turns``: TurnSettings or None;
    ``speakers``: SpeakerOptions or None, off; ``sounds``: SoundOptions or None, off)."""
    from captioner.engine.live import LiveCaptioner

    return LiveCaptioner(backend, sources, on_event, turns=turns, speakers=speakers, sounds=sounds)
