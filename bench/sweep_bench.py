"""Sweep-throughput benchmark: the Ray pipeline vs a naive one-prompt loop vs the bare batched engine.

    python bench/sweep_bench.py [--prompts 64] [--max-tokens 32] [--out bench/results/sweep_bench.md]

All three generate the same prompts (the demo set, repeated to --prompts, NT mode) with the embedded
SmolLM2-135M, greedy, and the same max_tokens. Every contender pays its own process start-up: the naive
loop and the bare engine run in a fresh Python process each (timed from outside: imports, model load,
generation), and the Ray pipeline's actors are fresh worker processes that import and load the model
too. Only the Ray cluster's own start-up is excluded (reported apart: a sweep joins a running cluster).
Goal (issue 2): Ray >= 3x the naive loop and <= 15% overhead against the bare batched engine.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from howeval.benchmarks.loaders import load_benchmark  # noqa: E402
from howeval.config import load_sweep_config  # noqa: E402
from howeval.engines.hf import HFEngine  # noqa: E402
from howeval.engines.options import HFOptions  # noqa: E402
from howeval.engines.prompts import build_request  # noqa: E402


def prompts(n: int) -> list[dict]:
    base = load_benchmark(str(REPO / "datasets" / "demo" / "manifest.jsonl")).samples
    return [{**base[i % len(base)], "sample_id": f"{base[i % len(base)]['sample_id']}#{i}"} for i in range(n)]


def _requests(a):
    cfg = load_sweep_config(REPO / "configs" / "demo.yaml")
    model = cfg.models[0].model_copy(update={
        "sampling": cfg.models[0].sampling.model_copy(update={"max_tokens": a.max_tokens}),
        "modes": {"NT": cfg.models[0].modes["NT"]}, "vision": False})
    samples = prompts(a.prompts)
    return cfg, model, samples, [build_request(s, model, "NT") for s in samples]


def _engine_only(a) -> None:
    """Child process: the naive loop (batch 1) or the bare batched engine; prints completion tokens."""
    _, _, _, reqs = _requests(a)
    bs = 1 if a.only == "naive" else a.batch_size
    eng = HFEngine(None, HFOptions(batch_size=bs, torch_threads=os.cpu_count()))
    out = [eng.generate([r])[0] for r in reqs] if bs == 1 else eng.generate(reqs)
    print(f"TOKENS {sum(c.completion_tokens for c in out)}")


def _timed_child(a, which: str) -> tuple[float, int]:
    import subprocess

    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "--only", which, "--prompts", str(a.prompts),
                        "--max-tokens", str(a.max_tokens), "--batch-size", str(a.batch_size)],
                       capture_output=True, text=True, check=True)
    dt = time.perf_counter() - t0
    return dt, int(next(line.split()[1] for line in p.stdout.splitlines() if line.startswith("TOKENS")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["naive", "bare"], help=argparse.SUPPRESS)
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sweep_bench.md"))
    a = ap.parse_args()
    if a.only:
        return _engine_only(a)
    cfg, model, samples, _ = _requests(a)
    res = {"naive loop (batch 1, fresh process)": _timed_child(a, "naive"),
           f"bare batched engine (batch {a.batch_size}, fresh process)": _timed_child(a, "bare")}

    import pyarrow.parquet as pq
    import ray

    from howeval.config import SweepConfig
    from ray_jobs.common import init_ray
    from ray_jobs.sweep import generate

    t0 = time.perf_counter()
    init_ray(cfg.ray)
    ray_start = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        for replicas, threads in ((1, 2), (2, 1)):
            m = model.model_copy(update={
                "options": {"batch_size": a.batch_size, "torch_threads": threads},
                "resources": model.resources.model_copy(update={"replicas": replicas, "batch_size": a.batch_size,
                                                                "num_cpus": 0.75})})
            sweep = SweepConfig.model_validate({**cfg.model_dump(), "output_uri": f"{d}/r{replicas}",
                                                "models": [m.model_dump()]})
            t0 = time.perf_counter()
            generate(sweep, m, samples)
            dt = time.perf_counter() - t0
            toks = sum(pq.read_table(f"{d}/r{replicas}/responses").column("completion_tokens").to_pylist())
            res[f"Ray pipeline ({replicas} actor{'s' if replicas > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}, batch {a.batch_size})"] = (dt, toks)
    ray.shutdown()

    naive = res["naive loop (batch 1, fresh process)"][0]
    bare = res[f"bare batched engine (batch {a.batch_size}, fresh process)"][0]
    lines = [f"# Sweep throughput ({a.prompts} prompts, max_tokens {a.max_tokens}, SmolLM2-135M, greedy)", "",
             f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python {platform.python_version()}. "
             f"Ray cluster start-up (excluded): {ray_start:.1f} s. Every time includes process start-up, imports and model loading.", "",
             "| run | seconds | prompts/s | completion tokens | tokens/s | speed-up vs naive | vs bare batched |",
             "|---|---|---|---|---|---|---|"]
    for name, (dt, toks) in res.items():
        lines.append(f"| {name} | {dt:.1f} | {a.prompts / dt:.2f} | {toks} | {toks / dt:.0f} | "
                     f"{naive / dt:.2f}x | {100 * (dt / bare - 1):+.0f}% |")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
