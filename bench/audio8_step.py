"""Audio8 streaming-step benchmark: per-step latency, real-time factor, memory and where the time goes.

Writes one JSON file (and prints it). Model sizes:

* ``tiny`` (default): the tiny random checkpoint of the tests, on the CPU;
* ``full``: the full-size architecture (model card: 32-layer tower, 36-layer Qwen2 decoder,
  ~4.1 B parameters) with random weights in bf16, built directly on the device (no files).
  ``--layers N`` keeps every width and the vocabulary but only N tower and N decoder layers
  (a cheap check of the full-size code path on a CPU; not a measurement of the model).

For each KV-cache kind (``--cache``), clock and batch size B it streams B sessions of noise in
lock step, skips the warm-up (prompt + delay) steps and times ``--steps`` steady steps
(device synchronised around each step): p50/p95/max/mean ms per step, ``rtf`` = p50 / clock,
peak memory (CUDA: ``max_memory_allocated`` over the timed run; CPU: the process's peak RSS,
which only grows), the static KV pools' bytes. A second pass of ``--profile-steps`` steps
synchronises the device at each stage boundary and reports the share of the step in the front
end (log-mel + convs), the tower (+ projector), the decoder (+ head, VAD) and the rest (Python
bookkeeping, events, detokeniser). ``--long STEPS`` streams ``--long-batch`` sessions at
80/480 through the default rolling window (trims and tower re-bases included) and reports
step time and memory per 250-step segment and the worst step (7500 steps = 10 min of audio).

Targets (issue 15, data-centre GPU, full size, 80 ms clock): one stream < 10 ms per step,
four streams < 15 ms, memory < 10 GB for four, no step over 80 ms in 10 minutes of audio.

Usage::

    # tiny, CPU -> bench/results/audio8_step_tiny_cpu.json (today's kinds and the code before
    # the static cache, alternated step by step)
    python bench/audio8_step.py --cache static per_session baseline@5c6e63d --steps 400 \
        --long 2500 --long-batch 4 --long-all
    # full size, random bf16 weights, one GPU (about 6 minutes on a data-centre GPU)
    python bench/audio8_step.py --size full --device cuda --batch 1 2 4 --cache static static_fixed per_session \
        --steps 200 --profile-steps 50 --long 7500 --long-batch 4 --time-limit 480 \
        --out bench/results/audio8_step_full_h200.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
TARGETS = {"b1_p50_ms": 10.0, "b4_p50_ms": 15.0, "b4_peak_gb": 10.0, "long_max_step_ms": 80.0}


def _full_checkpoint(device: str, dtype_name: str, layers: int | None):
    """A LoadedCheckpoint of the full-size architecture with random weights (tokenizer from the
    tiny builder); ``layers`` overrides both stacks' depth (widths and vocabulary stay)."""
    import torch

    from captioner.asr.audio8.checkpoint import LoadedCheckpoint, load_feature_extractor, load_tokenizer
    from captioner.asr.audio8.config import parse_config
    from captioner.asr.audio8.modeling import Audio8Model
    from captioner.asr.audio8.tiny import build_tokenizer, full_config_dict, write_preprocessor

    tmp = tempfile.mkdtemp(prefix="a8full")
    build_tokenizer(tmp)
    write_preprocessor(tmp)
    raw = full_config_dict()
    if layers:
        raw["audio_config"]["num_hidden_layers"] = int(layers)
        raw["text_config"]["num_hidden_layers"] = int(layers)
    cfg = parse_config(raw)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype_name]
    dev = torch.device(device)
    torch.manual_seed(0)
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


def _baseline_module(rev: str):
    """``captioner/asr/audio8/streaming.py`` as it was at git revision ``rev``, imported as a
    separate module (its imports resolve to today's config/frontend/modeling/...)."""
    import importlib.util
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = subprocess.run(["git", "-C", root, "show", f"{rev}:captioner/asr/audio8/streaming.py"], check=True,
                         capture_output=True, text=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="a8base"), "audio8_streaming_baseline.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location("audio8_streaming_baseline", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _backend(args, clock: int, delay: int, batch: int, cache: str, tiny_dir: str | None, full_ck):
    from captioner.asr.audio8 import load_audio8_backend
    from captioner.asr.audio8.backend import Audio8Backend
    from captioner.asr.audio8.config import operating_point

    if cache.startswith("baseline@"):  # today's backend around the streaming step of an older revision
        backend = _backend(args, clock, delay, batch, "per_session", tiny_dir, full_ck)
        d = backend.decoder
        old = _baseline_module(cache.split("@", 1)[1]).StreamingDecoder
        backend.decoder = old(d.model, d.fe, d.point, d.prompt_ids, d.eos_id, d.window, d.interval,
                              tower_capacity=d.tower_capacity)
        return backend

    fixed = cache == "static_fixed"  # the static cache with fixed_shapes
    kind = "static" if fixed else cache
    if full_ck is None:
        return load_audio8_backend(tiny_dir, clock_ms=clock, delay_ms=delay, device=args.device, dtype=args.dtype,
                                   batch_size=batch, check_speed=False, kv_cache=kind, fixed_shapes=fixed)
    point = operating_point(full_ck.config, clock, delay)
    return Audio8Backend(full_ck, point, "en", batch, 1.0, 0.5, 0.2, None, None, kv_cache=kind, fixed_shapes=fixed)


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _cuda(device: str) -> bool:
    return device.startswith("cuda")


def _rss_peak_mb() -> float:
    """Peak resident memory of this process so far (MB; Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return float("nan")


def _pool_mb(backend) -> float | None:
    dec = backend.decoder
    if getattr(dec, "tower_pool", None) is None:
        return None
    return round(sum(p.keys.numel() * p.keys.element_size() * 2 for p in (dec.tower_pool, dec.decoder_pool)) / 2**20, 2)


def _summary(times: list[float]) -> dict:
    """p50/p95/max/mean of step times in ms."""
    t = sorted(times)
    return {
        "p50_ms": round(statistics.median(t), 3),
        "p95_ms": round(t[min(len(t) - 1, int(0.95 * len(t)))], 3),
        "max_ms": round(t[-1], 3),
        "mean_ms": round(statistics.fmean(t), 3),
    }


def _rows(backend, states, i: int, rng):
    from captioner.asr.base import StepRow

    spt = backend.point.samples_per_token
    return [StepRow((0.1 * rng.standard_normal(spt)).astype(np.float32), st, i * spt / 16000, (i + 1) * spt / 16000)
            for st in states]


def bench_one(backends: dict, batch: int, steps: int, profile_steps: int, device: str) -> dict:
    """Time ``steps`` steady steps of ``batch`` sessions in lock step, then profile the stages.

    With several backends (one per KV-cache kind) their steps alternate, so load from other
    processes hits every kind alike (a fair side-by-side on a shared CPU).

    Returns:
        Per backend key, the summary dict.
    """
    import torch

    keys = list(backends)
    rngs = {k: np.random.default_rng(0) for k in keys}
    states = {k: [None] * batch for k in keys}
    point = backends[keys[0]].point
    warm = point.num_delay_tokens + 3

    def step(k: str, i: int) -> float:
        rows = _rows(backends[k], states[k], i, rngs[k])
        _sync(device)
        t0 = time.perf_counter()
        res = backends[k].step(rows)
        _sync(device)
        states[k] = [r.state for r in res]
        return time.perf_counter() - t0

    for i in range(warm):
        for k in keys:
            step(k, i)
    if _cuda(device):
        _sync(device)
        torch.cuda.reset_peak_memory_stats()
    times: dict[str, list[float]] = {k: [] for k in keys}
    for i in range(warm, warm + steps):
        for k in keys:
            times[k].append(1000.0 * step(k, i))
    outs = {}
    for k in keys:
        out = _summary(times[k])
        out["rtf"] = round(out["p50_ms"] / point.clock_ms, 4)
        out["steps"] = steps
        if _cuda(device):  # with several kinds alive this is their joint peak
            out["peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        out["peak_rss_mb"] = round(_rss_peak_mb(), 1)
        out["kv_pool_mb"] = _pool_mb(backends[k])
        outs[k] = out

    # stage shares: the device is synchronised at each boundary (slower steps, honest split)
    totals = {k: 0.0 for k in keys}
    for k in keys:
        if hasattr(backends[k].decoder, "_lap"):  # a baseline revision may not time its stages
            backends[k].decoder.profile = {}
    start = warm + steps
    for i in range(start, start + profile_steps):
        for k in keys:
            totals[k] += step(k, i)
    for k in keys:
        dec = backends[k].decoder
        prof, dec.profile = getattr(dec, "profile", None), None
        total = totals[k]
        if profile_steps and total > 0 and prof is not None:
            staged = {name: prof.get(name, 0.0) for name in ("frontend", "tower", "decoder")}
            staged["python"] = max(0.0, total - sum(staged.values()))
            outs[k]["profile"] = {
                "steps": profile_steps,
                "step_ms": round(1000.0 * total / profile_steps, 3),
                "share": {n: round(v / total, 4) for n, v in staged.items()},
                "ms_per_step": {n: round(1000.0 * v / profile_steps, 3) for n, v in staged.items()},
            }
    return outs


def long_run(backends: dict, batch: int, steps: int, device: str, budget_s: float | None = None) -> dict:
    """Step time and memory per 250-step segment over a long stream of ``batch`` sessions, and
    the steps that trimmed the rolling window / re-based the tower; several backends alternate
    step by step (as in :func:`bench_one`). Stops early (``stopped_early``) once ``budget_s``
    seconds have passed.

    Returns:
        Per backend key, the long-run summary.
    """
    import torch

    keys = list(backends)
    rngs = {k: np.random.default_rng(1) for k in keys}
    states: dict[str, list] = {k: [None] * batch for k in keys}
    seg: dict[str, list[float]] = {k: [] for k in keys}
    segments: dict[str, list] = {k: [] for k in keys}
    worst = {k: 0.0 for k in keys}
    trim_steps: dict[str, list[float]] = {k: [] for k in keys}
    rebase_steps: dict[str, list[float]] = {k: [] for k in keys}
    counts = {k: (0, 0) for k in keys}
    clock = backends[keys[0]].point.clock_ms
    t_begin = time.perf_counter()
    done = 0
    for i in range(steps):
        if budget_s is not None and time.perf_counter() - t_begin > budget_s:
            break
        done = i + 1
        for k in keys:
            rows = _rows(backends[k], states[k], i, rngs[k])
            _sync(device)
            t0 = time.perf_counter()
            states[k] = [r.state for r in backends[k].step(rows)]
            _sync(device)
            dt = (time.perf_counter() - t0) * 1000.0
            seg[k].append(dt)
            worst[k] = max(worst[k], dt)
            now = (sum(st.trims for st in states[k]), sum(st.tower_rebases for st in states[k]))
            if now[0] > counts[k][0]:
                trim_steps[k].append(dt)
            if now[1] > counts[k][1]:
                rebase_steps[k].append(dt)
            counts[k] = now
            if len(seg[k]) == 250:
                s0 = states[k][0]
                segments[k].append({
                    "until_s": round((i + 1) * clock / 1000.0, 1),
                    **_summary(seg[k]),
                    "rss_mb": round(_rss_mb(), 1),
                    "gpu_mb": round(torch.cuda.memory_allocated() / 2**20, 1) if _cuda(device) else None,
                    "decoder_positions": s0.decoder.length,
                    "tower_positions": s0.tower.length,
                    "trims": s0.trims,
                    "tower_rebases": s0.tower_rebases,
                })
                seg[k] = []
    out = {}
    for k in keys:
        if seg[k]:
            segments[k].append({"until_s": round(done * clock / 1000.0, 1), **_summary(seg[k])})
        out[k] = {"steps": done, "stopped_early": done < steps, "batch": batch, "audio_s": round(done * clock / 1000.0, 1),
                  "window_tokens": backends[k].decoder.window, "max_step_ms": round(worst[k], 3),
                  "trim_steps": {"count": len(trim_steps[k]), **(_summary(trim_steps[k]) if trim_steps[k] else {})},
                  "rebase_steps": {"count": len(rebase_steps[k]),
                                   **(_summary(rebase_steps[k]) if rebase_steps[k] else {})},
                  "segments": segments[k]}
    return out


def _vs_targets(results: list[dict], long: dict | None, cache: str) -> dict:
    """Each target next to the measured number (80 ms clock, ``cache`` kind), met or not."""
    by_b = {r["batch"]: r for r in results if r["clock_ms"] == 80 and r["cache"] == cache}
    rows = {}

    def put(name: str, value: float | None) -> None:
        if value is not None:
            rows[name] = {"target": TARGETS[name], "measured": value, "met": value < TARGETS[name]}

    put("b1_p50_ms", by_b.get(1, {}).get("p50_ms"))
    put("b4_p50_ms", by_b.get(4, {}).get("p50_ms"))
    peak = by_b.get(4, {}).get("peak_gpu_mb")
    put("b4_peak_gb", round(peak / 1024.0, 3) if peak is not None else None)
    run = (long or {}).get(cache)
    put("long_max_step_ms", run["max_step_ms"] if run and run["audio_s"] >= 600 else None)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=["tiny", "full"], default="tiny")
    ap.add_argument("--layers", type=int, default=None, help="full size with only N tower/decoder layers (code check)")
    ap.add_argument("--device", default=None, help="cpu, cuda, mps (default: automatic)")
    ap.add_argument("--dtype", default=None, help="bf16, fp16, fp32 (default: automatic; full size uses bf16)")
    ap.add_argument("--clocks", type=int, nargs="+", default=[80])
    ap.add_argument("--delay", type=int, default=480, help="ms (a multiple of every clock benched)")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--cache", nargs="+", default=["static"], metavar="KIND",
                    help="static, static_fixed (fixed_shapes), per_session, or baseline@REV: the streaming step "
                         "of git revision REV")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--profile-steps", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--long", type=int, default=0, metavar="STEPS",
                    help="also stream STEPS steps at 80/480 through the default rolling window (7500 = 10 min)")
    ap.add_argument("--long-batch", type=int, default=1, help="sessions in the long run")
    ap.add_argument("--long-all", action="store_true", help="a long run for every --cache kind (default: the first)")
    ap.add_argument("--time-limit", type=float, default=None, metavar="S",
                    help="stop the long run early once the whole benchmark has run S seconds (the JSON says so)")
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/audio8_step_<size>_<device>.json)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from captioner.asr.audio8.backend import pick_device
    from captioner.asr.audio8.tiny import build_tiny_checkpoint

    device = str(pick_device(args.device))
    args.device = device
    tiny_dir = None
    full_ck = None
    t_build = time.perf_counter()
    if args.size == "tiny":
        tiny_dir = build_tiny_checkpoint(tempfile.mkdtemp(prefix="a8tiny"))
    else:
        full_ck = _full_checkpoint(device, args.dtype or "bf16", args.layers)
    build_s = time.perf_counter() - t_build
    results = []
    backend = None
    dtype_used = None
    base: dict[str, float] = {}
    path = args.out or os.path.join(RESULTS_DIR, f"audio8_step_{args.size}_{device.split(':')[0]}.json")
    # on a shared CPU the kinds alternate step by step (same load for each); on a GPU they run
    # one after the other, so each kind's peak memory is its own
    groups = [list(args.cache)] if not _cuda(device) else [[c] for c in args.cache]
    t_start = time.perf_counter()

    def report(long: dict | None) -> dict:
        n_params = sum(p.numel() for p in full_ck.model.parameters()) if full_ck else None
        out = {
            "benchmark": "audio8_step",
            "size": args.size if not args.layers else f"full-width, {args.layers} layers",
            "parameters": n_params,
            "device": device,
            "device_name": torch.cuda.get_device_name() if _cuda(device) else platform.processor() or "cpu",
            "dtype": dtype_used,
            "torch": torch.__version__,
            "torch_threads": args.threads,
            "model_build_s": round(build_s, 1),
            "kinds_alternated": len(groups[0]) > 1,
            "targets": TARGETS,
            "vs_targets": ({c: _vs_targets(results, long, c) for c in args.cache}
                           if full_ck is not None and not args.layers
                           else "n/a: the targets are for the full-size model on a data-centre GPU"),
            "results": results,
            "long_run": long,  # per cache kind
            "command": "python bench/audio8_step.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        }
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:  # rewritten after each stage: a timeout keeps the rest
            json.dump(out, fh, indent=2)
            fh.write("\n")
        return out

    for clock in args.clocks:
        for batch in args.batch:
            for group in groups:
                backends = {cache: _backend(args, clock, args.delay, batch, cache, tiny_dir, full_ck) for cache in group}
                dtype_used = str(next(iter(backends.values())).checkpoint.dtype).replace("torch.", "")
                measured = bench_one(backends, batch, args.steps, args.profile_steps, device)
                for cache in group:
                    r = measured[cache]
                    base.setdefault(f"{cache}/{clock}", r["p50_ms"])
                    r = {"cache": cache, "clock_ms": clock, "delay_ms": args.delay, "batch": batch, **r,
                         "batch_cost": round(r["p50_ms"] / base[f"{cache}/{clock}"], 3)}
                    results.append(r)
                    print(json.dumps(r), file=sys.stderr, flush=True)
                for b in backends.values():
                    b.close()
                del backends, measured
                gc.collect()
                if _cuda(device):
                    torch.cuda.empty_cache()
                report(None)
    long: dict | None = None
    if args.long:
        long = {}
        kinds = args.cache if args.long_all else args.cache[:1]
        long_groups = [kinds] if not _cuda(device) else [[c] for c in kinds]
        for n, group in enumerate(long_groups):
            backends = {c: _backend(args, 80, 480, args.long_batch, c, tiny_dir, full_ck) for c in group}
            left = args.time_limit - (time.perf_counter() - t_start) if args.time_limit else None
            budget = left / (len(long_groups) - n) if left is not None else None
            long.update(long_run(backends, args.long_batch, args.long, device, budget))
            for b in backends.values():
                b.close()
            del backends
            gc.collect()
            if _cuda(device):
                torch.cuda.empty_cache()
            report(long)
    out = report(long)
    print(json.dumps(out, indent=2))
    print(f"wrote {path} after {time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
