"""Pipelines declared as data (pure: no ``import ray``): what a benchmark plug-in hands the runtime.

A plug-in (``howeval.plugins.registry.Benchmark``) turns its config block and rows into a :class:`Plan`: pipelines
(rows and the stages they go through, in order) and the progress lines they advance. ``howeval.runtime.execute``
runs each pipeline as one Ray Data Dataset (``ray.data.from_arrow(rows)`` then one ``map_batches`` per
stage), every pipeline of a phase at once. The sweep's own pipelines, for each config with rows still to
generate::

    rows (pending keys + sample text, image *paths*)             [from the driver: no image bytes]
      -> generate   actors  read images (fsspec) -> PolicyStage(engine) -> responses/<config>/
                            replicas x concurrency batches in flight (resources from the config)
      -> judge      actors  JudgeStage(verifier + pattern judges) -> judgments/<config>/

plus one ``judge`` pipeline for responses written earlier without a judgment (a killed run, a new judge);
AdaptMMBench adds ``adapt:<config>`` pipelines (AdaptStage actors -> adapt/<config>/) beside them, and
CRYSTAL a ``crystal`` pipeline (embedder actors -> steps/) in the phase after (it reads the responses).
A pipeline whose engine fails fails its own Dataset only.

Each stage declares the columns it reads (``inputs``) and those it hands on (``outputs``); a
:class:`Pipeline` checks when it is built that every stage's inputs are there, so a misplugged stage fails
on the driver before any actor starts, not in the middle of a run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NAME_COLUMNS = ("sample_id", "config", "mode", "attempt", "judge", "response_hash", "judges_needed", "adapt_mode")
"""Columns whose values name a batch's output file (the same rows -> the same file: a retried batch
replaces its file instead of duplicating rows)."""

READ_IMAGES_ADDS = "images"
"""The column a stage declared with ``read_images`` adds before its class runs (``howeval.actors.images.ReadImages``)."""


@dataclass(frozen=True)
class Tally:
    """What the progress block counts per output batch of a stage (columns; a missing column counts 0).

    Attributes:
        label: progress label (``"<config>"``, ``"judge"``, ``"crystal"``); with ``group_col`` each row
            counts on the line ``"<label> <group value>"``, e.g. ``"qwen NT"``.
        group_col: column splitting a batch into lines (``mode``), or None.
        error_col: column whose non-null values are errors (``error``, ``judge_error``), or None.
        tokens_col: column summed as tokens (``completion_tokens``), or None.
        per_item: output rows per item the line counts (a judge writes one row per response and judge:
            its line counts responses, so ``per_item`` = the number of judges); >= 1.
        feeds: the line of the stage this one feeds (``"judge"``): a row that errs here never reaches it,
            and a failed pipeline's rows still to come never will, so that line's total shrinks by them.
    """

    label: str
    group_col: str | None = None
    error_col: str | None = "error"
    tokens_col: str | None = None
    per_item: int = 1
    feeds: str | None = None

    def __post_init__(self):
        if self.per_item < 1:
            raise ValueError(f"tally {self.label!r}: per_item must be >= 1, got {self.per_item}")

    def line(self, group) -> str:
        """The progress label a row of group value ``group`` counts on."""
        return self.label if self.group_col is None else f"{self.label} {group}"

    def owns(self, label: str) -> bool:
        """Whether progress line ``label`` is counted by this tally."""
        return label == self.label or (self.group_col is not None and label.startswith(f"{self.label} "))


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline: ``cls(**kwargs)`` applied to batches of ``batch_size`` rows.

    Attributes:
        name: stage name, unique in its pipeline (``generate``, ``judge``, ``adapt``, ``crystal``, ...).
        cls: stage class; ``cls(**kwargs)(batch: pa.Table) -> pa.Table`` (``howeval/actors/*``). ``kwargs`` may
            hold typed (pydantic) models: pickled once per actor, never re-validated per batch.
        inputs: columns the stage reads; checked against what reaches it when the pipeline is built.
        outputs: columns of what it hands on to the next stage (its ``forward``'s output when set).
        batch_size: rows per call (one output file per call: the resume unit).
        replicas: actors in the stage's pool; 0 = stateless Ray tasks (no setup to keep).
        concurrency: batches in flight per actor, run on that many threads of the one process (>1 only
            for a thread-safe stage whose work is waiting on an engine: ``openai``, async ``vllm``).
        num_cpus, num_gpus, accelerator_type: Ray resources per actor or task (fractions allowed).
        out_uri: folder each output batch is written to (one Parquet file per batch, atomically; a
            ``{config}`` in it splits a batch by its ``config`` column), or None.
        forward: ``(input batch, output batch) -> pa.Table | None`` run in the actor after writing: what
            goes on to the next stage (default: the output batch). None rows forwarded = nothing.
        tally: what the progress block counts, or None.
        batch_format: ``"pyarrow"`` (``cls`` gets a ``pa.Table``) or ``"numpy"`` (a dict of arrays).
        read_images: the actor first reads each row's ``image_paths`` into ``images`` (bytes;
            ``howeval/actors/images.py``), so images go from storage to the engine, never through the driver.

    Raises:
        ValueError: a batch size, replica count or concurrency out of range, or a task stage with GPUs.
    """

    name: str
    cls: type
    kwargs: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    batch_size: int = 16
    replicas: int = 1
    concurrency: int = 1
    num_cpus: float = 0.25
    num_gpus: float = 0.0
    accelerator_type: str | None = None
    out_uri: str | None = None
    forward: Callable | None = None
    tally: Tally | None = None
    batch_format: str = "pyarrow"
    read_images: bool = False

    def __post_init__(self):
        if self.batch_size < 1 or self.replicas < 0 or self.concurrency < 1:
            raise ValueError(f"stage {self.name!r}: batch_size >= 1, replicas >= 0, concurrency >= 1; got "
                             f"{self.batch_size}, {self.replicas}, {self.concurrency}")
        if self.replicas == 0 and (self.concurrency > 1 or self.num_gpus):
            raise ValueError(f"stage {self.name!r}: a task stage (replicas 0) takes no concurrency or GPUs")
        if self.batch_format not in ("pyarrow", "numpy"):
            raise ValueError(f"stage {self.name!r}: batch_format must be 'pyarrow' or 'numpy', got {self.batch_format!r}")


@dataclass
class Pipeline:
    """Rows and the stages they go through, in order; one Ray Data Dataset when run.

    Attributes:
        name: what a failure is recorded under (a config name, ``"judge"``, ``"adapt:<config>"``), unique
            in a phase.
        rows: the input rows (a ``pa.Table``; image paths, not bytes).
        stages: applied in order; the last stage's forwarded batches are dropped after counting.

    Raises:
        ValueError: no stage, two stages of one name, or a stage whose ``inputs`` are not all among the
            columns that reach it (the rows' columns for the first stage, plus ``images`` when it reads
            images; the previous stage's ``outputs`` after that). The message names the stage, the missing
            columns and those present.
    """

    name: str
    rows: Any
    stages: list[Stage]

    def __post_init__(self):
        if not self.stages:
            raise ValueError(f"pipeline {self.name!r}: no stages")
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"pipeline {self.name!r}: stage names must be unique, got {names}")
        have = tuple(getattr(self.rows, "column_names", ()) or ())
        for i, s in enumerate(self.stages):
            reach = set(have) | ({READ_IMAGES_ADDS} if s.read_images else set())
            missing = [c for c in s.inputs if c not in reach]
            if missing:
                came = "the rows" if i == 0 else f"stage {self.stages[i - 1].name!r}'s outputs"
                raise ValueError(f"pipeline {self.name!r}: stage {s.name!r} reads {missing}, which {came} do not "
                                 f"carry (present: {sorted(reach)}); add them to what reaches it or drop them from "
                                 f"its inputs")
            have = s.outputs

    def describe(self) -> str:
        """One line per stage: ``name  class  replicas x concurrency  batch  resources  -> out``."""
        out = [f"{self.name}: {getattr(self.rows, 'num_rows', len(self.rows))} rows"]
        for s in self.stages:
            pool = "tasks" if s.replicas == 0 else f"{s.replicas} actor(s) x {s.concurrency}"
            res = f"cpu {s.num_cpus}" + (f" gpu {s.num_gpus}" if s.num_gpus else "")
            out.append(f"  {s.name:<10} {s.cls.__name__:<15} {pool:<18} batch {s.batch_size:<4} {res}"
                       + (f"  -> {s.out_uri}" if s.out_uri else ""))
        return "\n".join(out)


@dataclass
class Plan:
    """What one benchmark runs in one phase: its pipelines and the progress lines they advance.

    Attributes:
        title: the progress block's section title for this benchmark (``"generate + judge"``).
        pipelines: the pipelines (possibly none: everything already done).
        lines: ``{progress label: (total items, items already done)}``, in display order; each label is
            counted by the stage tallies whose :meth:`Tally.owns` it.
        state: anything the benchmark wants back in :meth:`howeval.plugins.registry.Benchmark.finish` (driver-side).
    """

    title: str
    pipelines: list[Pipeline] = field(default_factory=list)
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    state: dict = field(default_factory=dict)


@dataclass
class Tallies:
    """What a phase's run did, per pipeline and stage: ``counts[(pipeline, stage)] = {"rows", "errors",
    "tokens"}`` (output rows of every batch), ``failures[pipeline] = one-line reason``, and ``seconds``
    (the phase's wall time)."""

    counts: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, pipeline: str, stage: str, groups: dict) -> None:
        """Add one batch's ``{group: {"rows", "errors", "tokens"}}`` to ``(pipeline, stage)``."""
        acc = self.counts.setdefault((pipeline, stage), {"rows": 0, "errors": 0, "tokens": 0})
        for s in groups.values():
            for k in acc:
                acc[k] += int(s.get(k, 0))

    def rows(self, stage: str, pipeline: str | None = None, key: str = "rows") -> int:
        """Sum of ``key`` over stage ``stage`` (of ``pipeline``, or of every pipeline when None)."""
        return sum(v[key] for (p, s), v in self.counts.items() if s == stage and (pipeline is None or p == pipeline))

    def only(self, names) -> Tallies:
        """The counts and failures of the pipelines named in ``names`` (one benchmark's share of a phase)."""
        names = set(names)
        return Tallies({k: v for k, v in self.counts.items() if k[0] in names},
                       {k: v for k, v in self.failures.items() if k in names}, self.seconds)
