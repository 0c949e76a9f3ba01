"""Stage class of the ``taskacc`` stage (``howeval.plugins.taskacc``): each response scored by its benchmark's own answer
criterion (``howeval.benchmarks.taskacc.score_rows``; Table 6 of the PatternEval/PatternRL paper)."""
from __future__ import annotations

import pyarrow as pa

from howeval.benchmarks.taskacc import TASK_INPUT_SCHEMA, TASK_SCORE_SCHEMA, score_rows
from howeval.records import conform

REQUIRED_COLUMNS: tuple[str, ...] = tuple(TASK_INPUT_SCHEMA.names)
"""Columns a batch must carry (:data:`howeval.benchmarks.taskacc.TASK_INPUT_SCHEMA`)."""


class TaskScoreStage:
    """``TaskScoreStage()(batch) -> scores``: ``batch`` in ``TASK_INPUT_SCHEMA`` columns, one
    ``TASK_SCORE_SCHEMA`` row per input row (score null when the criterion could not decide). Pure CPU and
    stateless: the plug-in runs it as Ray tasks (``replicas=0``)."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        missing = [c for c in REQUIRED_COLUMNS if c not in batch.column_names]
        if missing:
            raise ValueError(f"TaskScoreStage: batch lacks columns {missing} (present: {batch.column_names})")
        return conform(score_rows(batch.to_pylist()), TASK_SCORE_SCHEMA)
