"""What the job entry points share: the dot-list override arguments every config-driven job takes."""
from __future__ import annotations


def add_override_args(p, example: str) -> None:
    """Add the dot-list override arguments every config-driven job takes: positional ``KEY.PATH=VALUE`` items
    and a repeatable ``--set KEY.PATH=VALUE`` (the same thing as a flag). ``example`` is shown in the help.
    The parsed lists land in ``overrides`` and ``set_items``; use ``parse_intermixed_args`` so flags and
    positional items can be mixed."""
    p.add_argument("--set", dest="set_items", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override one config value (same as a positional KEY.PATH=VALUE; repeatable)")
    p.add_argument("overrides", nargs="*", metavar="KEY.PATH=VALUE",
                   help=f"dot-list overrides, e.g. {example} (values read as YAML; ~KEY.PATH deletes a key)")


def generate_and_judge(cfg, samples: list[dict], models: list, *, judges, modes=("NT", "T"), max_attempts: int = 3,
                       only: list[str] | None = None, progress=None, verbose: bool = False, max_restarts: int = 1,
                       max_task_retries: int = -1):
    """Generate every pending row of ``models`` at once and judge each response batch as it lands: the
    PatternEval plug-in alone (``plugins.patterneval.PatternEval``) on the runtime.

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
        ``plugins.patterneval.RunOutcome`` (``failures`` maps a config name or ``"judge"`` to a reason).

    Raises:
        ValueError: ``max_attempts`` < 1.
    """
    from plugins.patterneval import PatternEval
    from plugins.registry import RunContext
    from runtime.run import run_benchmarks

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
