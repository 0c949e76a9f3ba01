"""Ray Data stage: verify and pattern-judge Response rows (wraps ``howeval.judges.pipeline.Judger``).

Input: Response columns (optionally ``image_data_urls``, every image of the sample as data URLs, or
``images``, their bytes, for image-aware judges). Output: Judgment rows.
"""
from __future__ import annotations

import pyarrow as pa

from howeval.config import JudgesConfig, check_config
from howeval.judges.pipeline import Judger
from howeval.records import JUDGMENT_SCHEMA, check_columns, conform

REQUIRED_COLUMNS = {
    "sample_id": "item id", "config": "model config", "mode": "NT/T", "question": "prompt",
    "response": "y_m to judge", "answer": "gold answer", "answer_type": "verifier type",
    "error": "engine error or null", "truncated": "cut off in the reasoning channel", "response_hash": "cache key",
}


class JudgeStage:
    """Stage class of the ``judge`` stage (``howeval.plugins.patterneval.judge_stage``).

    Args:
        judges: the sweep's ``judges:`` block (pickled once per actor).
        only: pattern-judge names to run (None = all).
        cache_dir: the write-ahead judge cache folder (``howeval.judges.cache``), or None.

    Raises:
        TypeError: ``judges`` is not a ``JudgesConfig`` (a dict is not re-validated here).
    """

    def __init__(self, judges: JudgesConfig, only: list[str] | None = None, cache_dir: str | None = None):
        check_config(judges, JudgesConfig, "judges")
        self.judger = Judger(judges, only=only, cache_dir=cache_dir)

    def __call__(self, batch: pa.Table) -> pa.Table:
        check_columns(batch.column_names, REQUIRED_COLUMNS, "JudgeStage")
        rows = batch.to_pylist()
        col = next((c for c in ("image_data_urls", "image_data_url") if c in batch.column_names), None)
        images = [r.get(col) for r in rows] if col else None  # every image of the sample (or one)
        if images is None and "images" in batch.column_names:  # image bytes read by the stage (read_images)
            from howeval.judges.images import judge_image_urls

            images = [judge_image_urls(r.get("images"), r["sample_id"]) or None for r in rows]
        return conform(self.judger.judge(rows, images), JUDGMENT_SCHEMA)
