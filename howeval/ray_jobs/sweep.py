"""Job: the PatternEval sweep — every config x mode x sample generated at once, judged as it lands, reported.

    python -m howeval.ray_jobs.sweep --config configs/demo.yaml [--data FILE] [--output URI] [--limit N]
                             [--max-attempts N] [--verbose] [key.path=value ...] [--set key.path=value]

Any config value can be overridden on the command line, OmegaConf / Hydra style:
``models.0.sampling.temperature=0.7 models.0.options.attn_implementation=sdpa ~models.0.options.device_map``
(positional or ``--set``; values read as YAML). They are validated with the file (a misspelt key gets the
closest accepted one), recorded in ``run_config.json`` (``overrides``) and compared by the stale-resume check.

Flow (one direction, streamed): benchmark rows -> one PolicyStage actor pool per config, all configs at
once -> responses/<config>/*.parquet, and each finished batch straight on to a JudgeStage pool ->
judgments/<config>/*.parquet [beside them, AdaptMMBench episodes -> adapt/ when ``adapt:`` is set]
[then CRYSTAL steps/ when ``crystal:`` is set] -> metrics.json, report.md, index.html. Each benchmark is a
plug-in (``plugins``) run by ``howeval.runtime.run``. The driver prints a live line per config x mode
and for the judge. A config whose engine fails to start or dies is recorded in ``failures.json`` (its
rows stay pending), the others finish, and the job exits non-zero naming it. Exit codes
(``howeval.ray_jobs.outcome``): 0 measured; 1 a part failed (the rest measured); 2 bad input; 3 every row of a
config x mode (or every call of a judge) failed: not measured; 4 a config never started. The reason
is the last line on stderr. Rerunning the same command skips
every key ``(sample_id, config, mode)`` already written and retries rows whose engine call failed, up to
``--max-attempts`` attempts per row (resume after a kill).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from howeval.benchmarks.loaders import BadRowError, bad_rows_summary, load_benchmarks
from howeval.config import (
    BenchmarkConfig,
    BenchmarkContent,
    ConfigError,
    SweepConfig,
    load_sweep_config,
    require_ready,
    with_changes,
)
from howeval.config.preflight import check_cluster_fit, raise_problems
from howeval.plugins import RunContext, coverage_lines, enabled, write_report
from howeval.plugins.patterneval import MAX_ATTEMPTS
from howeval.ray_jobs.common import add_override_args
from howeval.ray_jobs.outcome import EXIT_OK, EXIT_USAGE, exit_code, read_unmeasured, written_configs
from howeval.report.provenance import finish_provenance, record_provenance
from howeval.runtime.cluster import cluster_node_shapes, cluster_summary, init_ray
from howeval.runtime.progress import Progress
from howeval.runtime.run import run_benchmarks
from howeval.store import join, write_json
from howeval.timing import mark


def run_sweep(cfg: SweepConfig, max_attempts: int = MAX_ATTEMPTS, verbose: bool = False,
              progress: Progress | None = None) -> tuple[dict, dict[str, str]]:
    """Every enabled benchmark plug-in (``howeval.plugins.enabled``): generation and judging (all configs at once,
    judged as they land) with AdaptMMBench beside them when asked, then CRYSTAL when asked; then the report.

    Returns ``(metrics, failures)``: the metrics dict also written to ``metrics.json``, and
    ``{config or "judge": one-line reason}`` for what failed (also written to ``failures.json``).
    """
    loaded = load_benchmarks(cfg.benchmarks, cfg.skip_bad_rows, read_images=False)  # images: read by the actors
    samples, bad = [s for r in loaded for s in r.samples], [b for r in loaded for b in r.bad_rows]
    write_json(join(cfg.output_uri, "bad_rows.json"), json.dumps(bad, indent=2))  # also when no row is left
    if not samples:
        raise ValueError(no_samples_message(bad, cfg.output_uri))
    cfg = with_contents(cfg, [r.content for r in loaded])  # what the resume guard compares, in run_config.json
    cfg = with_generation_settings(cfg)  # what each engine applies: model defaults + overrides, in run_config.json
    write_json(join(cfg.output_uri, "run_config.json"), cfg.model_dump_json(indent=2))
    progress = progress or Progress()
    progress.note(f"{len(samples)} samples x {len(cfg.models)} config(s) -> {cfg.output_uri}; starting Ray"
                  + (f" ({len(bad)} bad rows skipped: bad_rows.json)" if bad else ""))
    ctx = RunContext(cfg, samples, verbose=verbose, max_attempts=max_attempts)
    benchmarks = enabled(cfg)
    for line in coverage_lines(ctx, benchmarks):  # what each benchmark scores of these rows, and why not the rest
        progress.note(line)
    init_ray(cfg.ray, verbose=verbose)
    # a config no node can ever hold would leave its actors pending (a RayJob until its deadline): refuse now
    raise_problems(check_cluster_fit(cfg, cluster_node_shapes()), "the cluster's shape")
    record_provenance(cfg, cluster=cluster_summary())  # <run>/provenance.json: code, packages, hardware, arguments
    failures: dict[str, str] = {}
    for summary in run_benchmarks(ctx, benchmarks, progress).values():
        failures.update(summary.failures)
    write_json(join(cfg.output_uri, "failures.json"), json.dumps(failures, indent=2, sort_keys=True))
    finish_provenance(cfg)  # wall time to the report, in provenance.json and the report
    progress.section("report: metrics, tables, plots, samples")
    progress.tick(force=True)
    mark("report_start")
    metrics = write_report(cfg, bad_rows=bad, on_file=progress.wrote)
    mark("report_end")
    return metrics, failures


def no_samples_message(bad: list[dict], output_uri: str) -> str:
    """Why a sweep has nothing to run: the files are empty, or every row was skipped (reasons summarised,
    the full list in ``bad_rows.json``)."""
    if not bad:
        return "no samples to run: the benchmark files are empty (or --limit/limit is 0)"
    return (f"no samples to run: all {len(bad)} benchmark row(s) were bad and skipped (--skip-bad-rows):\n"
            f"{bad_rows_summary(bad)}\nEvery row with its reason: {join(output_uri, 'bad_rows.json')}")


def with_contents(cfg: SweepConfig, contents: list[dict]) -> SweepConfig:
    """``cfg`` with each benchmark's ``content`` set (``{"rows", "sha256"}`` of the rows it read, in order:
    ``howeval.benchmarks.loaders.LoadResult.content``), the identity the stale-resume guard compares."""
    benchmarks = [b.model_copy(update={"content": BenchmarkContent(**c)}) for b, c in zip(cfg.benchmarks, contents)]
    return cfg.model_copy(update={"benchmarks": benchmarks})


def with_generation_settings(cfg: SweepConfig) -> SweepConfig:
    """``cfg`` with ``generation_settings`` filled in per model config
    (:func:`howeval.engines.generation.generation_settings`: overrides, the model's own defaults, result)."""
    from howeval.engines.generation import generation_settings

    return cfg.model_copy(update={"generation_settings": {m.name: generation_settings(m) for m in cfg.models}})


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def summary_lines(metrics: dict, output_uri: str, failures: dict[str, str],
                  unmeasured: dict[str, str] | None = None) -> list[str]:
    """The closing summary: Acc (with the paper's all-N form) and Trigger in % (one decimal) with their
    counts per config x mode, the rows with a reasoning channel and those cut by the length limit, a
    warning per config whose T rows have no reasoning channel, the report paths, each failed config
    with its reason, and each figure not measured (``unmeasured``: :func:`howeval.ray_jobs.outcome.read_unmeasured`)
    in one line with its first error. A config x mode whose every row failed shows ``not measured``, no
    figure."""
    out = []
    unmeasured = unmeasured or {}
    width = max((len(n) for n in metrics.get("configs", {})), default=0)
    for name, c in metrics.get("configs", {}).items():
        for m in ("NT", "T"):
            if m not in c:
                continue
            x = c[m]
            if x["n"] and x.get("n_errors", 0) == x["n"]:
                out.append(f"  {name:<{width}}  {m:<2}  not measured: all {x['n']} rows failed (engine errors)")
                continue
            extra = f", {x['n_errors']} engine errors" if x.get("n_errors") else ""
            trig = (f"Trigger {_pct(x['trigger']):>6} ({x['n_labeled']} labelled)" if x.get("n_labeled")
                    else f"Trigger not measured ({x.get('n_judge_errors', 0)} judge errors)")
            out.append(f"  {name:<{width}}  {m:<2}  Acc {_pct(x['acc']):>6} ({x['n_scored']} scored, "
                       f"{x.get('n_unresolved', 0)} unresolved{extra}; all-N {_pct(x.get('acc_all_n'))})  "
                       f"{trig}  n {x['n']}  "
                       f"reasoning {x.get('n_reasoning', 0)}  length-cut {x.get('n_length_cut', 0)}")
    for c in metrics.get("configs", {}).values():
        out += [f"warning: {w}" for w in c.get("warnings") or [] if "reasoning channel" in w]
    out.append(f"report: {join(output_uri, 'report.md')}")
    out.append(f"html:   {join(output_uri, 'index.html')}")
    if failures:
        out.append(f"FAILED ({len(failures)}), rows left pending, reasons in {join(output_uri, 'failures.json')}:")
        out += [f"  {k}: {v}" for k, v in sorted(failures.items())]
    out += [f"NOT MEASURED {k}: {v}" for k, v in unmeasured.items()]
    return out


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.sweep", description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="sweep YAML (see configs/)")
    p.add_argument("--data", action="append", help="benchmark manifest(s) replacing the config's (repeatable)")
    p.add_argument("--output", help="output URI replacing the config's output_uri")
    p.add_argument("--limit", type=int, help="use only the first N rows of each benchmark")
    p.add_argument("--max-tokens", type=int, help="token budget for every model in both modes (replaces sampling.max_tokens and per-mode max_tokens)")
    p.add_argument("--skip-bad-rows", action="store_true", help="record bad benchmark rows in the report and go on")
    p.add_argument("--max-attempts", type=int, default=MAX_ATTEMPTS,
                   help=f"attempts per row whose engine call failed; a rerun retries such rows (default {MAX_ATTEMPTS})")
    p.add_argument("--verbose", action="store_true", help="show Ray's, vLLM's and transformers' own output")
    add_override_args(p, "models.0.sampling.temperature=0.7")
    args = p.parse_intermixed_args(argv)
    args.dotlist = [*args.overrides, *args.set_items]
    return args


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    """The sweep config with command-line overrides applied: dot-list items first (validated with the file),
    then ``--data``, ``--limit``, ``--output``, ``--max-tokens``, ``--skip-bad-rows`` (``model_copy(update=...)``,
    each change checked: ``howeval.config.with_changes``); what the command line changed is recorded in the
    config's ``overrides`` (written to run_config.json)."""
    dotlist = list(getattr(args, "dotlist", []) or [])
    cfg = load_sweep_config(args.config, dotlist=dotlist)
    changes: dict = {}
    flags: list[str] = []
    benchmarks = cfg.benchmarks
    if args.data:
        benchmarks = [BenchmarkConfig(path=str(Path(d).resolve()) if "://" not in d else d) for d in args.data]
        flags += [f"--data={d}" for d in args.data]
    if args.limit:
        benchmarks = [with_changes(b, "--limit", limit=args.limit) for b in benchmarks]
        flags.append(f"--limit={args.limit}")
    if args.data or args.limit:
        changes["benchmarks"] = benchmarks
    if args.output:
        changes["output_uri"] = args.output
        flags.append(f"--output={args.output}")
    if args.max_tokens:
        changes["models"] = [with_changes(m, "--max-tokens", sampling=with_changes(m.sampling, "--max-tokens", max_tokens=args.max_tokens),
                                          modes={k: mc.model_copy(update={"max_tokens": None}) for k, mc in m.modes.items()})
                             for m in cfg.models]
        flags.append(f"--max-tokens={args.max_tokens}")
    if args.skip_bad_rows:
        changes["skip_bad_rows"] = True
        flags.append("--skip-bad-rows")
    if dotlist or flags:
        changes["overrides"] = [*dotlist, *flags]
    return with_changes(cfg, "command line", **changes) if changes else cfg


def main(argv=None) -> int:
    mark("main")
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(message)s")
    if args.max_attempts < 1:
        print(f"error: --max-attempts must be >= 1, got {args.max_attempts}", file=sys.stderr)
        return 2
    try:
        cfg = config_from_args(args)
        cfg = require_ready(cfg, args.config)  # paths, URLs, keys, stale resume: before Ray starts
        metrics, failures = run_sweep(cfg, max_attempts=args.max_attempts, verbose=args.verbose)
    except (ConfigError, BadRowError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    names = [m.name for m in cfg.models]
    unmeasured = read_unmeasured(cfg.output_uri, configs=names)
    written = written_configs(cfg.output_uri)
    not_started = [k for k in failures if k in names and k not in written]
    print("\n".join(summary_lines(metrics, cfg.output_uri, failures, unmeasured)))
    code = exit_code(not_started, unmeasured, failures)
    if code != EXIT_OK:  # the reason in one line, last, on stderr (what a CI log shows)
        first = ([f"config {k} never started: {failures[k]}" for k in not_started]
                 + [f"{k}: {v}" for k, v in unmeasured.items()] + [f"{k}: {v}" for k, v in sorted(failures.items())])
        print(f"error: run failed (exit {code}): {first[0]}"
              + (f" (+{len(first) - 1} more above)" if len(first) > 1 else ""), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
