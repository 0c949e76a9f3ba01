"""The CRYSTAL benchmark's run-level pieces: its ``crystal:`` settings block and per config x mode summaries.

The step metrics themselves (greedy matching, Match F1, LIS / Kendall order, Ordered Match F1) are in
:mod:`howeval.metrics.steps` (SPEC.md section 3).
"""
from __future__ import annotations

from collections import defaultdict

from howeval.config import CrystalConfig, validate


def summarize_step_rows(rows: list[dict]) -> dict:
    """Mean step metrics per config x mode: ``{config: {mode: {n, precision, recall, f1, lis, ordered_f1}}}``."""
    groups: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[r["config"]][r["mode"]].append(r)
    out: dict = {}
    for c, modes in sorted(groups.items()):
        out[c] = {}
        for m, rs in sorted(modes.items()):
            mean = lambda k, rs=rs: sum(x[k] for x in rs) / len(rs)  # noqa: E731
            out[c][m] = {"n": len(rs), "precision": mean("step_precision"), "recall": mean("step_recall"),
                         "f1": mean("step_f1"), "lis": mean("step_lis"), "ordered_f1": mean("step_ordered_f1"),
                         "tau": rs[0]["tau"], "alpha": rs[0]["alpha"], "order": rs[0]["order"],
                         "embedder": rs[0]["embedder"]}
    return out


CRYSTAL_DEFAULTS = CrystalConfig().model_dump()
"""Defaults of a sweep's ``crystal:`` block (SPEC 3: τ 0.35, α 0.5, LIS order; bundled embedder)."""


def crystal_settings(block: CrystalConfig | dict | None) -> dict:
    """A sweep's ``crystal:`` block (typed, a plain mapping, or None = the defaults) as a dict over
    :data:`CRYSTAL_DEFAULTS`.

    Raises:
        ConfigError: an unknown key or a bad value (names the key and the rule).
    """
    if isinstance(block, CrystalConfig):
        return block.model_dump()
    return validate(CrystalConfig, dict(block or {}), "crystal").model_dump()
