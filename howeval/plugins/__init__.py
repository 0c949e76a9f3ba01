"""Benchmarks as registered plug-ins (no Ray here: declarations and planning only).

- ``howeval.plugins.pipeline``: the declarations a plug-in hands the runtime (``Stage``, ``Pipeline``, ``Tally``,
  ``Plan``), checked when built.
- ``howeval.plugins.registry``: the ``Benchmark`` base class and the registry.
- one module per benchmark: ``patterneval`` (generate + judge, the sweep's core), ``adapt`` (AdaptMMBench
  episodes, beside generation), ``crystal`` (step scores, after generation), ``taskacc`` (Table 6 task accuracy:
  the task benchmarks' responses scored by each benchmark's own criterion, after generation).

The runtime (``howeval.runtime.run.run_benchmarks``) runs the plans; the jobs in ``howeval/ray_jobs/`` are entry points.
"""
# ruff: noqa: I001  (the registration lines come after the registry, in report order)
from howeval.plugins.registry import (Benchmark, RunContext, Summary, coverage_lines, enabled, get, register, registered,
                                      report_sections)

# the registration lines: one per benchmark (each module registers its plug-in when imported)
from howeval.plugins import patterneval  # noqa: E402,F401
from howeval.plugins import crystal  # noqa: E402,F401
from howeval.plugins import adapt  # noqa: E402,F401
from howeval.plugins import taskacc  # noqa: E402,F401


def write_report(cfg, **kwargs) -> dict:
    """``howeval.report.run.write_report`` with every registered plug-in's report part (``sections``);
    the same arguments otherwise. Returns the metrics dict."""
    from howeval.report.run import write_report as write

    return write(cfg, sections=report_sections(), **kwargs)


__all__ = ["Benchmark", "RunContext", "Summary", "coverage_lines", "enabled", "get", "register", "registered", "report_sections",
           "write_report"]
