"""What the job entry points share: the dot-list override arguments every config-driven job takes, the
builder jobs' command line, and the streamed generate -> judge call."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


def add_override_args(p, example: str) -> None:
    """Add the dot-list override arguments every config-driven job takes: positional ``KEY.PATH=VALUE`` items
    and a repeatable ``--set KEY.PATH=VALUE`` (the same thing as a flag). ``example`` is shown in the help.
    The parsed lists land in ``overrides`` and ``set_items``; use ``parse_intermixed_args`` so flags and
    positional items can be mixed."""
    p.add_argument("--set", dest="set_items", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override one config value (same as a positional KEY.PATH=VALUE; repeatable)")
    p.add_argument("overrides", nargs="*", metavar="KEY.PATH=VALUE",
                   help=f"dot-list overrides, e.g. {example} (values read as YAML; ~KEY.PATH deletes a key)")


def run_builder(argv, *, prog: str, description: str, cls: type, example: str,
                build: Callable, summary: Callable, failed: Callable) -> int:
    """The command line of a builder job (``build_refs``, ``build_keysteps``): ``--config`` (a YAML of model
    ``cls``), ``--output`` (replaces ``output_uri``), ``--limit N`` (the first N rows of each benchmark).

    Before Ray starts the config is checked (``howeval.config.preflight.builder_preflight``). ``build(cfg) -> result`` does the work;
    ``summary(cfg, result) -> str`` is the line printed after it; ``failed(result) -> str | None`` says why the
    run produced nothing (every item's call failed), or None.

    Returns:
        0; 2 with ``error: <reason>`` on stderr when the config, a path or a value is bad (nothing written by
        ``build`` before the error is removed); 3 (``EXIT_ALL_ROWS_FAILED``) when every item failed: the output
        is still written, with each item's reason.
    """
    from howeval.config import ConfigError, load_sweep_config, with_changes
    from howeval.config.preflight import builder_preflight, raise_problems
    from howeval.ray_jobs.outcome import EXIT_ALL_ROWS_FAILED, EXIT_USAGE

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--config", required=True, help=f"{prog.rsplit('.', 1)[-1]} YAML (see {example})")
    p.add_argument("--output", help="output URI replacing the config's output_uri")
    p.add_argument("--limit", type=int, help="use only the first N rows of each benchmark")
    a = p.parse_args(argv)
    try:
        cfg = load_sweep_config(a.config, cls=cls)
        if a.output:
            cfg = with_changes(cfg, "--output", output_uri=a.output)
        if a.limit:
            cfg = with_changes(cfg, "--limit", benchmarks=[with_changes(b, "--limit", limit=a.limit) for b in cfg.benchmarks])
        raise_problems(builder_preflight(cfg), a.config)
        result = build(cfg)
    except (ConfigError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(summary(cfg, result))
    why = failed(result)
    if why:
        print(f"error: run failed (exit {EXIT_ALL_ROWS_FAILED}): {why}", file=sys.stderr)
        return EXIT_ALL_ROWS_FAILED
    return 0


def generate_and_judge(cfg, samples: list[dict], models: list, *, judges, modes=("NT", "T"), max_attempts: int = 3,
                       only: list[str] | None = None, progress=None, verbose: bool = False, max_restarts: int = 1,
                       max_task_retries: int = -1):
    """Generate every pending row of ``models`` at once and judge each response batch as it lands: the
    PatternEval plug-in alone (``howeval.plugins.patterneval.PatternEval``) on the runtime.

    Args:
        cfg: a job config with ``output_uri`` (responses under ``responses/<config>/``, judgments under
            ``judgments/<config>/``).
        samples: benchmark rows (``SAMPLE_SCHEMA`` columns with ``image_paths``; images read by the actors).
        models: the configs to generate with (one pipeline each); ``[]`` = judge only.
        judges: the judges block; None = generate only.
        modes, only: modes to run; pattern-judge names to run (default all).
        max_attempts: attempts per row whose engine call failed (>= 1).
        progress: the live block (a silent one when None).

    Returns:
        ``howeval.plugins.patterneval.RunOutcome`` (``failures`` maps a config name or ``"judge"`` to a reason).

    Raises:
        ValueError: ``max_attempts`` < 1.
    """
    from howeval.plugins.patterneval import PatternEval
    from howeval.plugins.registry import RunContext
    from howeval.runtime.run import run_benchmarks

    ctx = RunContext(cfg, samples, verbose=verbose, max_attempts=max_attempts)
    bench = PatternEval(models=models, judges=judges, modes=modes, only=only)
    return run_benchmarks(ctx, [bench], progress, max_restarts=max_restarts,
                          max_task_retries=max_task_retries)[bench.name].result


def generate(cfg, model, samples: list[dict], modes=("NT", "T"), max_attempts: int = 3, verbose: bool = False) -> dict:
    """Generate one config's pending rows without judging (benchmarks, writers).

    Returns counts: ``{"config", "new", "seconds"}`` and ``"failed"`` with the reason when the config failed.
    """
    outcome = generate_and_judge(cfg, samples, [model], judges=None, modes=modes, max_attempts=max_attempts,
                                 verbose=verbose)
    res = {"config": model.name, "new": outcome.generated.get(model.name, 0), "seconds": outcome.seconds}
    if outcome.failures:
        res["failed"] = next(iter(outcome.failures.values()))
    return res
