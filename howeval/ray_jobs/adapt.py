"""Job: AdaptMMBench mode selection for every model of a sweep (SPEC section 4).

    python -m howeval.ray_jobs.adapt --run runs/demo

Items are the sweep's samples that carry evidence boxes. Each model answers every item in the modes
of ``adapt.modes`` (text, adaptive with visual tools executed by the system, oracle-visual with the
gold crops), through a pool of ``AdaptStage`` actors. Rows go to ``<run>/adapt/<config>/``, keyed by
(sample_id, config, mode): rerunning computes only what is missing. Summary per config: accuracy by
domain and mode, MCC of tool calling against Tool-Required labels, tokens / steps / tool calls.
"""
from __future__ import annotations

import argparse
import sys

from howeval.benchmarks.loaders import load_samples
from howeval.config import AdaptConfig, SweepConfig, load_run_config, with_changes
from howeval.plugins import RunContext, get, write_report
from howeval.plugins.adapt import adapt_settings as settings  # noqa: F401  (settings re-exported)
from howeval.runtime.cluster import init_ray
from howeval.runtime.progress import Progress
from howeval.runtime.run import run_benchmarks


def run_adapt(cfg: SweepConfig, samples: list[dict], verbose: bool = False, progress: Progress | None = None) -> dict:
    """Run every model on the items with evidence boxes, all configs at once; returns ``{config: summary}``.
    Prints a progress line per config x mode and a summary line per config; a config whose engine fails
    is reported on stderr and left out (its rows stay pending)."""
    if not any(s.get("evidence_boxes") and s.get("images") for s in samples):
        return {}
    init_ray(cfg.ray, verbose=verbose)
    progress = progress or Progress()
    summaries, failures = run_benchmarks(RunContext(cfg, samples, verbose=verbose), [get("adapt")], progress)["adapt"].result
    for name, reason in sorted(failures.items()):
        print(f"FAILED {name}: {reason}", file=sys.stderr)
    return {k: v for k, v in summaries.items() if k not in failures}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.adapt", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run (its run_config.json names the configs)")
    a = p.parse_args(argv)
    cfg = load_run_config(a.run)
    cfg = with_changes(cfg, "adapt", adapt=cfg.adapt or AdaptConfig())
    samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)
    progress = Progress()
    summaries = run_adapt(cfg, samples, progress=progress)
    progress.section("report")
    progress.tick(force=True)
    write_report(cfg, on_file=progress.wrote)
    has_items = any(s.get("evidence_boxes") and s.get("images") for s in samples)
    return 1 if has_items and any(m.name not in summaries for m in cfg.models) else 0


if __name__ == "__main__":
    sys.exit(main())
