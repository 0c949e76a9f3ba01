"""Runs declared pipelines (``howeval.plugins.pipeline``) on Ray Data: one Dataset per pipeline, all at once.

Each pipeline becomes ``ray.data.from_arrow(rows)`` followed by one ``map_batches`` per stage: an actor
pool (``ActorPoolStrategy(size=replicas)``; ``concurrency`` > 1 runs that many batches of one actor at
once on threads) or Ray tasks (``replicas`` 0). Each stage instance is wrapped in :class:`StageUDF`,
which writes every output batch as one Parquet file (atomically, named by a digest of the batch's keys:
a retried batch replaces its file), sends its counts to the progress sink and hands the forwarded rows
to the next stage. Ray Data streams: the judge works on a config's first batches while its engine
generates the next.

Every pipeline is consumed in its own driver thread, so a failing pipeline fails alone: an engine that
does not start (``max_consecutive_actor_init_deaths`` 0: the first constructor error ends it), a stage
that raises, or an actor process that dies more often than ``max_restarts`` (1; the batch is retried
once, ``max_task_retries``) ends that Dataset with an exception, recorded with a one-line reason, while
the others run on. Ray Data's own default (``max_restarts=-1``) would restart a crashing engine forever.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import warnings
from collections.abc import Callable

import pyarrow as pa

from howeval.actors.images import ReadImages
from howeval.plugins.pipeline import NAME_COLUMNS, Pipeline, Stage
from howeval.runtime.placement import release, stage_remote_args
from howeval.runtime.progress import batch_stats
from howeval.store import join, write_table
from howeval.timing import ENV as TIMINGS_ENV, mark

QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false",
             "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"}
"""Environment of stage actors unless ``--verbose``: library chatter off (their errors still surface)."""


def batch_file_name(batch: pa.Table) -> str:
    """``part-<16 hex>.parquet``: a digest of the batch's key columns (``NAME_COLUMNS`` present)."""
    import hashlib
    import json

    cols = [c for c in NAME_COLUMNS if c in batch.column_names]
    payload = json.dumps({c: batch.column(c).to_pylist() for c in cols}, sort_keys=True, default=str)
    return f"part-{hashlib.sha256(payload.encode()).hexdigest()[:16]}.parquet"


class StageUDF:
    """The callable class Ray Data runs for one stage (an actor holds one; a task builds one per batch).

    Args:
        stage: the declared stage (its ``cls(**kwargs)`` is built here, e.g. the engine loads).
        pipeline: the pipeline's name (progress events carry it).
        counts: the progress sink actor handle, or None.
        last: True for the pipeline's last stage: it returns a one-row count instead of the rows.
        env: environment variables set before the stage is built (``QUIET_ENV`` unless verbose).
        announce: once built (the engine loaded), send the sink an event with no groups: "an actor of this
            stage is ready" (the progress line then says how long its start took). Off for task stages.
    """

    def __init__(self, stage: Stage, pipeline: str, counts=None, last: bool = False, env: dict | None = None,
                 announce: bool = True):
        if env:
            import warnings

            os.environ.update(env)
            warnings.filterwarnings("ignore")
            logging.getLogger().setLevel(logging.ERROR)
        self.spec, self.pipeline, self.counts, self.last = stage, pipeline, counts, last
        mark("actor_init_start", stage=stage.name, pipeline=pipeline, process_start=_process_start())
        self.stage = stage.cls(**stage.kwargs)
        mark("actor_ready", stage=stage.name, pipeline=pipeline)
        if announce and counts is not None and stage.tally is not None:
            counts.add.remote(pipeline, stage.name, {})

    def __call__(self, batch: pa.Table) -> pa.Table:
        spec = self.spec
        if batch.num_rows == 0:
            out = nxt = None
        else:
            if spec.read_images:
                batch = ReadImages()(batch)
            if spec.batch_format == "numpy":
                out = self.stage({c: batch.column(c).to_numpy(zero_copy_only=False) for c in batch.column_names})
            else:
                out = self.stage(batch)
            if spec.out_uri and out.num_rows:
                _write(out, batch, spec.out_uri)
            if self.counts is not None and spec.tally is not None:
                t = spec.tally
                self.counts.add.remote(self.pipeline, spec.name, batch_stats(out, t.group_col, t.error_col, t.tokens_col))
            nxt = spec.forward(batch, out) if spec.forward is not None else out
        if self.last:
            return pa.table({"rows": [0 if out is None else out.num_rows]})
        return nxt if nxt is not None else pa.table({"rows": pa.array([], pa.int64())})


def _process_start() -> float | None:
    """This process's start (epoch seconds, ``psutil``), for the start-up marks: an actor's ``actor_init_start``
    minus it is the worker's own start and imports, the rest of ``actor_start`` is Ray Data and the raylet
    before the process existed. None without psutil, or when no marks are kept."""
    if not os.environ.get(TIMINGS_ENV):
        return None
    try:
        import psutil
    except ImportError:
        return None
    return psutil.Process().create_time()


def _write(out: pa.Table, batch: pa.Table, uri: str) -> None:
    """Write ``out`` as one file named by ``batch``'s keys; with ``{config}`` in ``uri``, one file per config
    value of ``out`` (a judge batch may hold rows of several configs), each named by its own rows' keys."""
    if "{config}" not in uri:
        write_table(out, join(uri, batch_file_name(batch)))
        return
    import pyarrow.compute as pc

    for config in out.column("config").unique().to_pylist():
        part = out.filter(pc.equal(out.column("config"), config))
        write_table(part, join(uri.format(config=config), batch_file_name(part)))


def _run_task(batch: pa.Table, stage: Stage, pipeline: str, counts, last: bool, env) -> pa.Table:
    return StageUDF(stage, pipeline, counts, last, env, announce=False)(batch)


def dataset(p: Pipeline, counts=None, env: dict | None = None, max_restarts: int = 1, max_task_retries: int = -1):
    """The Ray Data Dataset of pipeline ``p`` (lazy: nothing runs until it is consumed)."""
    import ray

    first = p.stages[0].batch_size
    rows = p.rows
    blocks = [rows.slice(i, first) for i in range(0, rows.num_rows, first)] or [rows]
    ds = ray.data.from_arrow(blocks)
    for i, s in enumerate(p.stages):
        last = i == len(p.stages) - 1
        kw: dict = {"batch_size": s.batch_size, "batch_format": "pyarrow", "num_cpus": s.num_cpus,
                    "zero_copy_batch": True}
        if s.num_gpus:
            kw["num_gpus"] = s.num_gpus
        if s.accelerator_type:
            kw["accelerator_type"] = s.accelerator_type
        if s.replicas == 0:
            ds = ds.map_batches(_run_task, fn_kwargs={"stage": s, "pipeline": p.name, "counts": counts, "last": last,
                                                      "env": env}, **kw)
            continue
        from ray.data import ActorPoolStrategy

        kw.update(stage_remote_args(s, p))  # TP/PP engines: a placement group per replica (howeval.runtime.placement)
        conc = s.concurrency
        compute = ActorPoolStrategy(size=s.replicas, max_tasks_in_flight_per_actor=conc + 1 if conc > 1 else 2,
                                    **({"max_concurrent_calls_per_actor": conc, "enable_true_multi_threading": True}
                                       if conc > 1 else {}))
        with warnings.catch_warnings():  # 2.60 has no named parameter for max_restarts yet (deprecation names 2.64)
            warnings.simplefilter("ignore", DeprecationWarning)
            ds = ds.map_batches(StageUDF, compute=compute,
                                fn_constructor_kwargs={"stage": s, "pipeline": p.name, "counts": counts, "last": last,
                                                       "env": env},
                                max_restarts=max_restarts, max_task_retries=max_task_retries, **kw)
    return ds


_ERR_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\s*:\s*(.+)$")


def one_line(err: BaseException | str, limit: int = 300) -> str:
    """A one-line reason for a pipeline failure: the innermost ``SomeError: message`` line of the error
    text (Ray wraps the actor's traceback), else the first non-empty line; at most ``limit`` characters."""
    if isinstance(err, BaseException):
        cause = getattr(err, "cause", None)
        if isinstance(cause, BaseException) and cause is not err and not _is_ray_error(cause):
            text = f"{type(cause).__name__}: {cause}"
        else:
            text = str(err) or type(err).__name__
    else:
        text = err
    lines = [ln for ln in text.splitlines() if ln.strip()]
    hits = [m for m in (_ERR_LINE.match(ln) for ln in lines) if m and not m.group(1).startswith("ray.")]
    if hits:
        m = hits[-1]
        line = f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2).strip()}"
    else:
        line = lines[0].strip() if lines else "unknown error"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _is_ray_error(e: BaseException) -> bool:
    return type(e).__module__.startswith("ray.")


def _quiet_ray_data() -> None:
    """A failure is reported once, in one line, by the caller (its trace stays in the session logs); a small
    run (--limit) gives a stage fewer blocks than its actor pool's minimum, which Ray Data says once per stage
    in a 5-line UserWarning: the pool sizes are the sweep's own choice, nothing to act on."""
    logging.getLogger("ray.data").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message=r"The minimum number of concurrent actors", category=UserWarning)


def run_pipelines(pipelines: list[Pipeline], *, on_counts: Callable | None = None, on_failure: Callable | None = None,
                  on_tick: Callable | None = None, verbose: bool = False, max_restarts: int = 1,
                  max_task_retries: int = -1, poll_s: float = 0.5) -> dict[str, str]:
    """Run every pipeline at once, each as its own Dataset consumed in its own thread, until all end.

    Args:
        pipelines: what to run (names unique); pipelines without rows are skipped.
        on_counts: ``(pipeline, stage, {group: {"rows", "errors", "tokens"}}) -> None`` per output batch,
            called on this thread; ``{}`` (no groups) when an actor of that stage has been built (ready).
        on_failure: ``(pipeline, one-line reason) -> None`` when a pipeline fails, on this thread.
        on_tick: ``() -> None`` about every ``poll_s`` seconds (progress redraw).
        verbose: keep the libraries' own output in the actors.
        max_restarts: restarts of a dead actor process (the constructor runs again), per actor.
        max_task_retries: retries of a batch whose actor died or became unreachable while computing it;
            -1 (default) = as long as the actor can come back, so the bound is ``max_restarts``: a batch
            that kills its engine is retried once per restart. A finite number here turns a lost node
            into failed configs: the retry reaches the actor while it is still being restarted elsewhere
            (``ActorUnavailableError``).

    Returns:
        ``{failed pipeline: one-line reason}``.

    Raises:
        ValueError: two pipelines share a name.
    """
    import ray

    from howeval.runtime.progress import Counts

    names = [p.name for p in pipelines]
    if len(set(names)) != len(names):
        raise ValueError(f"pipeline names must be unique, got {names}")
    todo = [p for p in pipelines if p.rows.num_rows]
    if not todo:
        return {}
    mark("pipelines_start")
    if not verbose:
        _quiet_ray_data()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # on the driver's node: the progress sink goes when the driver goes, never with a worker node
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    counts = ray.remote(Counts).options(num_cpus=0, scheduling_strategy=here).remote()
    env = None if verbose else QUIET_ENV
    errors: dict[str, BaseException] = {}

    def consume(p: Pipeline) -> None:
        try:
            ds = dataset(p, counts, env, max_restarts, max_task_retries)
            for _ in ds.iter_batches(batch_size=None, batch_format="pyarrow", prefetch_batches=0):
                pass
        except BaseException as e:  # noqa: BLE001 - any failure of this Dataset is this pipeline's, reported on the driver
            errors[p.name] = e
        finally:
            release(p)  # its engines' placement groups, if any: their GPUs go back to the cluster now

    threads = [threading.Thread(target=consume, args=(p,), name=f"pipeline:{p.name}", daemon=True) for p in todo]
    for t in threads:
        t.start()
    failures: dict[str, str] = {}

    def nothing(*_args) -> None:
        return None

    counted, failed = on_counts or nothing, on_failure or nothing

    def drain() -> None:
        for event in ray.get(counts.drain.remote()):
            counted(*event)
        for name in [n for n in errors if n not in failures]:
            failures[name] = one_line(errors[name])
            failed(name, failures[name])

    try:
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=poll_s / max(len(threads), 1))
            drain()
            if on_tick:
                on_tick()
        drain()
    finally:
        ray.kill(counts)
    return failures
