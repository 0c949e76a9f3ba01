"""Job: CRYSTAL step metrics for the responses of a run (SPEC section 3).

    python -m howeval.ray_jobs.crystal --run runs/demo [--tau 0.35] [--alpha 0.5] [--order lis|kendall]

Every response whose sample has reference steps is segmented (``howeval.parsing.steps.response_steps``: the
CRYSTAL JSON when present, else the reasoning channel, else the answer), embedded by a pool of
embedder actors and matched. Rows land in ``<run>/steps/*.parquet``, keyed by
(sample_id, config, mode, response_hash, embedder, tau, alpha, order): rerunning scores nothing twice.
"""
from __future__ import annotations

import argparse
import sys

from howeval.benchmarks.crystal import crystal_settings
from howeval.benchmarks.loaders import load_samples
from howeval.config import CrystalConfig, SweepConfig, load_run_config, with_changes
from howeval.plugins import RunContext, get, write_report
from howeval.runtime.cluster import init_ray
from howeval.runtime.progress import Progress
from howeval.runtime.run import run_benchmarks
from howeval.store import join, write_json


def settings(cfg: SweepConfig) -> CrystalConfig:
    """The sweep's ``crystal:`` block, or the defaults (``howeval.benchmarks.crystal.crystal_settings``)."""
    return crystal_settings(cfg.crystal)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.crystal", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run")
    p.add_argument("--tau", type=float, help="match threshold τ (default: the run's crystal.tau, else 0.35)")
    p.add_argument("--alpha", type=float, help="weight α of the order score in Ordered Match F1 (default: the run's)")
    p.add_argument("--order", choices=["lis", "kendall"], help="order score: LIS ratio or Kendall's tau (default: the run's)")
    a = p.parse_args(argv)
    cfg = load_run_config(a.run)
    flags = {k: v for k, v in (("tau", a.tau), ("alpha", a.alpha), ("order", a.order)) if v is not None}
    cfg = with_changes(cfg, "crystal", crystal=with_changes(cfg.crystal or CrystalConfig(), "--tau/--alpha/--order", **flags))
    settings(cfg)  # unknown keys fail before any work
    samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)
    # the run now reports at these settings (rows at earlier settings stay stored, keyed by them)
    write_json(join(a.run, "run_config.json"), cfg.model_dump_json(indent=2))
    init_ray(cfg.ray, verbose=False)
    progress = Progress()
    res = run_benchmarks(RunContext(cfg, samples), [get("crystal")], progress)["crystal"].result
    progress.section("report")
    progress.tick(force=True)
    write_report(cfg, on_file=progress.wrote)
    return 1 if res.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
