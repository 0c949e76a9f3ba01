"""The CRYSTAL benchmark's run-level pieces: its ``crystal:`` settings block and per config x mode summaries.

The step metrics themselves (greedy matching, Match F1, LIS / Kendall order, Ordered Match F1) are in
:mod:`howeval.metrics.steps` (SPEC.md section 3).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from howeval.config import CrystalConfig, validate


def precision_recall_ratio(precision: float | None, recall: float | None) -> float | None:
    """Precision / Recall of one config x mode (CRYSTAL's cherry-picking analysis: "19 of 20 models have
    Precision >> Recall (1.2x-7.2x)", CRYSTAL key findings; docs/metrics.md §3): the ratio of the mean step
    precision to the mean step recall. Above 1 means the model writes few, precise steps and skips reference
    steps. None when either is missing or recall is 0 (undefined, not infinite).

    >>> precision_recall_ratio(0.925, 0.479) > 1.9, precision_recall_ratio(0.5, 0.0)
    (True, None)
    """
    if precision is None or recall is None or recall <= 0:
        return None
    return precision / recall


def summarize_step_rows(rows: list[dict], correct: Mapping[tuple, bool | None] | None = None) -> dict:
    """Mean step metrics per config x mode: ``{config: {mode: {n, precision, recall, f1, lis, ordered_f1,
    pr_ratio, accuracy, n_verdicts, tau, alpha, order, embedder}}}``.

    ``pr_ratio`` is :func:`precision_recall_ratio` of the means. ``accuracy`` is the answer accuracy of the
    same responses (CRYSTAL's main table puts Accuracy beside Match F1): ``correct`` maps a response key
    ``(sample_id, config, mode, response_hash)`` to its verdict (True / False, None = unresolved);
    ``accuracy`` = correct / responses with a verdict (``n_verdicts``), None when no step row has one (or
    ``correct`` is None).
    """
    groups: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[r["config"]][r["mode"]].append(r)
    out: dict = {}
    for c, modes in sorted(groups.items()):
        out[c] = {}
        for m, rs in sorted(modes.items()):
            mean = lambda k, rs=rs: sum(x[k] for x in rs) / len(rs)  # noqa: E731
            verdicts = [v for v in ((correct or {}).get((x["sample_id"], x["config"], x["mode"], x["response_hash"]))
                                    for x in rs) if v is not None]
            p, rec = mean("step_precision"), mean("step_recall")
            out[c][m] = {"n": len(rs), "precision": p, "recall": rec,
                         "f1": mean("step_f1"), "lis": mean("step_lis"), "ordered_f1": mean("step_ordered_f1"),
                         "pr_ratio": precision_recall_ratio(p, rec),
                         "accuracy": sum(map(bool, verdicts)) / len(verdicts) if verdicts else None,
                         "n_verdicts": len(verdicts),
                         "tau": rs[0]["tau"], "alpha": rs[0]["alpha"], "order": rs[0]["order"],
                         "embedder": rs[0]["embedder"]}
    return out


def cherry_picking(summary: Mapping[str, Mapping[str, Mapping]]) -> dict:
    """CRYSTAL's cherry-picking count over a :func:`summarize_step_rows` result: how many config x mode rows
    have Precision > Recall, and the range of their ratios (the paper: 19 of 20 models, 1.2x-7.2x).

    Returns ``{"n": rows with a ratio, "precision_above_recall": count, "min_ratio", "max_ratio"}`` (the
    range over the rows above 1; None when there is none).

    >>> cherry_picking({"a": {"NT": {"pr_ratio": 1.5}, "T": {"pr_ratio": 0.8}}, "b": {"NT": {"pr_ratio": None}}})
    {'n': 2, 'precision_above_recall': 1, 'min_ratio': 1.5, 'max_ratio': 1.5}
    """
    ratios = [x["pr_ratio"] for modes in summary.values() for x in modes.values() if x.get("pr_ratio") is not None]
    above = [r for r in ratios if r > 1]
    return {"n": len(ratios), "precision_above_recall": len(above),
            "min_ratio": min(above) if above else None, "max_ratio": max(above) if above else None}


CRYSTAL_DEFAULTS = CrystalConfig()
"""Defaults of a sweep's ``crystal:`` block (SPEC 3: τ 0.35, α 0.5, LIS order; bundled embedder)."""

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
"""The embedder name recorded on step rows when the ``crystal:`` block names none (the bundled model)."""


def crystal_settings(block: CrystalConfig | Mapping | None) -> CrystalConfig:
    """A sweep's ``crystal:`` block as a :class:`CrystalConfig`: the typed block itself, a plain mapping
    validated over the defaults, or :data:`CRYSTAL_DEFAULTS` for None.

    Raises:
        ConfigError: an unknown key or a bad value in a mapping (names the key and the rule).
    """
    if isinstance(block, CrystalConfig):
        return block
    if block is None:
        return CRYSTAL_DEFAULTS
    return validate(CrystalConfig, dict(block), "crystal")
