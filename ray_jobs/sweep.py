"""Job: the PatternEval sweep — generate (every config x mode x sample), judge, then metrics and report.

    python -m ray_jobs.sweep --config configs/demo.yaml [--data FILE] [--output URI] [--limit N]

Flow (one direction): benchmark rows -> PolicyStage actor pool -> responses/*.parquet ->
JudgeStage actor pool -> judgments/*.parquet [-> CRYSTAL steps/ when ``crystal:`` is set]
[-> AdaptMMBench adapt/ when ``adapt:`` is set] -> metrics.json + report.md. Rerunning the same command
skips every key ``(sample_id, config, mode)`` already written (resume after a kill).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import pyarrow as pa

from howeval.benchmarks.loaders import BadRowError, load_samples
from howeval.config import BenchmarkConfig, ConfigError, ModelConfig, SweepConfig, load_sweep_config, require_ready
from howeval.records import KEY, RESPONSE_SCHEMA, SAMPLE_SCHEMA, conform
from howeval.store import existing_keys, join, read_table, write_json
from ray_jobs.common import blocks, init_ray, log, write_parquet

WORK_SCHEMA = (SAMPLE_SCHEMA.append(pa.field("config", pa.string())).append(pa.field("mode", pa.string()))
               .append(pa.field("instruction", pa.string())))


def pending_work(samples: list[dict], model: ModelConfig, done: set[tuple], modes=("NT", "T")) -> list[dict]:
    """Rows (sample + config + mode) whose key is not in ``done``, in sample order, NT before T."""
    return [{**s, "config": model.name, "mode": m} for s in samples for m in modes
            if m in model.modes and (s["sample_id"], model.name, m) not in done]


def generate(cfg, model: ModelConfig, samples: list[dict], modes=("NT", "T")) -> dict:
    """Run one config over the samples through a Ray Data actor pool; returns counts.

    ``cfg`` is any job config with ``output_uri`` and ``ray`` (responses go to
    ``<output_uri>/responses/<model.name>/``).
    """
    import ray
    from ray.data import ActorPoolStrategy

    from actors.policy import PolicyStage

    uri = join(cfg.output_uri, "responses", model.name)
    existing, quarantined = read_table(uri, RESPONSE_SCHEMA)
    todo = pending_work(samples, model, existing_keys(existing, KEY), modes)
    if not todo:
        return {"config": model.name, "done": existing.num_rows, "new": 0, "quarantined": quarantined}
    r = model.resources
    table = conform(todo, WORK_SCHEMA)
    parts = blocks(table, r.batch_size)
    ds = ray.data.from_arrow(parts)
    ds = ds.map_batches(  # no more actors than blocks: an actor without a block would load a model for nothing
        PolicyStage, fn_constructor_kwargs={"model_config": model.model_dump()}, batch_size=r.batch_size,
        batch_format="pyarrow", compute=ActorPoolStrategy(size=min(r.replicas, len(parts))), num_cpus=r.num_cpus,
        num_gpus=r.num_gpus or None, **({"accelerator_type": r.accelerator_type} if r.accelerator_type else {}),
    )
    t0 = time.perf_counter()
    write_parquet(ds, uri, cfg.ray.task_num_cpus)
    return {"config": model.name, "done": existing.num_rows, "new": len(todo), "seconds": time.perf_counter() - t0,
            "quarantined": quarantined}


def run_sweep(cfg: SweepConfig) -> dict:
    """Generate, judge and report. Returns the metrics dict also written to ``metrics.json``."""
    from ray_jobs.judge import judge_run
    from howeval.report.run import write_report

    samples, bad = load_samples(cfg.benchmarks, cfg.skip_bad_rows)
    if not samples:
        raise ValueError("no samples to run: every benchmark row was bad or the files are empty")
    write_json(join(cfg.output_uri, "run_config.json"), cfg.model_dump_json(indent=2))
    write_json(join(cfg.output_uri, "bad_rows.json"), json.dumps(bad, indent=2))
    init_ray(cfg.ray)
    for model in cfg.models:
        log.info("generate %s", json.dumps(generate(cfg, model, samples)))
    judge_run(cfg, samples=samples)
    if cfg.crystal is not None:
        from ray_jobs.crystal import score_run

        score_run(cfg, samples)
    if cfg.adapt is not None:
        from ray_jobs.adapt import run_adapt

        run_adapt(cfg, samples)
    return write_report(cfg, bad_rows=bad)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m ray_jobs.sweep", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="sweep YAML (see configs/)")
    p.add_argument("--data", action="append", help="benchmark manifest(s) replacing the config's (repeatable)")
    p.add_argument("--output", help="output URI replacing the config's output_uri")
    p.add_argument("--limit", type=int, help="use only the first N rows of each benchmark")
    p.add_argument("--max-tokens", type=int, help="token budget for every model in both modes (replaces sampling.max_tokens and per-mode max_tokens)")
    p.add_argument("--skip-bad-rows", action="store_true", help="record bad benchmark rows in the report and go on")
    return p.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    """The sweep config with command-line overrides applied (validated again)."""
    cfg = load_sweep_config(args.config)
    raw = cfg.model_dump()
    if args.data:
        raw["benchmarks"] = [BenchmarkConfig(path=str(Path(d).resolve()) if "://" not in d else d).model_dump()
                             for d in args.data]
    if args.limit:
        for b in raw["benchmarks"]:
            b["limit"] = args.limit
    if args.output:
        raw["output_uri"] = args.output
    if args.max_tokens:
        for m in raw["models"]:
            m["sampling"]["max_tokens"] = args.max_tokens
            for mc in m["modes"].values():
                mc["max_tokens"] = None
    if args.skip_bad_rows:
        raw["skip_bad_rows"] = True
    return SweepConfig.model_validate(raw)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    args = parse_args(argv)
    try:
        cfg = config_from_args(args)
        require_ready(cfg, args.config)  # paths, URLs, keys, stale resume: before Ray starts
        metrics = run_sweep(cfg)
    except (ConfigError, BadRowError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {join(cfg.output_uri, 'metrics.json')} and report.md")
    for name, c in metrics["configs"].items():
        parts = [f"{m}: Acc {c[m]['acc']}, Trigger {c[m]['trigger']}, n {c[m]['n']}" for m in ("NT", "T") if m in c]
        print(f"  {name}: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
