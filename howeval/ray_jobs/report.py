"""Job: metrics and every report file of a run from its stored records (no Ray needed).

    python -m howeval.ray_jobs.report --run runs/demo [--judge NAME]

Writes ``metrics.json``, ``report.md``, ``index.html``, ``tables/``, ``plots/`` and ``samples.{jsonl,parquet}``
under the run (``howeval.plugins.write_report``: the core report and every benchmark plug-in's part; the other jobs
call it too).
"""
from __future__ import annotations

import argparse
import sys

from howeval.config import load_run_config
from howeval.plugins import write_report
from howeval.report.run import joined_rows, judge_agreement  # noqa: F401  (re-exported)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.report", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run")
    p.add_argument("--judge", help="pattern judge name whose labels enter the metrics (default: the primary)")
    args = p.parse_args(argv)
    try:
        cfg = load_run_config(args.run)
        write_report(cfg, judge=args.judge, on_file=lambda uri: print(f"wrote {uri}", flush=True))
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
