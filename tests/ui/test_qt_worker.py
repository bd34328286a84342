"""EngineWorker on its QThread with a fake backend/pipeline: start, stop flushes the tail, errors."""

from __future__ import annotations

import pytest
from ui_fakes import WORDS, fake_factories, speech

from captioner.engine.qt_controller import EngineController
from captioner.engine.qt_worker import EngineConfig, EngineWorker, SourceSpec
from captioner.events import TextDelta, TurnBoundary

pytestmark = pytest.mark.gui


def _controller(qtbot, audio, **kw):
    bf, sf, pf, record = fake_factories(audio, **kw)
    ctl = EngineController(EngineWorker(bf, sf, pf))
    return ctl, record


@pytest.fixture
def cleanup():
    ctls = []
    yield ctls
    for c in ctls:
        assert c.shutdown(10000)


def test_stop_flushes_the_last_words(qtbot, cleanup):
    words = ["alpha", "bravo", "charlie", "delta"]
    ctl, record = _controller(qtbot, {"Meeting": speech(words, gap_chunks=0)})
    cleanup.append(ctl)
    events = []
    ctl.event.connect(events.append)
    config = EngineConfig(sources=(SourceSpec("file", "Meeting"),))
    with qtbot.waitSignal(ctl.started, timeout=5000):
        ctl.start(config)
    qtbot.waitUntil(lambda: bool(record["pipelines"]) and record["pipelines"][0].fed_all.is_set(), timeout=5000)
    # the model holds the last DELAY words back until the flush
    qtbot.waitUntil(lambda: any(isinstance(e, TextDelta) and e.final for e in events), timeout=5000)
    text_before = "".join(e.text for e in events if isinstance(e, TextDelta) and e.final)
    assert "delta" not in text_before
    with qtbot.waitSignal(ctl.stopped, timeout=5000):
        ctl.stop()
    finals = "".join(e.text for e in events if isinstance(e, TextDelta) and e.final)
    assert finals.split() == words
    assert isinstance(events[-1], TurnBoundary) and events[-1].kind == "end_of_stream"
    assert all(e.source == "Meeting" for e in events)
    assert ctl.state == "idle"


def test_backend_is_reused_and_switched(qtbot, cleanup):
    ctl, record = _controller(qtbot, {"You": speech(["echo"])})
    cleanup.append(ctl)
    cfg = EngineConfig(sources=(SourceSpec("microphone", "You"),))
    for config in (cfg, cfg, EngineConfig(backend="tflite", model="/x.tflite", sources=cfg.sources)):
        with qtbot.waitSignal(ctl.started, timeout=5000):
            ctl.start(config)
        with qtbot.waitSignal(ctl.stopped, timeout=5000):
            ctl.stop()
    assert len(record["backends"]) == 2  # same config reused its model, a new one loaded another
    assert record["backends"][0].closed and not record["backends"][1].closed


def test_load_error_is_reported_and_worker_stays_usable(qtbot, cleanup):
    ctl, _ = _controller(qtbot, {"You": speech(["golf"])}, load_error=FileNotFoundError("/nope/model"))
    cleanup.append(ctl)
    with qtbot.waitSignal(ctl.error, timeout=5000) as blocker:
        ctl.start(EngineConfig(backend="audio8", model="/nope/model", sources=(SourceSpec("file", "You"),)))
    message, code = blocker.args
    assert code == "model_missing"
    assert "/nope/model" in message and "Traceback" not in message
    qtbot.waitUntil(lambda: ctl.state == "idle", timeout=5000)


def test_a_model_cache_warning_during_preparation_is_a_notice_not_only_a_passing_progress_line(qtbot, cleanup):
    """A read-only or full cache folder: the preparation says so once (percent -1); the model panel's
    next step replaced that line within a second, so it must also reach the messages panel."""
    from captioner.asr.moonshine import prepare as moonshine_prepare

    ctl, record = _controller(qtbot, {"You": speech(["golf"])})
    cleanup.append(ctl)
    factory = ctl.worker.backend_factory

    def preparing_factory(config):
        report = moonshine_prepare._sink.get()  # what prepare() reports to inside the worker
        report("Model cache folder /ro is not writable (Read-only file system); preparing in memory", -1)
        report("Preparing the built-in model: decoder…", 55)
        return factory(config)

    ctl.worker.backend_factory = preparing_factory
    notices, progress = [], []
    ctl.notice.connect(notices.append)
    ctl.progress.connect(lambda m, p: progress.append((m, p)))
    with qtbot.waitSignal(ctl.started, timeout=5000):
        ctl.start(EngineConfig(sources=(SourceSpec("file", "You"),)))
    qtbot.waitUntil(lambda: bool(notices), timeout=5000)
    assert [(n.code, n.severity) for n in notices] == [("model_cache", "warning")]
    assert "not writable" in notices[0].message
    assert ("Preparing the built-in model: decoder…", 55) in progress
    with qtbot.waitSignal(ctl.stopped, timeout=5000):
        ctl.stop()


def test_runtime_error_ends_the_run_with_a_message(qtbot, cleanup):
    ctl, _ = _controller(qtbot, {"You": speech(WORDS)}, fail_at=5)
    cleanup.append(ctl)
    with qtbot.waitSignals([ctl.error, ctl.stopped], timeout=5000, order="strict"):
        ctl.start(EngineConfig(sources=(SourceSpec("file", "You"),)))
    assert ctl.state == "idle"


def test_no_source_is_a_usage_message(qtbot, cleanup):
    ctl, _ = _controller(qtbot, {})
    cleanup.append(ctl)
    with qtbot.waitSignal(ctl.error, timeout=5000) as blocker:
        ctl.start(EngineConfig(sources=()))
    assert blocker.args[1] == "no_source"


def test_stop_while_loading_cancels_the_start(qtbot, cleanup):
    import threading

    release = threading.Event()
    bf, sf, pf, record = fake_factories({"You": speech(["india"])})

    def slow(config):
        release.wait(10)
        return bf(config)

    ctl = EngineController(EngineWorker(slow, sf, pf))
    cleanup.append(ctl)
    states = []
    ctl.state_changed.connect(states.append)
    ctl.start(EngineConfig(sources=(SourceSpec("file", "You"),)))
    qtbot.waitUntil(lambda: states == ["loading"], timeout=5000)
    with qtbot.waitSignal(ctl.stopped, timeout=5000):
        ctl.stop()
        release.set()
    qtbot.waitUntil(lambda: ctl.state == "idle", timeout=5000)
    # the load, released after the stop, ends on its own thread: "stopped" does not wait for it
    qtbot.waitUntil(lambda: len(record["backends"]) == 1, timeout=5000)
    assert record["pipelines"] == [] and len(record["backends"]) == 1  # loaded, kept for the next start


def test_unreadable_file_gets_file_advice_not_device_advice(qtbot, cleanup, tmp_path):
    """A text file renamed .wav: the real file source fails; the advice is about formats, not devices."""
    from captioner.engine.qt_worker import default_pipeline_factory, default_source_factory

    bad = tmp_path / "notes.wav"
    bad.write_text("this is not audio\n", encoding="utf-8")
    bf, _, _, _ = fake_factories({})
    ctl = EngineController(EngineWorker(bf, default_source_factory, default_pipeline_factory))
    cleanup.append(ctl)
    with qtbot.waitSignal(ctl.error, timeout=10000) as blocker:
        ctl.start(EngineConfig(sources=(SourceSpec("file", "notes.wav", path=str(bad)),)))
    message, code = blocker.args
    assert code == "file_error"
    assert "notes.wav" in message and "ffmpeg" in message and "WAV, FLAC" in message
    assert "device" not in message.lower() and "Source box" not in message
    qtbot.waitUntil(lambda: ctl.state == "idle", timeout=5000)


def test_device_errors_point_at_the_device_lists():
    from captioner.audio.source import SourceError
    from captioner.engine.qt_worker import describe_error

    message, code = describe_error(SourceError("no input device named 'USB mic'"), "start", ("microphone",))
    assert code == "device_error" and "Refresh devices" in message and "Microphone or System audio list" in message
    assert "Source box" not in message
    message, code = describe_error(SourceError("cannot read x.wav"), "start", ("file",))
    assert code == "file_error" and "Refresh" not in message


def test_turn_settings_reach_the_pipeline(qtbot, cleanup):
    from captioner.engine.turns import TurnSettings

    ctl, record = _controller(qtbot, {"Meeting": speech(["alpha"], gap_chunks=0)})
    cleanup.append(ctl)
    turns = TurnSettings(threshold=0.3, silence_s=5.0)
    with qtbot.waitSignal(ctl.started, timeout=5000):
        ctl.start(EngineConfig(sources=(SourceSpec("file", "Meeting"),), turns=turns))
    assert record["pipelines"][0].turns is turns
    assert record["pipelines"][0].sessions[0].turn_settings is turns
    with qtbot.waitSignal(ctl.stopped, timeout=5000):
        ctl.stop()
