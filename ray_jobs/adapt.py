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

from howeval.benchmarks.loaders import load_samples
from howeval.config import AdaptConfig, SweepConfig, load_run_config
from howeval.report.run import write_report
from ray_jobs.common import init_ray
from ray_jobs.stages import adapt_settings as settings, run_adapt  # noqa: F401  (settings re-exported)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m ray_jobs.adapt", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    a = p.parse_args(argv)
    cfg = load_run_config(a.run)
    cfg = SweepConfig.model_validate({**cfg.model_dump(), "adapt": cfg.adapt or AdaptConfig()})
    samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows)
    init_ray(cfg.ray, verbose=False)
    _, failures = run_adapt(cfg, samples)
    write_report(cfg)
    for name, reason in sorted(failures.items()):
        print(f"FAILED {name}: {reason}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
