"""Parity and speed of captioner's TFLite backend against TensorFlowASR's own ``ASRInference``.

For every good fixture in tests/fixtures/tflite (or the files given) this decodes a short signal
and a 60 s signal with

* captioner: ``TFLiteOnePass`` (one pass) and ``StreamingSession`` over ``TFLiteBackend``
  (streaming, fed in ``--block``-sample pieces);
* TensorFlowASR 3.1.1: ``ASRInference(streaming=False)`` and ``ASRInference()`` fed the same
  pieces, run by bench/tfasr_reference.py in the exporter's Python 3.12 venv (a subprocess,
  JSON over stdout; build the venv with tests/fixtures/tflite/make_fixtures.sh);

checks that the transcripts are identical, and prints one JSON object with per-chunk latency and
real-time factor side by side:

* ``bare_ms``: the bare interpreter loop on the 60 s signal -- set every input, ``invoke()``, get
  the transcript and every next state, feed the states back -- the least any client must do;
* ``step_ms``: ``TFLiteBackend.step`` (row states joined/split, events built);
* ``session_ms``: ``StreamingSession.feed`` through the engine worker thread (whole app path);
* ``tfasr_ms``: TensorFlowASR's streaming session (best of ``--repeats``);
* ``step_overhead_pct`` = median step / median bare - 1 (goal: < 10 %); ``step_overhead_us`` the
  same difference in microseconds; ``session_overhead_pct`` = mean session chunk / median bare - 1.
  Timings are best-of ``--repeats``, with the bare and step loops interleaved.

Usage: ``python bench/tflite_parity.py [--tfasr-python PATH] [--seconds 60] [model.tflite ...]``
Without a TensorFlowASR venv it still reports captioner's numbers and says parity was not checked.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from captioner.asr.tflite.backend import TFLiteBackend, TFLiteOnePass  # noqa: E402
from captioner.asr.base import StepRow  # noqa: E402
from captioner.engine.batcher import BatchEngine  # noqa: E402
from captioner.engine.session import StreamingSession  # noqa: E402
from captioner.events import TextDelta  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "tflite")
REFERENCE = os.path.join(ROOT, "bench", "tfasr_reference.py")
DEFAULT_VENV = os.environ.get("TFASR_VENV", os.path.expanduser("~/.cache/captioner/tfasr312"))


def good_fixtures() -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(FIXTURES, "*.tflite")) if not os.path.basename(p).startswith("bad_"))


def noise(seconds: float, seed: int, rate: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (0.1 * rng.standard_normal(int(seconds * rate))).astype(np.float32)


def bare_loop(backend: TFLiteBackend, signal: np.ndarray) -> list[float]:
    """Seconds per chunk of the minimal interpreter loop (state fed back, nothing else)."""
    prog = backend.program
    interp, g, B = prog.interpreter, backend.geometry, backend.batch_size
    states = [s.copy() for s in prog.initial_states]
    lengths = np.full(B, g.chunk_size, dtype=np.int32)
    batch = np.zeros((B, g.chunk_size), dtype=np.float32)
    sig_i, len_i = prog.inputs[0].index, prog.inputs[1].index
    state_idx = [t.index for t in prog.inputs[2:]]
    feedback = prog._feedback  # noqa: SLF001
    text_i = prog.outputs[0].index
    times = []
    for start in range(0, len(signal) - g.chunk_size + 1, g.chunk_step):
        t = time.perf_counter()
        batch[0] = signal[start : start + g.chunk_size]
        interp.set_tensor(sig_i, batch)
        interp.set_tensor(len_i, lengths)
        for idx, value in zip(state_idx, states):
            interp.set_tensor(idx, value)
        interp.invoke()
        interp.get_tensor(text_i)
        for slot, idx in feedback:
            states[slot] = interp.get_tensor(idx)
        times.append(time.perf_counter() - t)
    return times


def step_loop(backend: TFLiteBackend, signal: np.ndarray) -> tuple[list[float], str]:
    g = backend.geometry
    state, times, text = None, [], []
    for start in range(0, len(signal) - g.chunk_size + 1, g.chunk_step):
        row = StepRow(signal[start : start + g.chunk_size], state, 0.0, 0.0)
        t = time.perf_counter()
        (res,) = backend.step([row])
        times.append(time.perf_counter() - t)
        state = res.state
        text += [e.text for e in res.events if isinstance(e, TextDelta)]
    return times, "".join(text)


def session_stream(engine: BatchEngine, signal: np.ndarray, block: int) -> tuple[float, str]:
    session = StreamingSession(engine)
    events = []
    t = time.perf_counter()
    for i in range(0, len(signal), block):
        events += session.feed(signal[i : i + block])
    events += session.end()
    return time.perf_counter() - t, "".join(e.text for e in events if isinstance(e, TextDelta))


def chunks_of(n: int, size: int, step: int) -> int:
    return 0 if n < size else 1 + (n - size) // step


def reference(python: str, model: str, paths: list[str], block: int, repeats: int) -> dict | None:
    if not python or not os.path.exists(python):
        return None
    req = json.dumps({"model": model, "signals": paths, "block": block, "repeats": repeats})
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([python, REFERENCE], input=req, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode:
        return {"error": out.stderr[-1500:]}
    return json.loads(out.stdout)


def bench_model(path: str, args: argparse.Namespace, tmp: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend = TFLiteBackend(path, num_threads=args.threads)
        onepass = TFLiteOnePass(path, num_threads=args.threads)
    g = backend.geometry
    rate = g.sample_rate
    signals = [noise(args.short_seconds, 0, rate), noise(args.seconds, 1, rate)]
    paths = []
    for i, s in enumerate(signals):
        p = os.path.join(tmp, f"{os.path.basename(path)}.{i}.npy")
        np.save(p, s)
        paths.append(p)

    ours_one = [onepass.transcribe([s])[0] for s in signals]
    engine = BatchEngine(backend)
    ours_stream, session_s = [], []
    for s in signals:
        best, text = float("inf"), ""
        for _ in range(args.repeats):
            dt, text = session_stream(engine, s, args.block)
            best = min(best, dt)
        ours_stream.append(text)
        session_s.append(best)
    engine.close()

    long = signals[1]
    # interleave the two loops so machine load hits both alike; keep each one's best run
    bare_runs, step_runs = [], []
    for _ in range(args.repeats):
        bare_runs.append(bare_loop(backend, long))
        step_runs.append(step_loop(backend, long))
    bare = min(bare_runs, key=statistics.median)
    step, step_text = min(step_runs, key=lambda r: statistics.median(r[0]))
    n_long = chunks_of(len(long), g.chunk_size, g.chunk_step)
    audio_s = len(long) / rate
    bare_med, step_med = statistics.median(bare), statistics.median(step)

    ref = reference(args.tfasr_python, path, paths, args.block, args.repeats)
    result: dict = {
        "model": os.path.basename(path),
        "runtime": backend.program.runtime,
        "B": backend.batch_size,
        "chunk_size": g.chunk_size,
        "chunk_step": g.chunk_step,
        "signals_s": [round(len(s) / rate, 3) for s in signals],
        "chunks_60s": n_long,
        "bare_ms": round(1000 * sum(bare) / len(bare), 4),
        "bare_median_ms": round(1000 * statistics.median(bare), 4),
        "step_ms": round(1000 * sum(step) / len(step), 4),
        "step_median_ms": round(1000 * statistics.median(step), 4),
        "session_ms": round(1000 * session_s[1] / n_long, 4),
        "step_overhead_us": round(1e6 * (step_med - bare_med), 2),
        "step_overhead_pct": round(100 * (step_med / bare_med - 1), 2),
        "session_overhead_pct": round(100 * (session_s[1] / n_long / bare_med - 1), 2),
        "rtf_bare": round(sum(bare) / audio_s, 5),
        "rtf_step": round(sum(step) / audio_s, 5),
        "rtf_session": round(session_s[1] / audio_s, 5),
        "step_loop_text_is_prefix_of_session": ours_stream[1].startswith(step_text),
        "chars": [len(t) for t in ours_stream],
    }
    if ref is None:
        result["parity"] = "not checked: no TensorFlowASR venv (run tests/fixtures/tflite/make_fixtures.sh)"
    elif "error" in ref:
        result["parity"] = "reference failed: " + ref["error"]
    else:
        result.update(
            {
                "onepass_identical": ref["onepass"] == ours_one,
                "streaming_identical": ref["streaming"] == ours_stream,
                "tfasr_ms": round(1000 * ref["stream_s"][1] / max(1, ref["chunks"][1]), 4),
                "rtf_tfasr": round(ref["stream_s"][1] / audio_s, 5),
            }
        )
        result["identical"] = result["onepass_identical"] and result["streaming_identical"]
        if not result["identical"]:
            result["diff"] = {
                "ours_onepass": [t[:80] for t in ours_one],
                "tfasr_onepass": [t[:80] for t in ref["onepass"]],
                "ours_streaming": [t[:80] for t in ours_stream],
                "tfasr_streaming": [t[:80] for t in ref["streaming"]],
            }
    backend.close()
    onepass.close()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description="TFLite backend parity with TensorFlowASR ASRInference, and speed")
    parser.add_argument("models", nargs="*", help=".tflite files (default: every good fixture)")
    parser.add_argument("--tfasr-python", default=os.path.join(DEFAULT_VENV, "bin", "python"))
    parser.add_argument("--seconds", type=float, default=60.0, help="long signal length (s)")
    parser.add_argument("--short-seconds", type=float, default=3.3, help="short signal length (s)")
    parser.add_argument("--block", type=int, default=1000, help="samples per feed() call")
    parser.add_argument("--repeats", type=int, default=3, help="best of N timings")
    parser.add_argument("--threads", type=int, default=None, help="interpreter threads (default: runtime's)")
    args = parser.parse_args()
    models = args.models or good_fixtures()
    with tempfile.TemporaryDirectory() as tmp:
        results = [bench_model(m, args, tmp) for m in models]
    checked = [r for r in results if "identical" in r]
    summary = {
        "models": len(results),
        "parity_checked": len(checked),
        "all_identical": bool(checked) and all(r["identical"] for r in checked),
        "max_step_overhead_pct": max(r["step_overhead_pct"] for r in results),
        # a bare call of a few microseconds (the toy builtin model) makes any Python overhead look huge
        "max_step_overhead_pct_bare_over_50us": max(
            (r["step_overhead_pct"] for r in results if r["bare_median_ms"] >= 0.05), default=None
        ),
        "max_step_overhead_us": max(r["step_overhead_us"] for r in results),
        "results": results,
    }
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0 if (not checked or summary["all_identical"]) else 1


if __name__ == "__main__":
    sys.exit(main())
