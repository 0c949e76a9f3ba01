"""Ray Data stage: CRYSTAL step scores per row, from a pool of step-embedder actors.

A thin wrapper (STYLE rule 3): ``StepScoreUDF`` holds one ``howeval.embed.StepEmbedder`` per actor
(loaded once in ``__init__``) and calls ``StepEmbedder.score_items`` on each batch; the metrics
themselves live in ``howeval.benchmarks.crystal`` (SPEC.md section 3).

Column flow (one row)::

    in : pred_steps=["There are three consoles", "The middle one is smallest"],
         ref_steps=["Three consoles sit on the desk", "The middle console is the smallest", "Answer C"]
    out: + step_matched=2, step_precision=1.0, step_recall=0.667, step_f1=0.8,
           step_lis=1.0, step_ordered_f1=0.8

Run by the ``crystal`` pipeline (``howeval.plugins.crystal.Crystal``; resources from the sweep's ``crystal:``).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from howeval.config import CrystalConfig, check_config
from howeval.records import check_columns

PRED_STEPS = "pred_steps"
REF_STEPS = "ref_steps"
STEP_PRECISION = "step_precision"
STEP_RECALL = "step_recall"
STEP_F1 = "step_f1"
STEP_LIS = "step_lis"
STEP_ORDERED_F1 = "step_ordered_f1"
STEP_MATCHED = "step_matched"


class StepScoreUDF:
    """Stage class of the ``crystal`` stage (``batch_format="numpy"``; one embedder per actor).

    Args:
        settings: the sweep's ``crystal:`` block (``howeval.config.CrystalConfig``, checked at load): ``tau``
            (strict matching threshold, SPEC section 3), ``alpha`` (order weight of Ordered Match F1, in
            [0, 1]), ``order`` (``"lis"`` or ``"kendall"``), ``embedder`` (a local sentence-transformers
            folder; None = the bundled all-MiniLM-L6-v2). None = the defaults.
        batch_size: encoder batch size (>= 1).

    Raises:
        TypeError: ``settings`` is not a ``CrystalConfig`` (a dict is not re-validated here).
    """

    REQUIRED_COLUMNS: dict[str, str] = {
        PRED_STEPS: "list[str]: predicted steps of the response (howeval.parsing.steps.response_steps)",
        REF_STEPS: "list[str]: reference steps of the sample (non-empty)",
    }
    OUTPUT_COLUMNS: tuple[str, ...] = (STEP_PRECISION, STEP_RECALL, STEP_F1, STEP_LIS, STEP_ORDERED_F1, STEP_MATCHED)

    def __init__(self, settings: CrystalConfig | None = None, batch_size: int = 64):
        from howeval.embed import StepEmbedder

        settings = CrystalConfig() if settings is None else settings
        check_config(settings, CrystalConfig, "settings")
        self.tau, self.alpha, self.order = settings.tau, settings.alpha, settings.order
        self.embedder = StepEmbedder(model_path=settings.embedder, batch_size=batch_size)

    @classmethod
    def check_columns(cls, batch: Mapping[str, Any]) -> None:
        """Raise ValueError naming the missing required columns and the columns present."""
        check_columns(batch, cls.REQUIRED_COLUMNS, cls.__name__)

    def __call__(self, batch: dict[str, np.ndarray]) -> pa.Table:
        self.check_columns(batch)
        items = [(list(p), list(r)) for p, r in zip(batch[PRED_STEPS], batch[REF_STEPS])]
        scores = self.embedder.score_items(items, taus=(self.tau,), alphas=(self.alpha,), order=self.order)
        rows = scores[(self.tau, self.alpha)]
        out = dict(batch)
        out[STEP_PRECISION] = np.array([s.precision for s in rows], dtype=np.float64)
        out[STEP_RECALL] = np.array([s.recall for s in rows], dtype=np.float64)
        out[STEP_F1] = np.array([s.f1 for s in rows], dtype=np.float64)
        out[STEP_LIS] = np.array([s.lis for s in rows], dtype=np.float64)
        out[STEP_ORDERED_F1] = np.array([s.ordered_f1 for s in rows], dtype=np.float64)
        out[STEP_MATCHED] = np.array([s.matched for s in rows], dtype=np.int64)
        # Ragged list columns (object arrays of arrays) go back as Arrow lists, not pickled objects.
        return pa.Table.from_pydict({k: [list(x) if isinstance(x, (np.ndarray, list, tuple)) else x for x in v]
                                     if v.dtype == object else v for k, v in out.items()})
