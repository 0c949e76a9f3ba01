"""Job: AdaptMMBench mode selection for every model of a sweep (SPEC section 4).

    python -m ray_jobs.adapt --run runs/demo

Items are the sweep's samples that carry evidence boxes. Each model answers every item in the modes
of ``adapt.modes`` (text, adaptive with visual tools executed by the system, oracle-visual with the
gold crops), through a pool of ``AdaptStage`` actors. Rows go to ``<run>/adapt/<config>/``, keyed by
(sample_id, config, mode): rerunning computes only what is missing. Summary per config: accuracy by
domain and mode, MCC of tool calling against Tool-Required labels, tokens / steps / tool calls.
"""
from __future__ import annotations

import argparse
import sys

import pyarrow as pa

from howeval.benchmarks.adapt.metrics import summarize_rows
from howeval.benchmarks.loaders import load_samples
from howeval.config import AdaptConfig, SweepConfig, load_run_config
from howeval.records import ADAPT_SCHEMA, SAMPLE_SCHEMA, conform
from howeval.store import existing_keys, join, read_table
from ray_jobs.common import blocks, init_ray, log, write_parquet

WORK_SCHEMA = SAMPLE_SCHEMA.append(pa.field("config", pa.string())).append(pa.field("adapt_mode", pa.string()))
def settings(cfg: SweepConfig, engine: str) -> dict:
    """The sweep's ``adapt:`` block (validated at load; defaults when unset) with tool_format filled in for
    ``engine`` (plain text for ``hf``/``replay``)."""
    return (cfg.adapt or AdaptConfig()).for_engine(engine).model_dump()


def run_adapt(cfg: SweepConfig, samples: list[dict]) -> dict:
    """Run every model on the items with evidence boxes; returns ``{config: summary}``."""
    import ray
    from ray.data import ActorPoolStrategy

    from actors.adapt import AdaptStage

    items = [s for s in samples if s.get("evidence_boxes") and s.get("images")]
    if not items:
        return {}
    init_ray(cfg.ray)
    summaries = {}
    for model in cfg.models:
        s = settings(cfg, model.engine)
        uri = join(cfg.output_uri, "adapt", model.name)
        done = existing_keys(read_table(uri, ADAPT_SCHEMA)[0], ("sample_id", "config", "mode"))
        todo = [{**x, "config": model.name, "adapt_mode": m} for m in s["modes"] for x in items
                if (x["sample_id"], model.name, m) not in done]
        if todo:
            r = model.resources
            ds = ray.data.from_arrow(blocks(conform(todo, WORK_SCHEMA), r.batch_size))
            ds = ds.map_batches(AdaptStage, fn_constructor_kwargs={"model_config": model.model_dump(), "settings": s,
                                                                   "schema": ADAPT_SCHEMA},
                                batch_size=r.batch_size, batch_format="pyarrow", compute=ActorPoolStrategy(size=r.replicas),
                                num_cpus=r.num_cpus, num_gpus=r.num_gpus or None)
            write_parquet(ds, uri, cfg.ray.task_num_cpus)
            log.info("AdaptMMBench: %s ran %d episodes", model.name, len(todo))
        summaries[model.name] = summarize_rows(read_table(uri, ADAPT_SCHEMA)[0].to_pylist())
    return summaries


def main(argv=None) -> int:
    from howeval.report.run import write_report

    p = argparse.ArgumentParser(prog="python -m ray_jobs.adapt", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    a = p.parse_args(argv)
    cfg = load_run_config(a.run)
    cfg = SweepConfig.model_validate({**cfg.model_dump(), "adapt": cfg.adapt or AdaptConfig()})
    samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows)
    run_adapt(cfg, samples)
    write_report(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
