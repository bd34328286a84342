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

``--recovery`` (always on a private daemon, no model) times what issue #22 is about
instead, ``--repeat`` times each, with a 440 Hz tone playing into the output:

* ``suspend``: ``pactl suspend-sink`` for ``--hold`` s: suspend -> stall notice,
  un-suspend -> resume notice, the gap the transcript records vs. the hold, Stop;
* ``freeze``: SIGSTOP of the daemon: freeze -> stall notice, then Stop pressed while
  it is still frozen (the daemon is thawed only after Stop returned, or after
  ``--hold`` s);
* ``restart``: SIGKILL, then the daemon started again: kill -> stall notice,
  start -> resume notice (reconnection, with the player restarted at once);
* ``switch``: a 16 kHz mono output appears and becomes the default: -> switch notice,
  and the gap the switch leaves in the stream;
* ``moved``: the chosen output is removed and the server moves the stream to the
  microphone: -> moved notice, and the microphone frames delivered (must be 0).

``--tree PATH`` imports captioner from another checkout (e.g. ``git worktree add
/tmp/capture-old main``), to run the ``freeze`` Stop timing on the old code in the
same session; scenarios that old code cannot report show ``null``.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
if "--tree" in sys.argv:  # captioner from another checkout (tests.pulse_server stays this one's)
    sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--tree") + 1]))

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


def _pulse_server():
    import importlib.util

    spec = importlib.util.spec_from_file_location("pulse_server", os.path.join(ROOT, "tests", "pulse_server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PulseServer


def _tone(path: str, freq: float, seconds: float = 120.0, rate: int = 44100) -> str:
    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), rate)
    return path


def _recovery_run(scenario: str, hold_s: float, tmp: str) -> dict:
    """One timed run of ``scenario`` on a fresh private daemon (see the module docstring)."""
    from captioner.audio.devices import rescan
    from captioner.audio.system import open_system_audio
    from captioner.engine.live import LiveCaptioner
    from captioner.events import Notice

    server = _pulse_server()().start()
    rescan()
    meeting, mic = _tone(os.path.join(tmp, "m.wav"), 440), _tone(os.path.join(tmp, "mic.wav"), 1000)
    notes: list[tuple[float, Notice]] = []

    def on_event(ev):
        if isinstance(ev, Notice):
            notes.append((time.monotonic(), ev))

    def when(code: str, after: float, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, n in list(notes):
                if n.code == code and t >= after:
                    return t
            time.sleep(0.005)
        return None

    def since(t_event, t0):
        return None if t_event is None else round(t_event - t0, 3)

    players = [server.play("micsink", mic)]
    src = open_system_audio("meeting" if scenario == "moved" else None)
    live = LiveCaptioner(_null_backend(), [src], on_event)
    out: dict = {"scenario": scenario}
    try:
        live.start()
        players.append(server.play("meeting", meeting))
        deadline = time.monotonic() + 10
        while src.stats().callbacks < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # steady capture before the event
        t0 = time.monotonic()
        if scenario == "suspend":
            server.suspend_sink("meeting")
            out["stall_noticed_s"] = since(when("stalled", t0, 5), t0)
            while time.monotonic() < t0 + hold_s:
                time.sleep(0.01)
            server.suspend_sink("meeting", False)
            t1 = time.monotonic()
            out["resume_s"] = since(when("resumed", t1), t1)
            when("gap", t1, 5)
            out["gap_recorded_s"] = round(src.stats().gap_s, 3) if hasattr(src.stats(), "gap_s") else None
            out["suspended_s"] = round(t1 - t0, 3)
        elif scenario == "freeze":
            server.freeze()
            out["stall_noticed_s"] = since(when("stalled", t0, 5), t0)
            t1 = time.monotonic()
            stopper = threading.Thread(target=live.stop, kwargs={"drain": True}, daemon=True)
            stopper.start()
            stopper.join(hold_s)
            server.thaw()
            stopper.join(60)
            out["stop_while_frozen_s"] = round(time.monotonic() - t1, 3) if not stopper.is_alive() else None
            out["stop_returned_before_thaw"] = (time.monotonic() - t1) < hold_s
        elif scenario == "restart":
            server.kill()
            out["stall_noticed_s"] = since(when("stalled", t0, 5), t0)
            server.start()
            t1 = time.monotonic()
            players.append(server.play("meeting", meeting))
            out["reconnect_s"] = since(when("resumed", t1), t1)
        elif scenario == "switch":
            server.add_sink("headset")
            server.set_default_sink("headset")
            server.move_playback(players[-1], "headset")  # as a headset that connects takes the playback
            out["switch_noticed_s"] = since(when("source_switched", t0), t0)
            when("gap", t0, 5)
            out["switch_gap_s"] = round(src.stats().gap_s, 3) if hasattr(src.stats(), "gap_s") else None
        elif scenario == "moved":
            server.remove_sink("meeting")
            out["moved_noticed_s"] = since(when("stream_moved", t0, 5), t0)
            st = src.stats()
            if hasattr(st, "untrusted_frames"):
                out["microphone_frames_discarded"] = st.untrusted_frames
        out["session_kept"] = live.is_running
        out["notices"] = [n.code for _, n in notes if n.code != "stopped"]
        t2 = time.monotonic()
        live.stop(drain=True, timeout=60)
        out.setdefault("stop_s", round(time.monotonic() - t2, 3))
    finally:
        for p in players:
            p.kill()
            p.wait()
        if server.pid is not None:
            server.thaw()
        live.stop(drain=False, timeout=30)
        server.stop()
    return out


def recovery(args) -> int:
    tmp = tempfile.mkdtemp(prefix="captioner-bench-")
    scenarios = args.scenarios.split(",")
    runs = [_recovery_run(s, args.hold, tmp) for s in scenarios for _ in range(args.repeat)]
    summary = {}
    for s in scenarios:
        rows = [r for r in runs if r["scenario"] == s]
        for key in rows[0]:
            vals = [r[key] for r in rows if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)]
            if vals:
                summary[f"{s}.{key}"] = {"median": round(float(np.median(vals)), 3), "max": round(max(vals), 3)}
    print(json.dumps({"tree": args.tree or "this checkout", "hold_s": args.hold,
                      "repeat": args.repeat, "summary": summary, "runs": runs,
                      "note": "2 shared CPU cores; timings are noisy"}, indent=2))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recovery", action="store_true", help="time stall/resume/restart/switch/Stop (issue #22)")
    ap.add_argument("--scenarios", default="suspend,freeze,restart,switch,moved")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hold", type=float, default=5.0, help="seconds a suspend/freeze lasts (recovery)")
    ap.add_argument("--tree", default=None, help="import captioner from this checkout (recovery)")
    ap.add_argument("--seconds", type=float, default=90.0)
    ap.add_argument("--backend", default="default", help="'null' (no model) or a load_backend kind")
    ap.add_argument("--start-daemon", action="store_true")
    ap.add_argument("--system", default=None, help="monitor/sink name (default: the default sink's monitor)")
    args = ap.parse_args()
    if args.recovery:
        return recovery(args)

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
