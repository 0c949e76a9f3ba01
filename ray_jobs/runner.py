"""The stage runner every job shares: pending rows -> actor pools -> one Parquet file per batch.

A *stage* is a pool of Ray actors, each holding one instance of a stage class (``actors/*``: a callable
``stage(pa.Table) -> pa.Table``, e.g. ``PolicyStage`` or ``JudgeStage``). The driver feeds Arrow batches
(the rows still to compute: "read the keys written -> pending rows"), each actor computes a batch and
writes it as one Parquet file (atomically, named by a digest of the batch's keys, so a retried batch
replaces its file instead of duplicating rows) and returns its row counts. A stage may name a
downstream stage (``then``): each finished batch is forwarded there at once (e.g. generation ->
judging), so the next stage works while the first one goes on. Any number of stages run at the same
time in one driver loop (``ray.wait`` over every batch in flight): all configs of a sweep at once,
each with its own pool and resources, judging streamed behind them.

Failures stay inside their stage. An actor whose constructor raises (an engine that does not start),
or whose process dies more often than ``max_restarts`` allows, or a stage call that raises, marks that
stage failed with a one-line reason; its rows not yet written stay pending (a rerun computes them) and
every other stage finishes. Restarts and task retries are bounded (``max_restarts``,
``max_task_retries``): a crashing engine ends as a failed stage, never as a restart loop.

Why not ``Dataset.map_batches``: in Ray Data 2.60 one failing actor pool fails the whole execution
(``max_consecutive_actor_init_deaths``, unbounded ``max_restarts=-1`` by default), and concurrent
Datasets in one driver each run their own executor thread; plain actors give per-config failure
isolation, bounded restarts and exact per-batch progress with one loop.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import pyarrow as pa
import pyarrow.compute as pc

from howeval.store import join, write_table

NAME_COLUMNS = ("sample_id", "config", "mode", "attempt", "judge", "response_hash", "judges_needed", "adapt_mode")
"""Columns whose values name a batch's output file (the same rows -> the same file)."""

QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "VLLM_LOGGING_LEVEL": "WARNING", "TOKENIZERS_PARALLELISM": "false",
             "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"}
"""Environment of stage actors unless ``--verbose``: library chatter off (their errors still surface)."""


@dataclass
class StageSpec:
    """One stage: a pool of ``replicas`` actors running ``cls(**kwargs)`` over Arrow batches.

    Attributes:
        name: unique stage name, e.g. ``"generate:qwen3.5-4b"`` or ``"judge"``.
        cls: stage class; ``cls(**kwargs)(batch: pa.Table) -> pa.Table``. ``kwargs`` may hold typed
            (pydantic) models: they are pickled once per actor, not re-validated per batch.
        out_uri: folder each output batch is written to; ``{config}``-style fields are filled from the
            batch's ``meta``. None = the stage writes nothing (its output is only forwarded).
        then: name of the stage fed with each output batch (after ``forward``), or None.
        forward: ``(input batch, output batch) -> pa.Table | None``, run in the actor: what goes to
            ``then`` (default: the output batch itself).
        replicas, num_cpus, num_gpus, accelerator_type: Ray resources per actor (fractional CPUs allowed).
        in_flight: batches queued per actor (2 keeps an actor busy while the driver hands out the next).
        concurrency: batches one actor runs at once, on threads (its ``max_concurrency``); more than 1 only
            for a thread-safe stage whose work is waiting, e.g. the ``openai`` engine
            (:func:`howeval.engines.registry.batches_in_flight`). An actor is sent up to ``in_flight``
            batches, or ``max(in_flight, concurrency + 1)`` when ``concurrency`` is more than 1.
        group_col, error_col, tokens_col: output columns counted per batch for progress (missing = 0).
        label: progress label; default ``name``.
        batch_format: ``"pyarrow"`` (a ``pa.Table``) or ``"numpy"`` (a dict of numpy arrays) for ``cls``.
    """

    name: str
    cls: type
    kwargs: dict[str, Any] = field(default_factory=dict)
    out_uri: str | None = None
    then: str | None = None
    forward: Callable[[pa.Table, pa.Table], pa.Table | None] | None = None
    replicas: int = 1
    num_cpus: float = 0.25
    num_gpus: float = 0.0
    accelerator_type: str | None = None
    in_flight: int = 2
    concurrency: int = 1
    group_col: str | None = None
    error_col: str | None = "error"
    tokens_col: str | None = None
    label: str | None = None
    batch_format: str = "pyarrow"


def batch_file_name(batch: pa.Table) -> str:
    """``part-<16 hex>.parquet``: a digest of the batch's key columns (``NAME_COLUMNS`` present)."""
    cols = [c for c in NAME_COLUMNS if c in batch.column_names]
    payload = json.dumps({c: batch.column(c).to_pylist() for c in cols}, sort_keys=True, default=str)
    return f"part-{hashlib.sha256(payload.encode()).hexdigest()[:16]}.parquet"


def batch_stats(table: pa.Table, group_col: str | None, error_col: str | None, tokens_col: str | None) -> dict:
    """Row counts of an output batch per group: ``{group: {"rows", "errors", "tokens"}}`` (group None = all)."""
    groups = table.column(group_col).to_pylist() if group_col and group_col in table.column_names else [None] * table.num_rows
    errs = (table.column(error_col).is_valid().to_pylist() if error_col and error_col in table.column_names
            else [False] * table.num_rows)
    toks = (pc.fill_null(table.column(tokens_col), 0).to_pylist() if tokens_col and tokens_col in table.column_names
            else [0] * table.num_rows)
    out: dict = {}
    for g, e, t in zip(groups, errs, toks):
        s = out.setdefault(g, {"rows": 0, "errors": 0, "tokens": 0})
        s["rows"] += 1
        s["errors"] += int(bool(e))
        s["tokens"] += int(t or 0)
    return out


class StageActor:
    """The Ray actor around one stage instance (created by :class:`StageRunner`)."""

    def __init__(self, cls: type, kwargs: dict, env: dict[str, str] | None = None):
        os.environ.update(env or {})
        if env:
            import logging
            import warnings

            warnings.filterwarnings("ignore")
            logging.getLogger().setLevel(logging.ERROR)
        self.stage = cls(**kwargs)

    def ready(self) -> int:
        """Returns once the constructor ran (engine loaded); the process id."""
        return os.getpid()

    def run(self, batch: pa.Table, out_uri: str | None, forward, count: tuple,
            batch_format: str = "pyarrow") -> tuple[dict, pa.Table | None]:
        """Compute ``batch``, write the output (one file), return ``(stats, forwarded batch or None)``."""
        t0 = time.perf_counter()
        if batch_format == "numpy":
            out = self.stage({c: batch.column(c).to_numpy(zero_copy_only=False) for c in batch.column_names})
        else:
            out = self.stage(batch)
        if out_uri and out.num_rows:
            write_table(out, join(out_uri, batch_file_name(batch)))
        nxt = forward(batch, out) if forward is not None else out
        stats = {"groups": batch_stats(out, *count), "seconds": time.perf_counter() - t0,
                 "forward_rows": 0 if nxt is None else nxt.num_rows}
        return stats, (nxt if nxt is not None and nxt.num_rows else None)


_ERR_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))\s*:\s*(.+)$")


def one_line(err: BaseException | str, limit: int = 300) -> str:
    """A one-line reason for a stage failure: the innermost ``SomeError: message`` line of the error text
    (Ray wraps the actor's traceback), else the first non-empty line; at most ``limit`` characters."""
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


@dataclass
class _Task:
    stage: str
    actor: int
    meta: dict
    next_ref: Any
    ready_check: bool = False


class StageRunner:
    """Runs every added stage at once until all fed batches are done or their stage failed.

    Args:
        max_restarts: restarts of a dead actor process (the constructor runs again), per actor.
        max_task_retries: retries of a batch whose actor died while computing it.
        env: environment variables for the actors (``QUIET_ENV`` unless verbose).
        on_result: ``(stage, meta, stats) -> None`` after each finished batch (progress).
        on_failure: ``(stage, reason) -> None`` when a stage fails.
        on_tick: ``() -> None`` called about every ``poll_s`` seconds while waiting.
        on_start: ``(stage) -> None`` when a stage's actors are started (its first batch is handed out).
    """

    def __init__(self, max_restarts: int = 1, max_task_retries: int = 1, env: dict | None = None,
                 on_result=None, on_failure=None, on_tick=None, on_start=None, poll_s: float = 0.5):
        self.max_restarts, self.max_task_retries, self.env = max_restarts, max_task_retries, env
        self.on_result, self.on_failure, self.on_tick, self.poll_s = on_result, on_failure, on_tick, poll_s
        self.on_start = on_start
        self.stages: dict[str, StageSpec] = {}
        self.queues: dict[str, deque] = {}
        self.actors: dict[str, list] = {}
        self.load: dict[str, list[int]] = {}
        self.inflight: dict[Any, _Task] = {}
        self.failed: dict[str, str] = {}
        self.started: dict[str, float] = {}
        self.is_ready: dict[str, list[bool]] = {}

    def add(self, spec: StageSpec) -> None:
        """Register a stage (its actors start with its first batch). Raises ValueError on a repeated name."""
        if spec.name in self.stages:
            raise ValueError(f"stage {spec.name!r} added twice; stages: {sorted(self.stages)}")
        self.stages[spec.name] = spec
        self.queues[spec.name] = deque()

    def feed(self, stage: str, batch, meta: dict | None = None) -> None:
        """Queue a batch (a ``pa.Table`` or an object ref of one) for ``stage``; ignored if it failed."""
        if stage not in self.stages:
            raise ValueError(f"unknown stage {stage!r}; stages: {sorted(self.stages)}")
        if stage not in self.failed:
            self.queues[stage].append((batch, dict(meta or {})))

    # -- actors ------------------------------------------------------------------------------------
    def _start(self, name: str) -> None:
        import ray

        spec = self.stages[name]
        opts: dict[str, Any] = {"num_cpus": spec.num_cpus, "max_restarts": self.max_restarts,
                                "max_task_retries": self.max_task_retries, "max_concurrency": spec.concurrency}
        if spec.num_gpus:
            opts["num_gpus"] = spec.num_gpus
        if spec.accelerator_type:
            opts["accelerator_type"] = spec.accelerator_type
        cls = ray.remote(StageActor).options(**opts)
        # no more actors than batches queued (an actor without a batch would load a model for nothing);
        # a stage fed later (the judge) starts its full pool: more batches are on their way
        fed = any(s.then == name for s in self.stages.values())
        n = spec.replicas if fed else max(1, min(spec.replicas, len(self.queues[name])))
        self.actors[name] = [cls.remote(spec.cls, spec.kwargs, self.env) for _ in range(n)]
        self.load[name] = [0] * n
        self.is_ready[name] = [False] * n
        for i, a in enumerate(self.actors[name]):  # batches go to an actor once its constructor ran
            self.inflight[a.ready.options(max_task_retries=0).remote()] = _Task(name, i, {}, None, ready_check=True)
        self.started[name] = time.monotonic()
        if self.on_start:
            self.on_start(name)

    def _submit(self) -> None:
        for name, q in self.queues.items():
            spec = self.stages[name]
            while q and name not in self.failed:
                if name not in self.actors:
                    self._start(name)
                load, ok = self.load[name], self.is_ready[name]
                # in_flight is the cap of a serial actor (in_flight=1: one batch at a time, as a stage that may
                # crash needs); a concurrent one also keeps a batch waiting behind its threads
                cap = spec.in_flight if spec.concurrency == 1 else max(spec.in_flight, spec.concurrency + 1)
                free = [j for j in range(len(load)) if ok[j] and load[j] < cap]
                if not free:
                    break
                i = min(free, key=load.__getitem__)
                batch, meta = q.popleft()
                out = spec.out_uri.format(**meta) if spec.out_uri else None
                count = (spec.group_col, spec.error_col, spec.tokens_col)
                stats_ref, next_ref = self.actors[name][i].run.options(num_returns=2).remote(batch, out, spec.forward, count,
                                                                                             spec.batch_format)
                self.inflight[stats_ref] = _Task(name, i, meta, next_ref)
                load[i] += 1

    def fail(self, name: str, reason: str) -> None:
        """Mark ``name`` failed: drop its queue, stop its actors, report ``reason`` once."""
        import ray

        if name in self.failed:
            return
        self.failed[name] = reason
        self.queues[name].clear()
        for a in self.actors.get(name, []):
            ray.kill(a, no_restart=True)
        if self.on_failure:
            self.on_failure(name, reason)

    def _done(self, ref) -> None:
        import ray

        task = self.inflight.pop(ref)
        if task.stage in self.failed:
            return
        if task.ready_check:
            try:
                ray.get(ref)
            except ray.exceptions.RayError as e:
                self.fail(task.stage, one_line(e))
                return
            self.is_ready[task.stage][task.actor] = True
            return
        self.load[task.stage][task.actor] -= 1
        try:
            stats = ray.get(ref)
        except ray.exceptions.RayError as e:  # the stage raised, or its actor died past max_restarts
            self.fail(task.stage, one_line(e))
            return
        if self.on_result:
            self.on_result(task.stage, task.meta, stats)
        then = self.stages[task.stage].then
        if then and stats["forward_rows"]:
            self.feed(then, task.next_ref, task.meta)
        self._release_drained()

    def _busy(self, name: str) -> bool:
        return bool(self.queues[name]) or any(t.stage == name for t in self.inflight.values())

    def _release_drained(self) -> None:
        """Stop the actors of every stage that has nothing left and nothing more to come (its feeders are
        drained too), so a finished config hands its GPUs to the configs still waiting for them."""
        import ray

        for name in [n for n in self.actors if n not in self.failed]:
            feeders = [s.name for s in self.stages.values() if s.then == name]
            if self._busy(name) or any(self._busy(f) or f in self.actors for f in feeders):
                continue
            for a in self.actors.pop(name):
                ray.kill(a, no_restart=True)

    def run(self) -> dict[str, str]:
        """Run until nothing is queued or in flight; returns ``{failed stage: one-line reason}``."""
        import ray

        last_tick = 0.0
        try:
            while True:
                self._submit()
                if not self.inflight:
                    if not any(self.queues.values()):
                        break
                    continue
                ready, _ = ray.wait(list(self.inflight), num_returns=1, timeout=self.poll_s)
                if ready:
                    more, _ = ray.wait([r for r in self.inflight if r not in ready], num_returns=len(self.inflight) - 1,
                                       timeout=0) if len(self.inflight) > 1 else ([], [])
                    for r in [*ready, *more]:
                        self._done(r)
                now = time.monotonic()
                if self.on_tick and now - last_tick >= self.poll_s:
                    last_tick = now
                    self.on_tick()
        finally:
            self.shutdown()
        return dict(self.failed)

    def shutdown(self) -> None:
        """Stop every actor (frees their resources for the next phase)."""
        import ray

        for actors in self.actors.values():
            for a in actors:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:  # already dead
                    pass
        self.actors.clear()


# -- progress ------------------------------------------------------------------------------------------
@dataclass
class _Line:
    total: int
    done: int = 0
    errors: int = 0
    tokens: int = 0
    new: int = 0
    start: float | None = None
    last: float | None = None
    failed: str | None = None


class Progress:
    """Live progress lines, one per label (``"<config> <mode>"`` and ``"judge"``).

    Each line: rows done / total, errors, tokens/s and an ETA from the rate since the label's first
    batch was submitted. On a terminal the block is redrawn in place every ``interval`` seconds; elsewhere
    (logs, ``ray job submit``) it is printed every ``log_interval`` seconds and once at the end.

    Args:
        stream: where to print (default stdout).
        clock: monotonic seconds (tests inject one).
        tty: force terminal / log mode (default: ``stream.isatty()``).
    """

    def __init__(self, stream=None, clock=time.monotonic, tty: bool | None = None, interval: float = 0.5,
                 log_interval: float = 30.0):
        self.stream = stream or sys.stdout
        self.clock = clock
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval, self.log_interval = interval, log_interval
        self.lines: dict[str, _Line] = {}
        self._drawn = 0
        self._last_draw = float("-inf")
        self._t0 = clock()

    def add(self, label: str, total: int, done: int = 0) -> None:
        self.lines[label] = _Line(total=total, done=done)

    def start(self, label: str) -> None:
        ln = self.lines[label]
        if ln.start is None:
            ln.start = self.clock()

    def update(self, label: str, rows: int, errors: int = 0, tokens: int = 0) -> None:
        ln = self.lines[label]
        if ln.start is None:
            ln.start = self.clock()
        ln.done += rows
        ln.new += rows
        ln.errors += errors
        ln.tokens += tokens
        ln.last = self.clock()

    def shrink(self, label: str, rows: int) -> None:
        """Lower a total (rows that will not come, e.g. engine errors are not judged)."""
        self.lines[label].total = max(self.lines[label].done, self.lines[label].total - rows)

    def fail(self, label: str, reason: str) -> None:
        self.lines[label].failed = reason

    def line(self, label: str) -> str:
        """One progress line, e.g. ``qwen NT   120/200  60%  err 3  412 tok/s  ETA 35s``."""
        ln = self.lines[label]
        width = max(len(x) for x in self.lines)
        head = f"  {label:<{width}}  {ln.done:>6}/{ln.total:<6} {100 * ln.done / ln.total if ln.total else 100:3.0f}%"
        if ln.failed:
            return f"{head}  FAILED: {ln.failed}"
        parts = [head, f"err {ln.errors}"]
        now = self.clock()
        if ln.start is not None and ln.new:
            elapsed = max((ln.last or now) - ln.start, 1e-9)
            if ln.tokens:
                parts.append(f"{ln.tokens / elapsed:6.1f} tok/s")
            rate = ln.new / elapsed
            left = ln.total - ln.done
            parts.append("done" if left <= 0 else f"ETA {_dur(left / rate)}")
        elif ln.done >= ln.total:
            parts.append("done")
        else:
            parts.append("starting" if ln.start is not None else "waiting")
        return "  ".join(parts)

    def render(self) -> list[str]:
        return [f"[{_dur(self.clock() - self._t0)}]"] + [self.line(k) for k in self.lines]

    def tick(self, force: bool = False) -> None:
        """Redraw (terminal) or print (log) the block when its interval has passed, or when ``force``."""
        now = self.clock()
        if not force and now - self._last_draw < (self.interval if self.tty else self.log_interval):
            return
        self._last_draw = now
        lines = self.render()
        if self.tty and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()
        self._drawn = len(lines) if self.tty else 0

    def note(self, text: str) -> None:
        """Print a line above the block (a failure, a phase change) without breaking the redraw."""
        if self.tty and self._drawn:
            self.stream.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0
        self.stream.write(text + "\n")
        self.stream.flush()
        self._last_draw = float("-inf")


def _dur(s: float) -> str:
    s = int(round(max(s, 0)))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s}s"
