"""Cluster-sweep benchmark: every config at once with judging streamed, against one config after another.

    python bench/cluster_sweep_bench.py [--configs 12] [--prompts 24] [--delay 0.4] [--judge-latency 0.2]
                                        [--paper-prompts 200] [--out bench/results/cluster_sweep.json]

On the local Ray cluster (2 CPUs here), ``--configs`` latency-modelled configs (the ``replay`` engine,
``--delay`` seconds a request, one actor each at 0.1 CPU) answer ``--prompts`` prompts in both modes, and
an LLM judge behind a local fake OpenAI-compatible server answers each call after ``--judge-latency`` s
(2 judge actors x 4 requests in flight). In one Ray session it measures:

1. *serial* (the old behaviour): each config alone, one after another (its time alone is its own figure),
   then the judge over all responses (the *judging* time);
2. *generation*: all configs at once, no judge;
3. *concurrent*: all configs at once with judging streamed behind them (the new sweep).

Goals (issue 17): concurrent <= 1.3 x the slowest config alone, and concurrent <= 1.2 x
max(generation, judging). Every figure includes actor start-up (the engine "load"); Ray's own start-up
is measured apart. Then the paper-size dry run: ``configs/sweeps/patterneval-25.yaml`` with every engine
swapped for ``replay`` (no delay) and its LLM judges pointed at the fake server (no latency), on
``--paper-prompts`` prompts: it must complete, and its wall time over its rows gives the pipeline's own
per-request overhead used by the README's capacity plan.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from fakes.judge_server import FakeJudgeServer  # noqa: E402

from howeval.benchmarks.loaders import load_samples  # noqa: E402
from howeval.config import BenchmarkConfig, SweepConfig, load_sweep_config  # noqa: E402
from howeval.records import RESPONSE_SCHEMA  # noqa: E402
from howeval.store import join, read_jsonl, read_table  # noqa: E402


def write_inputs(d: Path, n: int, configs: int) -> tuple[Path, list[Path]]:
    """A manifest of ``n`` prompts (the demo set repeated, unique uids, absolute image paths) and, per
    config, the recorded answers its replay engine gives (the gold answer, both modes). Each config's text
    names the config, so no two configs give the same response and the judge's cache (one call per identical
    request) cannot answer one config's rows from another's: every response costs one judge call."""
    demo = REPO / "datasets" / "demo"
    d.mkdir(parents=True, exist_ok=True)
    base = read_jsonl(demo / "manifest.jsonl")
    manifest, recorded = d / "manifest.jsonl", [d / f"recorded{c:02d}.jsonl" for c in range(configs)]
    rows = []
    with manifest.open("w") as m:
        for i in range(n):
            row = dict(base[i % len(base)])
            row["uid"] = f"{row['uid']}#{i}"
            row["image"] = str(demo / row["image"])
            m.write(json.dumps(row) + "\n")
            rows.append(row)
    for c, path in enumerate(recorded):
        with path.open("w") as r:
            for row in rows:
                for mode in ("NT", "T"):
                    r.write(json.dumps({"sample_id": row["uid"], "mode": mode,
                                        "response": f"[cfg{c:02d} {mode}] Counting carefully, the answer is "
                                                    f"{row['answer']}."}) + "\n")
    return manifest, recorded


def fake_judge(url: str, replicas: int = 2, concurrency: int = 4) -> dict:
    return {"pattern": [{"name": "llm-judge", "kind": "llm", "with_image": False,
                         "llm": {"model": "fake-judge", "options": {"base_url": url, "api_key_env": "HOWEVAL_BENCH_KEY",
                                                                    "max_concurrency": concurrency, "timeout_s": 60,
                                                                    "max_retries": 0}}}],
            "replicas": replicas, "num_cpus": 0.1}


def bench_configs(a, d: Path, url: str) -> dict:
    from ray_jobs.stages import generate, generate_and_judge

    manifest, recorded = write_inputs(d, a.prompts, a.configs)
    models = [{"name": f"cfg{i:02d}", "engine": "replay", "options": {"path": str(recorded[i]), "delay_s": a.delay},
               "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.1, "batch_size": a.batch_size}}
              for i in range(a.configs)]

    def cfg(name: str) -> SweepConfig:
        return SweepConfig.model_validate({"name": name, "output_uri": str(d / name), "models": models,
                                           "benchmarks": [{"path": str(manifest)}], "judges": fake_judge(url),
                                           "ray": {"num_cpus": 2}})

    samples, _ = load_samples(cfg("x").benchmarks)
    res: dict = {"alone_s": {}}
    serial = cfg("serial")
    t0 = time.perf_counter()
    for m in serial.models:  # the old sweep: one config after another ...
        t = time.perf_counter()
        out = generate(serial, m, samples)
        assert "failed" not in out, out
        res["alone_s"][m.name] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()  # ... then the judge over everything
    out = generate_and_judge(serial, samples, [], judges=serial.judges)
    assert not out.failures and out.judged == a.configs * a.prompts * 2, out
    res["judging_s"] = round(time.perf_counter() - t, 2)
    res["serial_s"] = round(time.perf_counter() - t0, 2)

    gen = cfg("generation")
    t = time.perf_counter()
    out = generate_and_judge(gen, samples, list(gen.models), judges=None)
    assert not out.failures, out.failures
    res["generation_s"] = round(time.perf_counter() - t, 2)

    conc = cfg("concurrent")
    t = time.perf_counter()
    out = generate_and_judge(conc, samples, list(conc.models), judges=conc.judges)
    assert not out.failures and out.judged == a.configs * a.prompts * 2, out
    res["concurrent_s"] = round(time.perf_counter() - t, 2)
    rows = read_table(join(conc.output_uri, "responses"), RESPONSE_SCHEMA)[0].num_rows
    assert rows == a.configs * a.prompts * 2, rows

    slowest = max(res["alone_s"].values())
    res["slowest_alone_s"] = slowest
    res["engine_time_per_config_s"] = round(a.prompts * 2 * a.delay, 2)
    res["goal_concurrent_vs_slowest"] = {"ratio": round(res["concurrent_s"] / slowest, 3), "goal": 1.3,
                                         "met": res["concurrent_s"] <= 1.3 * slowest}
    base = max(res["generation_s"], res["judging_s"])
    res["goal_overlap"] = {"ratio": round(res["concurrent_s"] / base, 3), "goal": 1.2,
                           "met": res["concurrent_s"] <= 1.2 * base}
    res["speedup_vs_serial"] = round(res["serial_s"] / res["concurrent_s"], 2)
    return res


def paper_dry_run(a, d: Path, url: str) -> dict:
    """The 25-config file with replay engines (no delay) and the fake judge (no latency) on ``--paper-prompts``."""
    from ray_jobs.stages import generate_and_judge

    paper = load_sweep_config(REPO / "configs" / "sweeps" / "patterneval-25.yaml")
    manifest, recorded = write_inputs(d, a.paper_prompts, len(paper.models))
    raw = paper.model_dump()
    for m, path in zip(raw["models"], recorded):
        m.update(engine="replay", model=None, options={"path": str(path)},
                 resources={"replicas": 1, "num_cpus": 0.05, "batch_size": 16})
        for mode in m["modes"].values():
            mode.update(reasoning_effort=None, extra_body={})
    raw.update(output_uri=str(d / "paper"), benchmarks=[BenchmarkConfig(path=str(manifest)).model_dump()],
               judges=fake_judge(url, replicas=2, concurrency=8), crystal=None, adapt=None, ray={"num_cpus": 2})
    cfg = SweepConfig.model_validate(raw)
    samples, _ = load_samples(cfg.benchmarks)
    t = time.perf_counter()
    out = generate_and_judge(cfg, samples, list(cfg.models), judges=cfg.judges)
    wall = time.perf_counter() - t
    n = len(cfg.models) * a.paper_prompts * 2
    assert not out.failures and out.judged == n, (out.failures, out.judged)
    return {"configs": len(cfg.models), "prompts": a.paper_prompts, "responses": n, "judge_calls": out.judged,
            "wall_s": round(wall, 1), "overhead_ms_per_response_and_judgment": round(1000 * wall / n, 2)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--prompts", type=int, default=24)
    p.add_argument("--delay", type=float, default=0.4, help="replay engine seconds per request")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--judge-latency", type=float, default=0.2, help="fake judge seconds per call")
    p.add_argument("--paper-prompts", type=int, default=200, help="0 skips the paper-size dry run")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "cluster_sweep.json"))
    a = p.parse_args(argv)
    os.environ.setdefault("HOWEVAL_BENCH_KEY", "unused")
    from howeval.config import RayConfig
    from ray_jobs.common import init_ray

    t = time.perf_counter()
    init_ray(RayConfig(num_cpus=2), verbose=False)
    result = {"settings": vars(a) | {"out": None}, "ray_start_s": round(time.perf_counter() - t, 2),
              "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}, "
                         f"load average at start {os.getloadavg()[0]:.1f}"}
    with tempfile.TemporaryDirectory() as d:
        with FakeJudgeServer(fault_rate=0.0, latency_s=a.judge_latency) as srv:
            result["sweep"] = bench_configs(a, Path(d) / "sweep", srv.base_url)
        if a.paper_prompts:
            with FakeJudgeServer(fault_rate=0.0) as srv:
                result["paper_dry_run"] = paper_dry_run(a, Path(d) / "paper", srv.base_url)
    result["load_average_at_end"] = round(os.getloadavg()[0], 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
