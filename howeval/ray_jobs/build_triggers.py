"""Job: a sweep's judgments -> the benchmark builder's trigger input (issue 41; PatternEval §3 construction).

    python -m howeval.ray_jobs.build_triggers --run runs/pool-sweep --output runs/pool-triggers [--judge rules@1]
    python -m howeval.benchmarks.construction --manifest ... --triggers runs/pool-triggers/triggers.json \\
        --variation-min 0.2 --out built/

PatternEval's construction samples "pattern-oriented": items whose earlier rollouts showed a response-pattern
failure come first, and "categories with meaningful response variation are preferentially retained"
(:mod:`howeval.benchmarks.construction`, rules 1 and 4). This job reads a finished sweep's ``judgments/``
(every config and mode that answered the candidate pool) and writes, under ``--output``:

- ``triggers.json``: ``{uid: Trigger rate}`` over the labelled rollouts of each item (the builder's ``--triggers``);
- ``triggers_detail.json``: per uid ``{n, triggered, trigger, n_scored, correct, varies}`` and the counts of
  skipped rollouts by reason (judge error, no labels: never counted as untriggered);
- ``provenance.json``: git commit and dirty flag, packages, the command, the run and judge read, counts (items,
  items with a failure, items whose rollouts vary, skipped rollouts, Parquet files quarantined as corrupt).

No Ray: one read of the run's Parquet files. Exit status 0; 2 when the run has no judgments, several judges and no
``--judge``, or the judge has none (the message lists the judges found).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from howeval.benchmarks.construction import triggers_from_judgments
    from howeval.records import JUDGMENT_SCHEMA
    from howeval.report.provenance import git_state, package_versions
    from howeval.store import StoreReadError, join, read_table

    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.build_triggers", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a finished sweep (its judgments/ are read)")
    p.add_argument("--output", required=True, help="folder for triggers.json, triggers_detail.json, provenance.json")
    p.add_argument("--judge", default=None, help="pattern judge id whose labels count (e.g. rules@1); default: the "
                   "run's only one")
    a = p.parse_args(argv)
    started = _dt.datetime.now(_dt.timezone.utc)
    try:
        table, bad = read_table(join(a.run, "judgments"), JUDGMENT_SCHEMA)
        rows = table.to_pylist()
        if not rows:
            raise ValueError(f"no judgments under {join(a.run, 'judgments')}")
        res = triggers_from_judgments(rows, a.judge)
    except (ValueError, FileNotFoundError, OSError, StoreReadError) as e:
        print(f"error: build_triggers: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    out = Path(a.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "triggers.json").write_text(json.dumps(res["rates"], indent=1, sort_keys=True) + "\n", encoding="utf-8")
    (out / "triggers_detail.json").write_text(json.dumps({"judge": res["judge"], "skipped": res["skipped"],
                                                          "items": res["detail"]}, indent=1) + "\n", encoding="utf-8")
    counts = {"judgments": len(rows), "items": len(res["rates"]),
              "with_failures": sum(r > 0 for r in res["rates"].values()),
              "varying": sum(d["varies"] for d in res["detail"].values()), "skipped": res["skipped"],
              "quarantined_files": list(bad)}
    prov = {"job": "build_triggers", "git": git_state(), "packages": package_versions(), "command": " ".join(sys.argv),
            "run": a.run, "judge": res["judge"], "counts": counts, "started": started.isoformat(timespec="seconds"),
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    (out / "provenance.json").write_text(json.dumps(prov, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"judge": res["judge"], **counts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
