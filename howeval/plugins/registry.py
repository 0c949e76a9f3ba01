"""The benchmark registry: each benchmark is one :class:`Benchmark` plug-in, registered by name.

A plug-in is the whole of a benchmark as a run sees it (the shape of Ray Data LLM's processor builders and
of lmms-eval's tasks): from the run's config and rows it declares what to run (:meth:`Benchmark.plan`: a
:class:`howeval.plugins.pipeline.Plan` of pipelines and progress lines), says what was done
(:meth:`Benchmark.finish`: summary lines and failures), and adds its part to the report
(:meth:`Benchmark.report`: metrics keys and Markdown sections). The runtime (``howeval.runtime.run``) runs the
plans of every enabled plug-in, phase by phase, and knows no benchmark by name; the report calls each
registered plug-in's :meth:`Benchmark.report`.

Adding a benchmark = one module with a ``Benchmark`` subclass and one registration line in
``howeval/plugins/__init__.py`` (or a :func:`register` call of your own, e.g. from a test).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from howeval.plugins.pipeline import Plan, Tallies


@dataclass
class RunContext:
    """What every plug-in of a run is given.

    Attributes:
        cfg: the run's config (a ``howeval.config.SweepConfig``; jobs with another config give one with
            ``output_uri``).
        samples: the benchmark rows (``SAMPLE_SCHEMA`` columns with ``image_paths``; images unread).
        verbose: keep the libraries' own output.
        max_attempts: attempts per row whose engine call failed (>= 1).
    """

    cfg: Any
    samples: list[dict] = field(default_factory=list)
    verbose: bool = False
    max_attempts: int = 3


@dataclass
class Summary:
    """What a plug-in says after its phase: ``lines`` (printed under the progress block), ``failures``
    (``{name: one-line reason}``, written to ``failures.json`` by the sweep) and ``result`` (the plug-in's
    own outcome object, for the job that ran it)."""

    lines: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    result: Any = None


class Benchmark:
    """One benchmark, as a plug-in. Subclass it, set :attr:`name`, implement :meth:`plan`.

    Attributes:
        name: registry key, unique (``"patterneval"``, ``"crystal"``, ``"adapt"``).
        phase: when its plan is made and run: every plug-in of phase 0 runs at once (the sweep's generation
            and whatever needs no response); phase 1 after phase 0 has ended (it reads the responses).
    """

    name: ClassVar[str] = ""
    phase: ClassVar[int] = 0

    def enabled(self, cfg) -> bool:
        """Whether a sweep with config ``cfg`` runs this benchmark (default: always)."""
        return True

    title: ClassVar[str] = ""
    """How the start-of-run line names it (``"CRYSTAL"``); default :attr:`name`."""

    def skip_reason(self, sample: dict, cfg) -> str | None:
        """Why this benchmark does not score ``sample`` (a row of the run), naming the missing field
        (``"no reference_steps"``), or None when it scores it (default: every row)."""
        return None

    def coverage(self, ctx: RunContext) -> tuple[int, dict[str, int]]:
        """``(rows it scores, {reason: rows skipped for it})`` over the run's rows (:meth:`skip_reason`)."""
        skipped: dict[str, int] = {}
        for s in ctx.samples:
            why = self.skip_reason(s, ctx.cfg)
            if why is not None:
                skipped[why] = skipped.get(why, 0) + 1
        return len(ctx.samples) - sum(skipped.values()), skipped

    def plan(self, ctx: RunContext) -> Plan:
        """What to run now: pipelines and progress lines (may read what the run has stored)."""
        raise NotImplementedError(f"benchmark {self.name!r}: plan() is not implemented")

    def finish(self, ctx: RunContext, plan: Plan, tallies: Tallies) -> Summary:
        """What was done, from the plan and its pipelines' counts (default: each failure in a line)."""
        return Summary([f"{self.name} FAILED {k}: {v}" for k, v in sorted(tallies.failures.items())],
                       dict(tallies.failures))

    def report(self, cfg, joined: list[dict]) -> tuple[dict, list[str]] | None:
        """This benchmark's part of the report of the run at ``cfg.output_uri``: ``(metrics keys, Markdown
        sections)``, or None when the run holds nothing of it. ``joined``: the run's response rows with the
        primary judge's judgment (``howeval.report.run.joined_rows``), before T/NT pairing."""
        return None


_REGISTRY: dict[str, Benchmark] = {}


def scoring_summary(plan: Plan, tallies: Tallies, *, line: str, pipeline: str, title: str, all_done: str,
                    folder: str, after_failure: str) -> Summary:
    """The :class:`Summary` of a phase-1 plug-in that scores stored responses in one pipeline (CRYSTAL, task
    accuracy): ``result`` = ``{"scored", "seconds"}`` (+ ``"failed"``: the pipeline's one-line reason), and one line
    (:func:`scoring_line`). A failure is said in the line, not in ``failures`` (the responses stay unscored: a rerun
    scores them).

    Args:
        line: the plan's progress line whose total is the responses to score; pipeline: the pipeline's name.
        title, all_done, folder, after_failure: the wording of :func:`scoring_line`.
    """
    res = {"scored": plan.lines.get(line, (0, 0))[0], "seconds": tallies.seconds,
           **({"failed": tallies.failures[pipeline]} if pipeline in tallies.failures else {})}
    return Summary([scoring_line(res, title=title, all_done=all_done, folder=folder, after_failure=after_failure)],
                   {}, res)


def scoring_line(res: dict, *, title: str, all_done: str, folder: str, after_failure: str) -> str:
    """A scoring pass in words: ``<title>: 84 responses scored in 1:05 (<folder>/)``, ``<title>: <all_done>`` when
    nothing was left to score, ``<title> FAILED after <time>: <reason> (<after_failure>)`` when it failed.

    >>> scoring_line({"scored": 84, "seconds": 65.2}, title="CRYSTAL", all_done="nothing to do", folder="steps",
    ...              after_failure="unscored")
    'CRYSTAL: 84 responses scored in 1:05 (steps/)'
    """
    from howeval.report.tables import duration

    if res.get("failed"):
        return f"{title} FAILED after {duration(res.get('seconds', 0))}: {res['failed']} ({after_failure})"
    if not res.get("scored"):
        return f"{title}: {all_done}"
    return f"{title}: {res['scored']} responses scored in {duration(res.get('seconds', 0))} ({folder}/)"


def register(benchmark: Benchmark | type[Benchmark]) -> Benchmark | type[Benchmark]:
    """Register a plug-in (an instance, or a class built with no arguments; usable as a class decorator).

    Raises:
        ValueError: no ``name``, or another plug-in of a different class holds the name.
    """
    inst = benchmark() if isinstance(benchmark, type) else benchmark
    if not inst.name:
        raise ValueError(f"{type(inst).__name__}: set the class attribute `name` before registering it")
    old = _REGISTRY.get(inst.name)
    if old is not None and type(old) is not type(inst):
        raise ValueError(f"benchmark name {inst.name!r} is taken by {type(old).__module__}.{type(old).__name__}; "
                         f"choose another name")
    _REGISTRY[inst.name] = inst
    return benchmark


def unregister(name: str) -> None:
    """Remove plug-in ``name`` (a test's own plug-in, once the test is done); no error when absent."""
    _REGISTRY.pop(name, None)


def registered() -> list[Benchmark]:
    """Every registered plug-in, in registration order."""
    return list(_REGISTRY.values())


def get(name: str) -> Benchmark:
    """The plug-in registered as ``name``.

    Raises:
        KeyError: no such plug-in (the message lists the registered names).
    """
    if name not in _REGISTRY:
        raise KeyError(f"no benchmark plug-in {name!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def coverage_lines(ctx: RunContext, benchmarks: list[Benchmark]) -> list[str]:
    """What each benchmark of a run will score, said at its start, one line each: ``CRYSTAL: 10 of 42 rows
    (32 skipped: no reference_steps)``; a benchmark that scores no row says so and names the field to add
    (datasets/README.md lists each benchmark's fields).

    >>> class B(Benchmark):
    ...     name = "b"
    ...     def skip_reason(self, s, cfg): return None if s.get("k") else "no k"
    >>> coverage_lines(RunContext(None, [{"k": 1}, {}, {}]), [B()])
    ['b: 1 of 3 rows (2 skipped: no k)']
    """
    out = []
    for b in benchmarks:
        n, skipped = b.coverage(ctx)
        why = "; ".join(f"{k} skipped: {r}" for r, k in sorted(skipped.items(), key=lambda x: -x[1]))
        total = len(ctx.samples)
        if not skipped:
            out.append(f"{b.title or b.name}: all {total} rows")
        elif n:
            out.append(f"{b.title or b.name}: {n} of {total} rows ({why})")
        else:
            out.append(f"{b.title or b.name}: none of {total} rows ({why}); nothing to score "
                       "(the fields each benchmark needs: datasets/README.md)")
    return out


def enabled(cfg) -> list[Benchmark]:
    """The plug-ins a sweep with config ``cfg`` runs, in registration order."""
    return [b for b in registered() if b.enabled(cfg)]


def report_sections() -> list[Callable]:
    """Each registered plug-in's :meth:`Benchmark.report`, in registration order (``write_report(sections=...)``)."""
    return [b.report for b in registered()]
