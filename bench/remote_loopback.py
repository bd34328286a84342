"""Remote backend overhead on loopback: what the client adds per 80 ms step.

Starts the scripted test server (``tests/remote_server.py``, answers at once, 0 ms model
time) on 127.0.0.1 and streams audio through a real ``StreamingSession`` on the remote
backend, paced in real time like a live source. Per step it reports the time from handing
the audio that completes a delta's need (its step plus the 2.5 ms look-ahead: the reference
server sends delta j once it holds j steps, the text of step j - delay) to the backend until its
``transcription.delta`` is ready for the engine (network + JSON/base64 + both event loops;
the real server adds its model time, ~22 ms p50 on a 4090), and the wall time of one
``session.feed`` (the engine's batching wait + sending + waiting for that delta). Prints one
JSON object.

With ``--faults`` it measures instead what issue 21 is about, through a loopback TCP relay
(``tests.remote_server.Relay``) that stops forwarding but keeps both sockets open:

* stall detection: seconds from the last server message to the aborted socket (the stream's
  own count) and from the moment the relay froze to the ``remote_reconnecting`` notice;
* Stop: seconds ``LiveCaptioner.stop(drain=True)`` takes in each connection state (streaming,
  stalled, reconnecting through a hanging connect, refused with backoff, still connecting,
  a server that never sends ``transcription.done``), and whether a server session was opened
  after it.

``--root DIR`` imports captioner from another checkout (e.g. the code before the change,
with this checkout's ``tests/remote_server.py`` copied in) so before/after run the same bench.

Usage::

    python bench/remote_loopback.py --seconds 20
    python bench/remote_loopback.py --faults --trials 5 > bench/results/remote_faults.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

if "--root" in sys.argv:
    sys.path.insert(0, os.path.abspath(sys.argv[sys.argv.index("--root") + 1]))
else:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from captioner.asr import load_backend  # noqa: E402
from captioner.engine.batcher import BatchEngine  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
from tests.remote_server import STEP, Relay, Script, ScriptedServer, word_audio  # noqa: E402

STOP_STATES = ("streaming", "stalled", "reconnecting", "refused", "connecting", "no-done")


def _until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _stall_trial() -> dict:
    """One frozen relay under a paced stream: how long until the client aborts and reconnects."""
    audio = word_audio([0, 1, 2, 3, 0, 4, 5, 0, 6, 7] * 25)  # 20 s: long enough for a 10 s rule too
    with ScriptedServer(Script(words_from_audio=True)) as srv, Relay(srv.port) as relay:
        backend = load_backend("remote", relay.url, delay_ms=480, language="en", backoff_s=0.05)
        session = StreamingSession(backend, "bench")
        stream = None
        t_stall = noticed = None
        t0 = time.perf_counter()
        for i in range(0, len(audio), STEP):
            wait = t0 + (i + STEP) / 16000 - time.perf_counter()
            if wait > 0:
                time.sleep(wait)  # paced like a live device
            events = session.feed(audio[i : i + STEP])
            stream = stream or session.state
            if t_stall is None and i >= 30 * STEP:
                relay.stall()
                t_stall = time.monotonic()
            if t_stall is not None and noticed is None and any(getattr(e, "code", "") == "remote_reconnecting"
                                                               for e in events):
                noticed = time.monotonic() - t_stall
        session.end()
    detected = getattr(stream, "stall_detected_s", None)
    return {"stall_to_notice_s": noticed, "last_message_to_abort_s": detected[0] if detected else None}


def _stop_trial(state: str, tmp: str, limit_s: float) -> dict:
    from captioner.audio.filesource import FileSource
    from captioner.engine.live import LiveCaptioner

    import soundfile as sf

    wav = os.path.join(tmp, "long.wav")
    sf.write(wav, word_audio([0, 1, 2, 3, 0] * 200), 16000)
    with ScriptedServer(Script(words_from_audio=True, no_done=state == "no-done")) as srv, Relay(srv.port) as relay:
        relay.hold_new = state == "connecting"
        backend = load_backend("remote", relay.url, delay_ms=480, language="en", backoff_s=0.05)
        live = LiveCaptioner(backend, [FileSource(wav, label="f", realtime=True)], lambda ev: None)
        live.start()
        ok = (_until(lambda: relay.accepted >= 1, 10) if state == "connecting"
              else srv.wait_for(lambda: srv.connections and srv.connections[0].steps >= 10, 10))
        if state in ("stalled", "reconnecting", "refused"):
            if state == "reconnecting":
                relay.hold_new = True
            if state == "refused":
                srv.refuse = lambda: True
            relay.stall()
            if state != "stalled":
                ok = ok and _until(lambda: backend.streams and backend.streams[0].reconnects >= 1, 15)
                if state == "reconnecting":
                    ok = ok and _until(lambda: relay.accepted >= 2, 10)
        sessions = len(srv.connections)
        t0 = time.perf_counter()
        finished = live.stop(drain=True, timeout=limit_s)
        took = time.perf_counter() - t0
        attempts = relay.accepted  # a connect under way when Stop came may still be accepted: count from here
        new_session = srv.wait_for(lambda: len(srv.connections) > sessions or relay.accepted > attempts, 1.0)
        if not finished:
            backend.close()
            live.wait(10)
    return {"stop_s": round(took, 3) if finished else None, "ended_within_limit": finished,
            "new_session_after_stop": bool(new_session), "state_reached": bool(ok)}


def faults(trials: int, limit_s: float) -> dict:
    import tempfile

    stalls = [_stall_trial() for _ in range(trials)]
    stops: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for state in STOP_STATES:
            stops[state] = [_stop_trial(state, tmp, limit_s) for _ in range(trials)]

    def summary(values):
        values = [v for v in values if v is not None]
        if not values:
            return None
        return {"min": round(min(values), 3), "median": round(statistics.median(values), 3),
                "max": round(max(values), 3)}

    return {
        "trials": trials, "stop_limit_s": limit_s,
        "note": "loopback on a shared 2-core machine: times are noisy; Stop includes the engine drain",
        "stall_to_notice_s": summary([t["stall_to_notice_s"] for t in stalls]),
        "last_message_to_abort_s": summary([t["last_message_to_abort_s"] for t in stalls]),
        "stop_s": {state: summary([t["stop_s"] for t in runs]) for state, runs in stops.items()},
        "stop_within_limit": {state: sum(t["ended_within_limit"] for t in runs) for state, runs in stops.items()},
        "new_session_after_stop": {state: sum(t["new_session_after_stop"] for t in runs)
                                   for state, runs in stops.items()},
        "state_reached": {state: sum(t["state_reached"] for t in runs) for state, runs in stops.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="audio streamed, paced in real time")
    ap.add_argument("--fast", action="store_true", help="do not pace (throughput instead of latency)")
    ap.add_argument("--max-wait-ms", type=float, default=5.0,
                    help="the engine's batching wait (BatchEngine default 5 ms; it is part of every step)")
    ap.add_argument("--faults", action="store_true", help="measure stall detection and Stop times instead")
    ap.add_argument("--trials", type=int, default=3, help="--faults: runs per measurement")
    ap.add_argument("--stop-limit", type=float, default=30.0, help="--faults: give up on a Stop after this (s)")
    ap.add_argument("--root", help="import captioner from this checkout (before/after comparisons)")
    args = ap.parse_args()
    if args.faults:
        print(json.dumps(faults(args.trials, args.stop_limit), indent=2))
        return
    audio = (0.01 * np.random.default_rng(0).standard_normal(int(args.seconds * 16000))).astype(np.float32)
    with ScriptedServer(Script(text={k: " x" for k in range(0, 10_000, 10)}, vad={})) as srv:
        backend = load_backend("remote", srv.url, delay_ms=480, language="en")
        session = StreamingSession(BatchEngine.shared(backend, max_wait_ms=args.max_wait_ms), "bench")
        call_ms = []
        t0 = time.perf_counter()
        for i in range(0, len(audio), STEP):
            if not args.fast:
                wait = t0 + (i + STEP) / 16000 - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)  # pacing like a live device
            t = time.perf_counter()
            session.feed(audio[i : i + STEP])
            call_ms.append((time.perf_counter() - t) * 1000)
        lat = sorted(session.state.latencies_ms)
        t_end = time.perf_counter()
        session.end()
        flush_s = time.perf_counter() - t_end
    q = statistics.quantiles(lat, n=100)
    print(json.dumps({
        "steps": len(call_ms), "paced": not args.fast, "max_wait_ms": args.max_wait_ms,
        "delta_latency_ms": {"p50": round(statistics.median(lat), 3), "p95": round(q[94], 3),
                             "p99": round(q[98], 3), "max": round(lat[-1], 3)},
        "step_call_ms": {"p50": round(statistics.median(call_ms), 3),
                         "p95": round(statistics.quantiles(call_ms, n=100)[94], 3)},
        "wall_s": round(t_end - t0, 3), "end_flush_s": round(flush_s, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
