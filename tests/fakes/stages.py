"""Stage classes for runner tests: one that doubles a column, one whose constructor raises, one whose
process dies on a marked row (``os._exit``), one that raises in ``__call__``, and one that waits (like a
network-bound engine) and records when each batch ran.

Ray workers cannot import ``tests.fakes``; tests register this module with
``ray.cloudpickle.register_pickle_by_value`` so the classes travel by value.
"""
from __future__ import annotations

import os
import threading
import time

import pyarrow as pa


class Double:
    """Output rows ``{"sample_id", "config", "mode", "x": 2 * x, "error": None}``."""

    def __init__(self, tag: str = ""):
        self.tag = tag

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = batch.to_pylist()
        return pa.Table.from_pylist([{"sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"],
                                      "x": 2 * r["x"], "error": None} for r in rows])


class BrokenInit:
    """An engine that does not start."""

    def __init__(self, tag: str = ""):
        raise RuntimeError("engine refused gpu_memory_utilization=1.5 (fake)")

    def __call__(self, batch: pa.Table) -> pa.Table:  # pragma: no cover
        return batch


class CrashOn:
    """Kills its own process on a row whose ``x`` is ``bad``; counts its starts in ``starts_file``."""

    def __init__(self, bad: int, starts_file: str):
        self.bad = bad
        with open(starts_file, "a") as f:
            f.write(f"{os.getpid()}\n")

    def __call__(self, batch: pa.Table) -> pa.Table:
        if self.bad in batch.column("x").to_pylist():
            os._exit(1)
        return Double()(batch)


class RaiseOn:
    """Raises ValueError in ``__call__`` on every batch."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        raise ValueError("column 'x' holds a string (fake)")


class Waits:
    """Sleeps ``seconds`` per batch (a network-bound engine) and records each row's batch start/end
    (``time.time()``) and thread, so a test can see which batches ran at the same time."""

    def __init__(self, seconds: float = 0.5):
        self.seconds = seconds

    def __call__(self, batch: pa.Table) -> pa.Table:
        t0 = time.time()
        time.sleep(self.seconds)
        t1 = time.time()
        return pa.Table.from_pylist([{"sample_id": r["sample_id"], "config": r["config"], "mode": r["mode"],
                                      "x": r["x"], "t0": t0, "t1": t1, "thread": threading.get_ident(),
                                      "error": None} for r in batch.to_pylist()])
