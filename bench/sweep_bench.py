"""Sweep-throughput benchmark: the Ray pipeline vs a naive one-prompt loop vs the bare batched engine.

    python bench/sweep_bench.py [--prompts 64] [--max-tokens 32] [--out bench/results/sweep_bench.md]

All three generate the same prompts (the demo set, repeated to --prompts, NT mode) with the embedded
SmolLM2-135M, greedy, and the same max_tokens. Times include model loading for each (the Ray
pipeline's actors load their own copy); Ray cluster start-up is excluded and reported apart.
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

from howeval.benchmarks import load_benchmark  # noqa: E402
from howeval.config import load_sweep_config  # noqa: E402
from howeval.engines.hf import HFEngine  # noqa: E402
from howeval.engines.options import HFOptions  # noqa: E402
from howeval.prompts import build_request  # noqa: E402


def prompts(n: int) -> list[dict]:
    base = load_benchmark(str(REPO / "datasets" / "demo" / "manifest.jsonl")).samples
    return [{**base[i % len(base)], "sample_id": f"{base[i % len(base)]['sample_id']}#{i}"} for i in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sweep_bench.md"))
    a = ap.parse_args()

    cfg = load_sweep_config(REPO / "configs" / "demo.yaml")
    model = cfg.models[0].model_copy(update={
        "sampling": cfg.models[0].sampling.model_copy(update={"max_tokens": a.max_tokens}),
        "modes": {"NT": cfg.models[0].modes["NT"]}, "vision": False})
    samples = prompts(a.prompts)
    reqs = [build_request(s, model, "NT") for s in samples]
    res = {}

    t0 = time.perf_counter()
    eng = HFEngine(None, HFOptions(batch_size=1))
    out = [eng.generate([r])[0] for r in reqs]
    res["naive loop (batch 1)"] = (time.perf_counter() - t0, sum(c.completion_tokens for c in out))
    del eng

    t0 = time.perf_counter()
    eng = HFEngine(None, HFOptions(batch_size=a.batch_size))
    out = eng.generate(reqs)
    res[f"bare batched engine (batch {a.batch_size})"] = (time.perf_counter() - t0, sum(c.completion_tokens for c in out))
    del eng

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

    naive = res["naive loop (batch 1)"][0]
    bare = res[f"bare batched engine (batch {a.batch_size})"][0]
    lines = [f"# Sweep throughput ({a.prompts} prompts, max_tokens {a.max_tokens}, SmolLM2-135M, greedy)", "",
             f"Machine: {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}, Python {platform.python_version()}. "
             f"Ray start-up (excluded): {ray_start:.1f} s. Times include model loading.", "",
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
