"""Capture benchmark: end-to-end capture latency and overflow count from a PulseAudio monitor.

Latency is measured per raw block from the moment the PortAudio callback queued it to
the moment it left the queue (``AudioSource.read``), while the real pipeline runs
(PortAudio's own input latency, ADC to callback, is reported beside it):
``LiveCaptioner`` with the chosen backend, so the consumer is as busy as in use.
Speech (espeak-ng) is played into the monitored sink in a loop for the whole run.

Run from the repository root::

    python bench/capture_latency.py --seconds 90 --start-daemon [--backend default|null]

``--start-daemon`` starts a private PulseAudio (tests/pulse_server.py) and stops it by
pid at the end; without it the running sound server's default sink is used. Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

SENTENCES = [
    "The meeting will start at nine tomorrow morning in the small conference room.",
    "Please send the quarterly report to everyone on the team before Friday.",
    "We need more time to test the new version of the software.",
]


def _null_backend():
    from captioner.asr.base import Backend, StepResult
    from captioner.asr.geometry import ChunkGeometry

    class Null(Backend):
        name = "null"
        geometry = ChunkGeometry(16000, 1600, 1600)
        batch_size = 2

        def step(self, rows):
            return [StepResult(r.state, []) for r in rows]

    return Null()


def _speech(path: str) -> str:
    parts, rate = [], 22050
    for i, s in enumerate(SENTENCES):
        p = f"{path}.{i}.wav"
        subprocess.run(["espeak-ng", "-w", p, s], check=True)
        x, rate = sf.read(p, dtype="float32")
        parts += [x, np.zeros(int(0.8 * rate), np.float32)]
    sf.write(path, np.concatenate(parts), rate)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--backend", default="default", help="'null' (no model) or a load_backend kind")
    ap.add_argument("--start-daemon", action="store_true")
    ap.add_argument("--system", default=None, help="monitor/sink name (default: the default sink's monitor)")
    args = ap.parse_args()

    server = None
    if args.start_daemon:
        from tests.pulse_server import PulseServer

        server = PulseServer().start()
    from captioner.audio.devices import rescan
    from captioner.audio.system import open_system_audio
    from captioner.engine.live import LiveCaptioner
    from captioner.events import Notice, Stats, TextDelta

    rescan()
    if args.backend == "null":
        backend = _null_backend()
    else:
        from captioner.asr import load_backend

        backend = load_backend(args.backend)
    tmp = tempfile.mkdtemp(prefix="captioner-bench-")
    wav = _speech(os.path.join(tmp, "speech.wav"))
    counts = {"final_deltas": 0, "notices": [], "max_backlog_s": 0.0}

    def on_event(ev):
        if isinstance(ev, TextDelta) and ev.final:
            counts["final_deltas"] += 1
        elif isinstance(ev, Stats):
            counts["max_backlog_s"] = max(counts["max_backlog_s"], ev.backlog_s)
        elif isinstance(ev, Notice) and ev.code != "stopped":
            counts["notices"].append(ev.code)

    src = open_system_audio(args.system, target_rate=backend.sample_rate)
    live = LiveCaptioner(backend, [src], on_event)
    halt = threading.Event()

    def player():
        env = dict(os.environ)
        while not halt.is_set():
            subprocess.run(["paplay", wav], env=env, check=False)

    live.start()
    pa_latency = getattr(getattr(src, "_stream", None), "latency", None)
    t0 = time.monotonic()
    th = threading.Thread(target=player, daemon=True)
    th.start()
    live.wait(args.seconds)
    elapsed_capture = time.monotonic() - t0
    halt.set()
    live.stop(drain=True)
    st = live.source_stats()[src.label]
    th.join(timeout=30)
    result = {
        "seconds": round(elapsed_capture, 2),
        "backend": backend.name,
        "source": src.description,
        "native_rate": src.native_rate,
        "native_channels": src.native_channels,
        "callbacks": st.callbacks,
        "mean_frames_per_callback": round(st.frames_in / max(1, st.callbacks), 1),
        "captured_s": round(st.frames_in / src.native_rate, 3),
        "delivered_s": round(st.samples_out / backend.sample_rate, 3),
        "portaudio_input_latency_ms": round(1000 * pa_latency, 2) if pa_latency else None,
        "latency_mean_ms": round(st.latency_mean_ms, 2),
        "latency_max_ms": round(st.latency_max_ms, 2),
        "latency_blocks": st.latency_count,
        "overflows": st.overflows,
        "dropped_blocks": st.dropped_blocks,
        "dropped_s": round(st.dropped_s, 3),
        "max_backlog_s": round(counts["max_backlog_s"], 3),
        "final_deltas": counts["final_deltas"],
        "notices": counts["notices"],
    }
    if hasattr(backend, "close"):
        backend.close()
    if server is not None:
        server.stop()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
