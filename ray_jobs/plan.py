"""The pipelines of every job, declared as data: a list of stages per pipeline (pure: no ``import ray``).

A job turns its config into :class:`Pipeline` objects here; ``ray_jobs.execute`` runs them on Ray Data
(``ray.data.from_arrow(rows)`` then one ``map_batches`` per stage, in order). Read this file to see what
runs where. The sweep, for each config with rows still to generate::

    rows (pending keys + sample text, image *paths*)             [from the driver: no image bytes]
      -> generate   actors  read images (fsspec) -> PolicyStage(engine) -> responses/<config>/
                            replicas x concurrency batches in flight (resources from the config)
      -> judge      actors  JudgeStage(verifier + pattern judges) -> judgments/<config>/

plus one ``judge`` pipeline for responses written earlier without a judgment (a killed run, a new judge).
Each pipeline is its own Ray Data Dataset, all of them running at once on the cluster: a config whose
engine fails fails its own Dataset only. CRYSTAL (``crystal``: embedder actors -> steps/) and
AdaptMMBench (``adapt:<config>``: AdaptStage actors -> adapt/<config>/) are pipelines
of the same kind.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NAME_COLUMNS = ("sample_id", "config", "mode", "attempt", "judge", "response_hash", "judges_needed", "adapt_mode")
"""Columns whose values name a batch's output file (the same rows -> the same file: a retried batch
replaces its file instead of duplicating rows)."""


@dataclass(frozen=True)
class Tally:
    """What the progress block counts per output batch of a stage (columns; a missing column counts 0).

    Attributes:
        label: progress label prefix (``"<config>"`` or ``"judge"``); with ``group_col`` the label is
            ``"<label> <group value>"``, e.g. ``"qwen NT"``.
        group_col: column splitting a batch into labels (``mode``), or None.
        error_col: column whose non-null values are errors (``error``, ``judge_error``), or None.
        tokens_col: column summed as tokens (``completion_tokens``), or None.
    """

    label: str
    group_col: str | None = None
    error_col: str | None = "error"
    tokens_col: str | None = None


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline: ``cls(**kwargs)`` applied to batches of ``batch_size`` rows.

    Attributes:
        name: stage name, unique in its pipeline (``read_images``, ``generate``, ``judge``, ...).
        cls: stage class; ``cls(**kwargs)(batch: pa.Table) -> pa.Table`` (``actors/*``). ``kwargs`` may
            hold typed (pydantic) models: pickled once per actor, never re-validated per batch.
        inputs: columns the stage reads (documentation; each class checks its own on entry).
        outputs: columns of what it hands on to the next stage.
        batch_size: rows per call (one output file per call: the resume unit).
        replicas: actors in the stage's pool; 0 = stateless Ray tasks (no setup to keep).
        concurrency: batches in flight per actor, run on that many threads of the one process (>1 only
            for a thread-safe stage whose work is waiting on an engine: ``openai``, async ``vllm``).
        num_cpus, num_gpus, accelerator_type: Ray resources per actor or task (fractions allowed).
        out_uri: folder each output batch is written to (one Parquet file per batch, atomically), or None.
        forward: ``(input batch, output batch) -> pa.Table | None`` run in the actor after writing: what
            goes on to the next stage (default: the output batch). None rows forwarded = nothing.
        tally: what the progress block counts, or None.
        batch_format: ``"pyarrow"`` (``cls`` gets a ``pa.Table``) or ``"numpy"`` (a dict of arrays).
        read_images: the actor first reads each row's ``image_paths`` into ``images`` (bytes;
            ``actors/images.py``), so images go from storage to the engine, never through the driver.
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


@dataclass
class Pipeline:
    """Rows and the stages they go through, in order; one Ray Data Dataset when run.

    Attributes:
        name: what a failure is recorded under (a config name, ``"judge"``, ``"crystal"``).
        rows: the input rows (a ``pa.Table``; image paths, not bytes).
        stages: applied in order; the last stage's forwarded batches are dropped after counting.
    """

    name: str
    rows: Any
    stages: list[Stage]

    def describe(self) -> str:
        """One line per stage: ``name  class  replicas x concurrency  batch  resources  -> out``."""
        out = [f"{self.name}: {getattr(self.rows, 'num_rows', len(self.rows))} rows"]
        for s in self.stages:
            pool = "tasks" if s.replicas == 0 else f"{s.replicas} actor(s) x {s.concurrency}"
            res = f"cpu {s.num_cpus}" + (f" gpu {s.num_gpus}" if s.num_gpus else "")
            out.append(f"  {s.name:<10} {s.cls.__name__:<15} {pool:<18} batch {s.batch_size:<4} {res}"
                       + (f"  -> {s.out_uri}" if s.out_uri else ""))
        return "\n".join(out)


# -- the stages of the sweep ----------------------------------------------------------------------------
def generate_stage(model, out_uri: str, forward: Callable | None) -> Stage:
    """A config's policy actors: ``PolicyStage(model)``, resources and batches in flight from the config;
    each actor reads its rows' images itself (no image passes through the driver)."""
    from actors.policy import REQUIRED_COLUMNS, PolicyStage
    from howeval.engines.registry import batches_in_flight

    r = model.resources
    return Stage("generate", PolicyStage, {"model_config": model}, inputs=("image_paths", *REQUIRED_COLUMNS),
                 outputs=("responses",), batch_size=r.batch_size, replicas=r.replicas,
                 concurrency=batches_in_flight(model.engine, model.options, r.batch_size), num_cpus=r.num_cpus,
                 num_gpus=r.num_gpus, accelerator_type=r.accelerator_type, out_uri=out_uri, forward=forward,
                 tally=Tally(model.name, group_col="mode", tokens_col="completion_tokens"), read_images=True)


def judge_stage(judges, only, cache_dir: str | None, out_uri: str, batch_size: int = 16, share: int = 1,
                read_images: bool = False) -> Stage:
    """Verifier + pattern judges: ``JudgeStage`` actors writing ``judgments/<config>/``.

    ``share``: how many pipelines run a judge pool at once. ``judges.replicas`` and ``judges.num_cpus``
    describe the sweep's judges as a whole: each pool gets ``max(1, replicas // share)`` actors and the
    CPUs are split so all pools together reserve ``replicas x num_cpus``. So 25 configs do not start 25
    times the judge processes, and a judge actor always fits beside its config's engine (whole
    reservations per config could leave every config with an engine and no judge, or the reverse: a
    deadlock on a small node).
    """
    from actors.judge import REQUIRED_COLUMNS, JudgeStage

    share = max(share, 1)
    replicas = max(1, judges.replicas // share)
    return Stage("judge", JudgeStage, {"judges": judges, "only": only, "cache_dir": cache_dir},
                 inputs=tuple(REQUIRED_COLUMNS), outputs=("judgments",), batch_size=batch_size, replicas=replicas,
                 num_cpus=judges.num_cpus * judges.replicas / (share * replicas), out_uri=out_uri,
                 tally=Tally("judge", error_col="judge_error"), read_images=read_images)
