"""Remote backend overhead on loopback: what the client adds per 80 ms step.

Starts the scripted test server (``tests/remote_server.py``, answers at once, 0 ms model
time) on 127.0.0.1 and streams audio through a real ``StreamingSession`` on the remote
backend, paced in real time like a live source. Per step it reports the time from handing
the audio that completes a step's need (the step plus the delay) to the backend until its
``transcription.delta`` is ready for the engine (network + JSON/base64 + both event loops;
the real server adds its model time, ~22 ms p50 on a 4090), and the wall time of one
``session.feed`` (the engine's batching wait + sending + waiting for that delta). Prints one
JSON object.

Usage::

    python bench/remote_loopback.py --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from captioner.asr import load_backend  # noqa: E402
from captioner.engine.batcher import BatchEngine  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
from tests.remote_server import STEP, Script, ScriptedServer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="audio streamed, paced in real time")
    ap.add_argument("--fast", action="store_true", help="do not pace (throughput instead of latency)")
    ap.add_argument("--max-wait-ms", type=float, default=5.0,
                    help="the engine's batching wait (BatchEngine default 5 ms; it is part of every step)")
    args = ap.parse_args()
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
