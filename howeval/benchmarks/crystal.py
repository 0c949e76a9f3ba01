"""The CRYSTAL benchmark's run-level pieces: its ``crystal:`` settings block and per config x mode summaries.

The step metrics themselves (greedy matching, Match F1, LIS / Kendall order, Ordered Match F1) are in
:mod:`howeval.metrics.steps` (SPEC.md section 3).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

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
