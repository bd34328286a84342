"""Level meter dBFS values and device-lost watchdog timing/messages."""

import numpy as np
import pytest

from captioner.audio.levels import SILENCE_DBFS, LevelMeter, dbfs
from captioner.audio.watchdog import Watchdog
from tests.audio_fakes import tone


def test_sine_levels_and_rate():
    meter = LevelMeter("You", 16000, 0.05)
    levels = [lv for i in range(20) for lv in meter.feed(tone(0.05, 16000, 1000.0, 1.0)[: 800])]
    assert len(levels) == 20  # 20 per second of audio
    assert levels[-1].rms_dbfs == pytest.approx(-3.01, abs=0.05)
    assert levels[-1].peak_dbfs == pytest.approx(0.0, abs=0.01)
    assert levels[-1].source == "You"


def test_half_scale_and_silence():
    meter = LevelMeter("M", 16000, 0.05)
    (lv,) = meter.feed(np.full(800, 0.5, np.float32))
    assert lv.rms_dbfs == pytest.approx(-6.02, abs=0.01)
    (lv,) = meter.feed(np.zeros(800, np.float32))
    assert lv.rms_dbfs == SILENCE_DBFS and lv.peak_dbfs == SILENCE_DBFS
    assert dbfs(float("nan")) == SILENCE_DBFS


def test_burst_gives_only_newest_level_and_partial_window_waits():
    meter = LevelMeter("M", 16000, 0.05)
    assert meter.feed(np.ones(799, np.float32)) == []
    burst = np.concatenate([np.ones(1, np.float32), np.full(800 * 3, 0.1, np.float32)])
    (lv,) = meter.feed(burst)
    assert lv.rms_dbfs == pytest.approx(-20.0, abs=0.01)


class _Src:
    kind = "microphone"
    description = "USB mic"
    is_running = True
    error = None
    last_callback = 10.0
    callback_count = 5


def test_watchdog_timing_and_message():
    wd = Watchdog(1.0)
    src = _Src()
    assert wd.check(src, 10.9) is None
    msg = wd.check(src, 11.2)
    assert msg is not None
    assert "USB mic" in msg and "stopped delivering audio 1.2 s ago" in msg
    assert "Text so far is kept" in msg and "default device" in msg


def test_watchdog_gives_a_starting_device_longer():
    wd = Watchdog(1.0, startup_s=5.0)
    src = _Src()
    src.callback_count = 0  # started at t=10, nothing delivered yet (an idle monitor takes ~2 s)
    assert wd.check(src, 12.5) is None
    msg = wd.check(src, 15.1)
    assert "delivered no audio within 5.1 s of starting" in msg


def test_watchdog_reports_portaudio_error_at_once_and_ignores_files():
    wd = Watchdog(1.0)
    src = _Src()
    src.error = "the microphone 'USB mic' stopped delivering audio"
    assert "stopped delivering" in wd.check(src, 10.0)
    f = _Src()
    f.kind = "file"
    assert wd.check(f, 1e9) is None
    with pytest.raises(ValueError):
        Watchdog(0)


def test_watchdog_leaves_the_silence_of_a_self_supervised_source_to_it_but_reports_its_error():
    wd = Watchdog(1.0)
    src = _Src()
    src.supervised = True  # a sound-server stream: a stall is not a lost device (audio.recovery)
    assert wd.check(src, 1e9) is None
    src.error = "the system 'meeting.monitor' is gone from the sound server (removed or unplugged)"
    assert "is gone from the sound server" in wd.check(src, 1e9)
