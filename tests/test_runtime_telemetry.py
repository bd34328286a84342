"""ONNX Runtime collects no telemetry in a captioner process (no network at run time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_onnxruntime_writes_no_telemetry_queue(tmp_path):
    # onnxruntime 1.32 (Linux) would write Microsoft/DeveloperTools/.onnxruntime/{deviceid,
    # onnxruntime.db} under the cache folder: events queued for upload to Microsoft.
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT))
    code = "from captioner.asr.vad import SileroVad; SileroVad()"
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True, timeout=120)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    assert written == ["cache", "home"], written
