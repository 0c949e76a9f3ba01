"""Job: (re-)judge the responses of a run with the configured judges, without regenerating anything.

    python -m howeval.ray_jobs.judge --run runs/demo [--judges configs/judges/llm.yaml] [--only NAME ...]

Exit codes (``howeval.ray_jobs.outcome``): 0 judged (or nothing left to judge); 1 the judge pool failed; 2 bad
input; 3 every call of a selected judge failed (a wrong key, a wrong URL): the first error is the last
line on stderr, and ``{"judged": n, "judge_errors": n}`` says how many of this call's rows failed.

Judgments are cached by (response hash, judge id = name@version): a judgment already written without
error is never paid for again; rows whose judgment failed (``judge_error``) are retried. The verifier's
verdict is reused across judges for the same response hash.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

import yaml

from howeval.benchmarks.loaders import load_samples
from howeval.config import (
    ConfigError,
    JudgesConfig,
    SweepConfig,
    load_run_config,
    require_ready,
    validate,
    with_changes,
)
from howeval.judges.pipeline import judge_id, merge_judges
from howeval.plugins import write_report
from howeval.plugins.patterneval import plan_judging  # noqa: F401  (re-exported)
from howeval.ray_jobs.common import generate_and_judge
from howeval.ray_jobs.outcome import EXIT_OK, EXIT_USAGE, exit_code, read_unmeasured
from howeval.runtime.cluster import init_ray
from howeval.runtime.progress import Progress
from howeval.store import join, write_json


def judge_run(cfg: SweepConfig, samples: list[dict] | None = None, only: list[str] | None = None,
              progress: Progress | None = None, verbose: bool = False) -> dict:
    """Judge every response under ``cfg.output_uri`` that lacks a judgment; write to judgments/<config>/.

    Returns ``{"judged": judgment rows written, "judge_errors": those with a judge_error}`` plus
    ``"failed"`` with the reason if the judge pool failed.
    """
    sel = [j for j in cfg.judges.pattern if only is None or j.name in only]
    if samples is None and any(j.kind == "llm" and j.with_image for j in sel):
        samples, _ = load_samples(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)
    init_ray(cfg.ray, verbose=verbose)
    outcome = generate_and_judge(cfg, samples or [], [], judges=cfg.judges, only=only, progress=progress,
                                 verbose=verbose)
    return {"judged": outcome.judged, "judge_errors": outcome.judge_errors,
            **({"failed": outcome.failures["judge"]} if outcome.failures else {})}


def main(argv=None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.judge", description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True, help="output URI of a sweep run")
    p.add_argument("--judges", help="YAML with a `judges:` block replacing the run's judges")
    p.add_argument("--only", nargs="+", help="judge names to run (default: all)")
    p.add_argument("--no-report", action="store_true", help="skip rewriting metrics.json / report.md")
    args = p.parse_args(argv)
    try:
        cfg = load_run_config(args.run)
        if args.judges:
            with open(args.judges) as f:
                doc = yaml.safe_load(f) or {}
            new = validate(JudgesConfig, doc.get("judges", doc), args.judges)
            cfg = with_changes(cfg, args.judges, judges=merge_judges(cfg.judges, new))
        require_ready(cfg.judges, args.judges or f"{args.run}/run_config.json", only=args.only)  # keys, URLs: before Ray
        if args.judges:
            write_json(join(args.run, "run_config.json"), cfg.model_dump_json(indent=2))
        progress = Progress()
        res = judge_run(cfg, only=args.only, progress=progress)
        if not args.no_report:
            progress.section("report")
            progress.tick(force=True)
            write_report(cfg, on_file=progress.wrote)
    except (ConfigError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(res))
    ids = [judge_id(j) for j in cfg.judges.pattern if args.only is None or j.name in args.only]
    unmeasured = {k: v for k, v in read_unmeasured(args.run, judges=ids).items() if k.startswith("judge ")}
    failures = {"judge": res["failed"]} if "failed" in res else {}
    code = exit_code([], unmeasured, failures)
    if code != EXIT_OK:
        first = [f"{k}: {v}" for k, v in {**unmeasured, **failures}.items()]
        print(f"error: judging failed (exit {code}): {first[0]}" + (f" (+{len(first) - 1} more)" if len(first) > 1 else ""),
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
