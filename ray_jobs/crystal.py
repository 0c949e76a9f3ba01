"""Job: CRYSTAL step metrics for the responses of a run (SPEC section 3).

    python -m ray_jobs.crystal --run runs/demo [--tau 0.35] [--alpha 0.5] [--order lis|kendall]

Every response whose sample has reference steps is segmented (``howeval.parsing.steps.response_steps``: the
CRYSTAL JSON when present, else the reasoning channel, else the answer), embedded by a pool of
embedder actors and matched. Rows land in ``<run>/steps/*.parquet``, keyed by
(sample_id, config, mode, response_hash, embedder, tau, alpha, order): rerunning scores nothing twice.
"""
from __future__ import annotations

import argparse
import sys

import pyarrow as pa

from howeval.benchmarks.loaders import load_samples
from howeval.config import SweepConfig, load_run_config
from howeval.benchmarks.crystal import crystal_settings
from howeval.records import RESPONSE_SCHEMA, STEP_KEY, STEPS_SCHEMA
from howeval.parsing.steps import response_steps
from howeval.store import existing_keys, join, read_table, write_json
from ray_jobs.common import blocks, init_ray, log, write_parquet

def settings(cfg: SweepConfig) -> dict:
    """The sweep's ``crystal:`` block over the defaults (``howeval.benchmarks.crystal.crystal_settings``)."""
    return crystal_settings(cfg.crystal)


def score_run(cfg: SweepConfig, samples: list[dict]) -> dict:
    """Score the run's responses that have reference steps; append to ``<run>/steps``."""
    import ray  # noqa: F401

    from actors.embedder import score_steps

    s = settings(cfg)
    emb = s["embedder"] or "all-MiniLM-L6-v2"
    refs = {x["sample_id"]: x["reference_steps"] for x in samples if x.get("reference_steps")}
    responses = read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist()
    done = existing_keys(read_table(join(cfg.output_uri, "steps"), STEPS_SCHEMA)[0], STEP_KEY)
    todo = []
    for r in responses:
        if r["sample_id"] not in refs or r.get("error"):
            continue
        key = (r["sample_id"], r["config"], r["mode"], r["response_hash"], emb, s["tau"], s["alpha"], s["order"])
        if key in done:
            continue
        todo.append(dict(zip(STEP_KEY, key)) | {"pred_steps": response_steps(r["response"] or "", r.get("reasoning")),
                                                "ref_steps": refs[r["sample_id"]]})
    if not todo:
        return {"scored": 0}
    init_ray(cfg.ray)
    table = pa.Table.from_pylist(todo, schema=pa.schema([STEPS_SCHEMA.field(n) for n in (*STEP_KEY, "pred_steps", "ref_steps")]))
    ds = ray.data.from_arrow(blocks(table, 64))
    ds = score_steps(ds, tau=s["tau"], alpha=s["alpha"], order=s["order"], model_path=s["embedder"],
                     pool_size=s["replicas"], num_cpus=s["num_cpus"])
    write_parquet(ds, join(cfg.output_uri, "steps"), cfg.ray.task_num_cpus)
    log.info("CRYSTAL: scored %d responses", len(todo))
    return {"scored": len(todo)}


def main(argv=None) -> int:
    from howeval.report.run import write_report

    p = argparse.ArgumentParser(prog="python -m ray_jobs.crystal", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--tau", type=float)
    p.add_argument("--alpha", type=float)
    p.add_argument("--order", choices=["lis", "kendall"])
    a = p.parse_args(argv)
    cfg = load_run_config(a.run)
    crystal = {**(cfg.crystal.model_dump() if cfg.crystal else {}), **{k: v for k, v in (("tau", a.tau), ("alpha", a.alpha), ("order", a.order)) if v is not None}}
    cfg = SweepConfig.model_validate({**cfg.model_dump(), "crystal": crystal})
    settings(cfg)  # unknown keys fail before any work
    samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows)
    # the run now reports at these settings (rows at earlier settings stay stored, keyed by them)
    write_json(join(a.run, "run_config.json"), cfg.model_dump_json(indent=2))
    print(score_run(cfg, samples))
    write_report(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
