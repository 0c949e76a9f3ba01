"""howeval.benchmarks.crystal: the per config x mode summary with the answer Accuracy and the Precision/Recall
ratio (CRYSTAL's cherry-picking analysis, issue 31)."""
from __future__ import annotations

import pytest

from howeval.benchmarks.crystal import cherry_picking, precision_recall_ratio, summarize_step_rows


def _row(sid, mode, p, r, h="h"):
    return {"sample_id": sid, "config": "c", "mode": mode, "response_hash": h, "step_precision": p, "step_recall": r,
            "step_f1": 0.0, "step_lis": 1.0, "step_ordered_f1": 0.0, "tau": 0.35, "alpha": 0.5, "order": "lis",
            "embedder": "e"}


def test_ratio_of_means_not_mean_of_ratios():
    rows = [_row("a", "NT", 1.0, 0.5), _row("b", "NT", 0.5, 0.0)]  # a per-row ratio is undefined for b
    s = summarize_step_rows(rows)["c"]["NT"]
    assert s["precision"] == pytest.approx(0.75) and s["recall"] == pytest.approx(0.25)
    assert s["pr_ratio"] == pytest.approx(3.0)
    assert s["accuracy"] is None and s["n_verdicts"] == 0  # no verdicts given


def test_accuracy_joins_verdicts_by_response_key():
    rows = [_row("a", "T", 0.5, 0.5), _row("b", "T", 0.5, 0.5), _row("c", "T", 0.5, 0.5), _row("d", "T", 0.5, 0.5)]
    verdicts = {("a", "c", "T", "h"): True, ("b", "c", "T", "h"): False, ("c", "c", "T", "h"): None,
                ("d", "c", "T", "other-hash"): True}  # d's verdict is for another response text: not this one
    s = summarize_step_rows(rows, verdicts)["c"]["T"]
    assert s["n_verdicts"] == 2 and s["accuracy"] == pytest.approx(0.5)
    assert s["pr_ratio"] == pytest.approx(1.0)


def test_precision_recall_ratio_and_cherry_picking_paper_rows():
    # CRYSTAL's main table: GPT-5 P 0.925 / R 0.479; Gemini 2.5 Flash 0.701 / 0.765 (the one model below 1)
    assert precision_recall_ratio(0.925, 0.479) == pytest.approx(1.931, abs=1e-3)
    assert precision_recall_ratio(0.3, 0.0) is None and precision_recall_ratio(None, 0.5) is None
    summary = {"gpt-5": {"T": {"pr_ratio": precision_recall_ratio(0.925, 0.479)}},
               "gemini-2.5-flash": {"T": {"pr_ratio": precision_recall_ratio(0.701, 0.765)}},
               "gemma3-4b": {"NT": {"pr_ratio": precision_recall_ratio(0.878, 0.506)}}}
    c = cherry_picking(summary)
    assert c["n"] == 3 and c["precision_above_recall"] == 2
    assert c["min_ratio"] == pytest.approx(0.878 / 0.506) and c["max_ratio"] == pytest.approx(0.925 / 0.479)
    assert cherry_picking({}) == {"n": 0, "precision_above_recall": 0, "min_ratio": None, "max_ratio": None}
