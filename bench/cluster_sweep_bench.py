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
per-request overhead used by the capacity plan. It runs twice side by side, each in a fresh process:
text-only rows and rows with an image each (the driver loads image paths; the actors read the bytes), with
the driver's peak RSS (goal, issue 20: image run <= 1.2 x text run).
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

from howeval.benchmarks.loaders import load_samples  # noqa: E402
from howeval.config import BenchmarkConfig, SweepConfig, load_sweep_config  # noqa: E402
from howeval.records import RESPONSE_SCHEMA  # noqa: E402
from howeval.store import join, read_jsonl, read_table  # noqa: E402

from fakes.judge_server import FakeJudgeServer  # noqa: E402


def write_inputs(d: Path, n: int, configs: int, images: bool = True) -> tuple[Path, list[Path]]:
    """A manifest of ``n`` prompts (the demo set repeated, unique uids, absolute image paths) and, per
    config, the recorded answers its replay engine gives (the gold answer, both modes). Each config's text
    names the config, so no two configs give the same response and the judge's cache (one call per identical
    request) cannot answer one config's rows from another's: every response costs one judge call.
    ``images`` False leaves every row without its image (the text-only variant)."""
    demo = REPO / "datasets" / "demo"
    d.mkdir(parents=True, exist_ok=True)
    base = read_jsonl(demo / "manifest.jsonl")
    manifest, recorded = d / "manifest.jsonl", [d / f"recorded{c:02d}.jsonl" for c in range(configs)]
    rows = []
    with manifest.open("w") as m:
        for i in range(n):
            row = dict(base[i % len(base)])
            row["uid"] = f"{row['uid']}#{i}"
            if images:
                row["image"] = str(demo / row["image"])
            else:
                row.pop("image", None)
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
    from howeval.ray_jobs.common import generate, generate_and_judge

    manifest, recorded = write_inputs(d, a.prompts, a.configs)
    models = [{"name": f"cfg{i:02d}", "engine": "replay", "options": {"path": str(recorded[i]), "delay_s": a.delay},
               "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.1, "batch_size": a.batch_size}}
              for i in range(a.configs)]

    def cfg(name: str) -> SweepConfig:
        return SweepConfig.model_validate({"name": name, "output_uri": str(d / name), "models": models,
                                           "benchmarks": [{"path": str(manifest)}], "judges": fake_judge(url),
                                           "ray": {"num_cpus": 2}})

    samples, _ = load_samples(cfg("x").benchmarks, read_images=False)  # as the sweep: the actors read the images
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


def _driver_cpu() -> float:
    """CPU seconds of this (driver) process, every thread, user + system."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def paper_dry_run(a, d: Path, url: str, images: bool) -> dict:
    """The 25-config file with replay engines (no delay) and the fake judge (no latency) on ``--paper-prompts``,
    each row with its image (``images``) or without; the driver loads rows as the sweep does (image paths
    only, the actors read the bytes). Runs in its own process so that its peak RSS is its own."""
    import resource

    from howeval.ray_jobs.common import generate_and_judge

    paper = load_sweep_config(REPO / "configs" / "sweeps" / "patterneval-25.yaml")
    manifest, recorded = write_inputs(d, a.paper_prompts, len(paper.models), images=images)
    raw = paper.model_dump()
    for m, path in zip(raw["models"], recorded):
        m.update(engine="replay", model=None, options={"path": str(path)},
                 resources={"replicas": 1, "num_cpus": 0.05, "batch_size": 16})
        for mode in m["modes"].values():
            mode.update(reasoning_effort=None, extra_body={})
    raw.update(output_uri=str(d / "paper"), benchmarks=[BenchmarkConfig(path=str(manifest)).model_dump()],
               judges=fake_judge(url, replicas=2, concurrency=8), crystal=None, adapt=None, ray={"num_cpus": 2})
    cfg = SweepConfig.model_validate(raw)
    samples, _ = load_samples(cfg.benchmarks, read_images=False)
    t, cpu = time.perf_counter(), _driver_cpu()
    out = generate_and_judge(cfg, samples, list(cfg.models), judges=cfg.judges)
    wall, cpu = time.perf_counter() - t, _driver_cpu() - cpu
    n = len(cfg.models) * a.paper_prompts * 2
    assert not out.failures and out.judged == n, (out.failures, out.judged)
    rows = read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0]
    assert rows.num_rows == n and rows.column("error").null_count == n, "rows missing or with errors"
    seen = sum(rows.column("images_seen").to_pylist())
    assert seen == (n if images else 0), seen  # one image per row reached the engine, or none
    return {"images": images, "configs": len(cfg.models), "prompts": a.paper_prompts, "responses": n,
            "judge_calls": out.judged, "images_seen": seen, "wall_s": round(wall, 1),
            "overhead_ms_per_response_and_judgment": round(1000 * wall / n, 2), "driver_cpu_s": round(cpu, 1),
            "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def paper_child(a, variant: str) -> int:
    """``--paper-child text|image``: one paper-size dry run in this (fresh) process; prints its JSON."""
    from howeval.config import RayConfig
    from howeval.runtime.cluster import init_ray

    os.environ.setdefault("HOWEVAL_BENCH_KEY", "unused")
    init_ray(RayConfig(num_cpus=2), verbose=False)
    with tempfile.TemporaryDirectory() as d, FakeJudgeServer(fault_rate=0.0) as srv:
        print("RESULT " + json.dumps(paper_dry_run(a, Path(d) / "paper", srv.base_url, images=variant == "image")))
    return 0


def paper_side_by_side(a) -> dict:
    """Text-only and image-per-row dry runs, each in a fresh process, interleaved ``--paper-repeats`` times."""
    import subprocess

    runs = []
    for r in range(a.paper_repeats):
        for variant in (("text", "image") if r % 2 == 0 else ("image", "text")):
            cmd = [sys.executable, __file__, "--paper-child", variant, "--paper-prompts", str(a.paper_prompts)]
            p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": "local"})
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            if p.returncode or not line:
                raise RuntimeError(f"paper dry run ({variant}) failed: {p.stdout[-2000:]}{p.stderr[-2000:]}")
            runs.append(json.loads(line[0][7:]) | {"round": r, "load1": round(os.getloadavg()[0], 1)})
            print(json.dumps(runs[-1]), flush=True)
    best = {v: min((x for x in runs if x["images"] == (v == "image")), key=lambda x: x["wall_s"]) for v in ("text", "image")}
    ratio = best["image"]["wall_s"] / best["text"]["wall_s"]
    return {"runs": runs, "text": best["text"], "image": best["image"],
            "goal_image_vs_text": {"ratio": round(ratio, 3), "goal": 1.2, "met": ratio <= 1.2}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--configs", type=int, default=12)
    p.add_argument("--prompts", type=int, default=24)
    p.add_argument("--delay", type=float, default=0.4, help="replay engine seconds per request")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--judge-latency", type=float, default=0.2, help="fake judge seconds per call")
    p.add_argument("--paper-prompts", type=int, default=200, help="0 skips the paper-size dry run")
    p.add_argument("--paper-repeats", type=int, default=1, help="text / image dry-run pairs, interleaved")
    p.add_argument("--skip-sweep", action="store_true", help="only the paper-size dry runs")
    p.add_argument("--paper-child", choices=["text", "image"], help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "cluster_sweep.json"))
    a = p.parse_args(argv)
    if a.paper_child:
        return paper_child(a, a.paper_child)
    os.environ.setdefault("HOWEVAL_BENCH_KEY", "unused")
    from howeval.config import RayConfig
    from howeval.runtime.cluster import init_ray

    t = time.perf_counter()
    init_ray(RayConfig(num_cpus=2), verbose=False)
    result = {"settings": vars(a) | {"out": None}, "ray_start_s": round(time.perf_counter() - t, 2),
              "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}, "
                         f"load average at start {os.getloadavg()[0]:.1f}"}
    with tempfile.TemporaryDirectory() as d:
        if not a.skip_sweep:
            with FakeJudgeServer(fault_rate=0.0, latency_s=a.judge_latency) as srv:
                result["sweep"] = bench_configs(a, Path(d) / "sweep", srv.base_url)
    import ray

    ray.shutdown()  # the dry runs start their own
    if a.paper_prompts:
        result["paper_dry_run"] = paper_side_by_side(a)
    result["load_average_at_end"] = round(os.getloadavg()[0], 1)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
