"""Run benchmark plug-ins: their plans phase by phase, every pipeline of a phase at once on Ray Data.

This module knows no benchmark: it asks each plug-in (``howeval.plugins.registry.Benchmark``) for its
:class:`howeval.plugins.pipeline.Plan`, opens one progress block per phase with every plan's lines, runs all the
phase's pipelines together (``howeval.runtime.execute.run_pipelines``), moves each line by the tallies its stages
declare (rows per group, errors, tokens; a line fed by a stage shrinks by that stage's errors and, when
its pipeline fails, by the rows it will never get), then hands each plug-in its share of the counts
(:meth:`Benchmark.finish`) and prints the lines it returns under the block.
"""
from __future__ import annotations

import logging
import time

from howeval.plugins.pipeline import Plan, Tallies, Tally
from howeval.plugins.registry import Benchmark, RunContext, Summary
from howeval.runtime.execute import run_pipelines
from howeval.runtime.progress import Progress

log = logging.getLogger("howeval")


def run_benchmarks(ctx: RunContext, benchmarks: list[Benchmark], progress: Progress | None = None, *,
                   max_restarts: int = 1, max_task_retries: int = -1) -> dict[str, Summary]:
    """Run ``benchmarks`` for the run ``ctx``: phase 0's plans together, then phase 1's, and so on.

    Args:
        ctx: the run (config, samples, verbosity, attempts).
        benchmarks: the plug-ins to run (``howeval.plugins.enabled(cfg)`` for a sweep); names unique.
        progress: the live block (a silent one when None).
        max_restarts, max_task_retries: per stage actor (``howeval.runtime.execute.run_pipelines``).

    Returns:
        ``{benchmark name: Summary}``; the summaries' lines have been printed with ``progress.note``.

    Raises:
        ValueError: two plug-ins share a name, two plans of one phase share a pipeline name or a progress
            line, or a plug-in's plan is refused (its message).
    """
    names = [b.name for b in benchmarks]
    if len(set(names)) != len(names):
        raise ValueError(f"benchmark plug-ins must have unique names, got {names}")
    progress = progress or Progress.silent()
    out: dict[str, Summary] = {}
    for phase in sorted({b.phase for b in benchmarks}):
        group = [b for b in benchmarks if b.phase == phase]
        plans = {b.name: b.plan(ctx) for b in group}
        tallies = run_phase(plans, progress, verbose=ctx.verbose, max_restarts=max_restarts,
                            max_task_retries=max_task_retries)
        for b in group:
            plan = plans[b.name]
            summary = b.finish(ctx, plan, tallies.only(p.name for p in plan.pipelines))
            for line in summary.lines:
                progress.note(line)
            out[b.name] = summary
    return out


def _check_unique(plans: dict[str, Plan]) -> None:
    seen_p: dict[str, str] = {}
    seen_l: dict[str, str] = {}
    for name, plan in plans.items():
        for p in plan.pipelines:
            if p.name in seen_p:
                raise ValueError(f"pipeline {p.name!r} is planned by both {seen_p[p.name]!r} and {name!r}: name it "
                                 f"after its benchmark")
            seen_p[p.name] = name
        for label in plan.lines:
            if label in seen_l:
                raise ValueError(f"progress line {label!r} is declared by both {seen_l[label]!r} and {name!r}")
            seen_l[label] = name


class _PhaseTally:
    """The driver's side of a phase: moves the progress lines by each stage's declared :class:`Tally` and
    keeps the phase's :class:`Tallies` (``howeval.runtime.execute.run_pipelines``' ``on_counts`` / ``on_failure``)."""

    def __init__(self, pipelines: list, progress: Progress):
        self.progress = progress
        self.tallies = Tallies()
        self.tally_of: dict[tuple[str, str], Tally] = {(p.name, s.name): s.tally for p in pipelines for s in p.stages
                                                        if s.tally is not None}
        self.head = {p.name: p.stages[0].tally for p in pipelines}

    def _owned(self, t: Tally) -> list[str]:
        return [k for k in self.progress.lines if t.owns(k)]

    def counts(self, pipeline: str, stage: str, groups: dict) -> None:
        """One output batch of ``(pipeline, stage)``; ``{}`` = an actor of that stage is built (ready)."""
        t = self.tally_of.get((pipeline, stage))
        if t is None:
            return
        if not groups:
            for label in self._owned(t):
                self.progress.ready(label)
            return
        self.tallies.add(pipeline, stage, groups)
        lines = self.progress.lines
        for group, s in groups.items():
            if t.line(group) in lines:
                self.progress.update(t.line(group), s["rows"] // t.per_item, s["errors"] // t.per_item, s["tokens"])
            if t.feeds in lines and s["errors"]:
                self.progress.shrink(t.feeds, s["errors"])

    def failure(self, name: str, reason: str) -> None:
        """Pipeline ``name`` failed: its head stage's lines fail, the line they feed shrinks by what is left."""
        self.tallies.failures[name] = reason
        head = self.head.get(name)
        for label in self._owned(head) if head is not None else []:
            ln = self.progress.lines[label]
            self.progress.fail(label, reason)
            if head.feeds in self.progress.lines:
                self.progress.shrink(head.feeds, ln.total - ln.done)
        self.progress.note(f"FAILED {name}: {reason}")


def run_phase(plans: dict[str, Plan], progress: Progress, *, verbose: bool = False, max_restarts: int = 1,
              max_task_retries: int = -1) -> Tallies:
    """Run every pipeline of ``plans`` at once under one progress block; returns their :class:`Tallies`.

    The block (titled by the plans with lines, joined by `` · ``) is opened only when some plan declares a
    line; a line is started when a stage that tallies it runs in this phase.

    Raises:
        ValueError: two plans share a pipeline name or a progress line.
    """
    _check_unique(plans)
    t0 = time.perf_counter()
    pipelines = [p for plan in plans.values() for p in plan.pipelines]
    lines = {k: v for plan in plans.values() for k, v in plan.lines.items()}
    if not lines and not pipelines:
        return Tallies()
    phase = _PhaseTally(pipelines, progress)
    if lines:
        progress.section(" · ".join(plan.title for plan in plans.values() if plan.lines))
        for label, (total, done) in lines.items():
            progress.add(label, total=total, done=done)
    for p in pipelines:
        log.info("pipeline %s", p.describe())
    for label in lines:  # every pipeline starts now: rates and ETAs count from here
        if any(t.owns(label) for t in phase.tally_of.values()):
            progress.start(label)
    if lines:
        progress.tick(force=True)
    run_pipelines(pipelines, on_counts=phase.counts, on_failure=phase.failure, on_tick=progress.tick, verbose=verbose,
                  max_restarts=max_restarts, max_task_retries=max_task_retries)
    if lines:
        progress.finish()
    phase.tallies.seconds = time.perf_counter() - t0
    return phase.tallies
