"""Audio8 streaming-step benchmark: per-step latency (median/p95) and real-time factor per clock.

Prints one JSON object. Two model sizes:

* ``tiny`` (default): the tiny random checkpoint of the tests, on the CPU;
* ``full``: the full-size architecture (model card: 32-layer tower, 36-layer Qwen2 decoder,
  ~4.1 B parameters) with random weights in bf16, built directly on the GPU (no files).

For each clock (80/120/160 ms) and batch size B it streams silence-free test audio through
B sessions, skips the warm-up (delay) steps and times the steady steps. ``rtf`` = step time /
clock; ``batch_cost`` = step time at B / step time at B=1 (goal: B=4 under 1.5x one session;
goal at full size on a data-centre GPU: under 10 ms per 80 ms step at B=1).

Usage::

    python bench/audio8_step.py                       # tiny, CPU
    python bench/audio8_step.py --size full --device cuda --batch 1 4
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def _full_checkpoint(device: str, dtype_name: str):
    """A LoadedCheckpoint of the full-size architecture with random weights (tokenizer from the tiny builder)."""
    import torch

    from captioner.asr.audio8.checkpoint import LoadedCheckpoint, load_feature_extractor, load_tokenizer
    from captioner.asr.audio8.config import parse_config
    from captioner.asr.audio8.modeling import Audio8Model
    from captioner.asr.audio8.tiny import build_tokenizer, full_config_dict, write_preprocessor

    tmp = tempfile.mkdtemp(prefix="a8full")
    build_tokenizer(tmp)
    write_preprocessor(tmp)
    cfg = parse_config(full_config_dict())
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    dev = torch.device(device)
    with torch.device(dev):
        torch.set_default_dtype(dtype)
        try:
            model = Audio8Model(cfg)
        finally:
            torch.set_default_dtype(torch.float32)
    model.to(device=dev, dtype=dtype).eval()
    model.rebuild_buffers()  # after the cast: RoPE/time frequencies stay float32, as when loading
    tok, special = load_tokenizer(tmp, int(cfg.text.vocab_size))
    return LoadedCheckpoint(cfg, model, tok, special, load_feature_extractor(tmp, cfg), dev, dtype)


def _backend(args, clock: int, delay: int, batch: int, tiny_dir: str | None, full_ck):
    from captioner.asr.audio8 import load_audio8_backend
    from captioner.asr.audio8.backend import Audio8Backend
    from captioner.asr.audio8.config import operating_point

    if full_ck is None:
        return load_audio8_backend(tiny_dir, clock_ms=clock, delay_ms=delay, device=args.device, dtype=args.dtype,
                                   batch_size=batch, check_speed=False)
    point = operating_point(full_ck.config, clock, delay)
    return Audio8Backend(full_ck, point, "en", batch, 1.0, 0.5, 0.2, None, None)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bench_one(backend, batch: int, steps: int, device: str) -> dict:
    from captioner.asr.base import StepRow

    spt = backend.point.samples_per_token
    rng = np.random.default_rng(0)
    states = [None] * batch
    warm = backend.point.num_delay_tokens + 3
    times = []
    for i in range(warm + steps):
        rows = [StepRow((0.1 * rng.standard_normal(spt)).astype(np.float32), states[b], i * spt / 16000,
                        (i + 1) * spt / 16000) for b in range(batch)]
        _sync(device)
        t0 = time.perf_counter()
        res = backend.step(rows)
        _sync(device)
        dt = (time.perf_counter() - t0) * 1000.0
        states = [r.state for r in res]
        if i >= warm:
            times.append(dt)
    times.sort()
    med = statistics.median(times)
    return {
        "median_ms": round(med, 3),
        "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 3),
        "rtf": round(med / backend.point.clock_ms, 4),
        "steps": steps,
    }


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def _long_run(args, tiny_dir, full_ck, device: str) -> dict:
    """Step time and memory per 250-step segment over a long stream (80 ms clock, B=1)."""
    import torch

    from captioner.asr.base import StepRow

    backend = _backend(args, 80, 480, 1, tiny_dir, full_ck)
    rng = np.random.default_rng(1)
    spt = backend.point.samples_per_token
    state, seg, segments = None, [], []
    for i in range(args.long):
        row = StepRow((0.1 * rng.standard_normal(spt)).astype(np.float32), state, i * spt / 16000, (i + 1) * spt / 16000)
        _sync(device)
        t0 = time.perf_counter()
        state = backend.step([row])[0].state
        _sync(device)
        seg.append((time.perf_counter() - t0) * 1000.0)
        if len(seg) == 250:
            seg.sort()
            segments.append({
                "until_s": round((i + 1) * 0.08, 1),
                "median_ms": round(statistics.median(seg), 3),
                "p95_ms": round(seg[int(0.95 * len(seg))], 3),
                "rss_mb": round(_rss_mb(), 1),
                "gpu_mb": round(torch.cuda.memory_allocated() / 2**20, 1) if device.startswith("cuda") else None,
                "decoder_positions": state.decoder.length,
                "tower_positions": state.tower.length,
                "trims": state.trims,
                "tower_rebases": state.tower_rebases,
            })
            seg = []
    return {"steps": args.long, "window_tokens": backend.decoder.window, "segments": segments}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["tiny", "full"], default="tiny")
    ap.add_argument("--device", default=None, help="cpu, cuda, mps (default: automatic)")
    ap.add_argument("--dtype", default=None, help="bf16, fp16, fp32 (default: automatic; full size uses bf16)")
    ap.add_argument("--clocks", type=int, nargs="+", default=[80, 120, 160])
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--long", type=int, default=0, metavar="STEPS",
                    help="also stream STEPS steps at 80 ms, B=1, default rolling window, and report step time and "
                         "memory per 250-step segment (flat over time = unlimited length works)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from captioner.asr.audio8.backend import pick_device
    from captioner.asr.audio8.tiny import build_tiny_checkpoint

    device = str(pick_device(args.device))
    args.device = device
    tiny_dir = None
    full_ck = None
    if args.size == "tiny":
        tiny_dir = build_tiny_checkpoint(tempfile.mkdtemp(prefix="a8tiny"))
    else:
        full_ck = _full_checkpoint(device, args.dtype or "bf16")
    delays = {80: 480, 120: 480, 160: 480}
    results = []
    for clock in args.clocks:
        base = None
        for batch in args.batch:
            backend = _backend(args, clock, delays[clock], batch, tiny_dir, full_ck)
            r = bench_one(backend, batch, args.steps, device)
            base = base or r["median_ms"]
            r.update({"clock_ms": clock, "delay_ms": delays[clock], "batch": batch,
                      "batch_cost": round(r["median_ms"] / base, 3)})
            results.append(r)
    long_run = _long_run(args, tiny_dir, full_ck, device) if args.long else None
    out = {
        "benchmark": "audio8_step",
        "size": args.size,
        "device": device,
        "device_name": torch.cuda.get_device_name() if device.startswith("cuda") else device,
        "dtype": str(full_ck.dtype if full_ck else backend.checkpoint.dtype).replace("torch.", ""),
        "torch_threads": args.threads,
        "goals": {"full_b1_80ms_step_ms": 10.0, "b4_cost_vs_b1": 1.5},
        "results": results,
        "long_run": long_run,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
