"""Length analysis of SPEC section 1 (PatternEval Fig. 5 and Fig. 6): Trigger by length sextile, and
Pearson r of mean length vs Trigger over model-by-correctness aggregates, per mode.

Response length is the length of y_m (``response``; the reasoning channel is never counted), in
whitespace-separated words by default (``unit="chars"`` for characters). A row enters when it has a
response and known labels; rows left out are counted by reason in ``excluded`` (engine error,
truncated, no labels = judge error or not judged yet), never dropped silently.

Correctness has three values: ``correct``, ``wrong`` and ``unresolved`` (``correct`` is null: the
verifier could not decide). Unresolved rows get their own group (``NT/unresolved``), so a run whose
verdicts are mostly unresolved still shows its Trigger by length; they never enter Pearson r (the
paper's aggregates are correct vs incorrect), and the number of unresolved aggregates left out is
reported.

- **Length bins** (Fig. 6): within each mode x correctness group (all configs pooled) rows are ranked
  by length (ties broken by input order) and split into ``n_bins`` (default 6: sextiles) groups of
  equal size (sizes differ by at most one). Each bin reports its length range, mean length and Trigger.
- **Correlation** (Fig. 5): one aggregate per (config, mode, correctness): mean length and Trigger;
  Pearson r (and its two-sided p) over the correct/wrong aggregates with at least ``min_rows`` rows, for
  all modes pooled (``correlation``) and per mode (``correlation_by_mode``). r is None with fewer than
  3 aggregates or a constant side.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
from scipy import stats as _st

from howeval.metrics.patterneval import trigger_of
from howeval.records import MODES

UNITS = ("words", "chars")

CORRECTNESS = ("correct", "wrong", "unresolved")
"""Correctness groups of the length analysis: ``correct`` true, false, or null (unresolved)."""

EXCLUSION_REASONS = ("error", "truncated", "unlabelled")
"""Why a row is left out of the length analysis: engine error, truncated (no y_m), no pattern labels."""


def response_length(text: str | None, unit: str = "words") -> int:
    """Length of a response: whitespace words (default) or characters.

    >>> response_length("The answer is 5."), response_length("ab c", "chars")
    (4, 4)
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    text = text or ""
    return len(text.split()) if unit == "words" else len(text)


def correctness(row: dict) -> str:
    """``"correct"``, ``"wrong"`` or ``"unresolved"`` (``correct`` null) for a row.

    >>> correctness({"correct": True}), correctness({"correct": False}), correctness({"correct": None})
    ('correct', 'wrong', 'unresolved')
    """
    c = row.get("correct")
    return "unresolved" if c is None else ("correct" if c else "wrong")


def exclusion_reason(row: dict) -> str | None:
    """Why ``row`` is left out of the length analysis (one of :data:`EXCLUSION_REASONS`), or None."""
    if row.get("error"):
        return "error"
    if row.get("truncated") or row.get("response") is None:
        return "truncated"
    if trigger_of(row) is None:
        return "unlabelled"
    return None


def _usable(rows: list[dict], unit: str) -> list[tuple[dict, int, bool]]:
    return [(r, response_length(r["response"], unit), bool(trigger_of(r))) for r in rows if exclusion_reason(r) is None]


def excluded_counts(rows: list[dict]) -> dict:
    """``{reason: count}`` of the rows left out, for every reason in :data:`EXCLUSION_REASONS` (zeros kept)."""
    c = Counter(exclusion_reason(r) for r in rows)
    return {k: c.get(k, 0) for k in EXCLUSION_REASONS}


def group_name(mode: str, correct: bool | str | None) -> str:
    """``"T/wrong"`` style group name; ``correct`` is a bool, None (unresolved) or a :data:`CORRECTNESS` name."""
    if not isinstance(correct, str):
        correct = correctness({"correct": correct})
    return f"{mode}/{correct}"


def length_bins(rows: list[dict], n_bins: int = 6, unit: str = "words") -> dict:
    """Trigger by ``n_bins`` equal-count length bins per mode x correctness group.

    Returns ``{group: [{"bin": 1.., "n", "min_len", "max_len", "mean_len", "trigger"}, ...]}`` with
    groups named like ``"T/wrong"`` or ``"NT/unresolved"``, in the order NT before T and correct, wrong,
    unresolved; a group with fewer rows than bins gets one bin per row.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    groups: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for r, n, t in _usable(rows, unit):
        groups[group_name(r["mode"], correctness(r))].append((n, t))
    out = {}
    for g in [group_name(m, c) for m in MODES for c in CORRECTNESS]:
        items = groups.get(g)
        if not items:
            continue
        lens = np.asarray([n for n, _ in items], dtype=float)
        trig = np.asarray([t for _, t in items], dtype=float)
        order = np.argsort(lens, kind="stable")
        bins = []
        for i, idx in enumerate(np.array_split(order, min(n_bins, len(items))), 1):
            bins.append({"bin": i, "n": int(idx.size), "min_len": int(lens[idx].min()), "max_len": int(lens[idx].max()),
                         "mean_len": float(lens[idx].mean()), "trigger": float(trig[idx].mean())})
        out[g] = bins
    return out


def pearson(x, y) -> tuple[float | None, float | None]:
    """Pearson r and its two-sided p; ``(None, None)`` with < 3 points or a constant side.

    >>> r, _ = pearson([1, 2, 3], [2, 4, 5]); round(r, 4)
    0.982
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size != y.size:
        raise ValueError(f"x and y differ in length: {x.size} vs {y.size}")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    res = _st.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


def _r_over(points: list[dict]) -> dict:
    used = [p for p in points if p["used"]]
    r, pv = pearson([p["mean_len"] for p in used], [p["trigger"] for p in used])
    return {"r": r, "p_value": pv, "n_points": len(used)}


def length_correlation(rows: list[dict], unit: str = "words", min_rows: int = 1) -> dict:
    """Pearson r between mean response length and Trigger over (config, mode, correctness) aggregates.

    Returns ``{"r", "p_value", "n_points", "by_mode": {mode: {"r", "p_value", "n_points"}},
    "n_unresolved_points", "points": [{"config", "mode", "correct", "correctness", "n", "mean_len",
    "trigger", "used"}]}``. ``correct`` is True / False / None (unresolved). Unresolved aggregates and
    aggregates with fewer than ``min_rows`` rows are listed with ``used = False`` and enter no r.
    """
    agg: dict[tuple, list[tuple[int, bool]]] = defaultdict(list)
    for r, n, t in _usable(rows, unit):
        agg[(str(r["config"]), r["mode"], correctness(r))].append((n, t))
    points = []
    for (cfg, mode, corr), items in sorted(agg.items()):
        points.append({"config": cfg, "mode": mode, "correct": {"correct": True, "wrong": False}.get(corr),
                       "correctness": corr, "n": len(items),
                       "mean_len": float(np.mean([n for n, _ in items])),
                       "trigger": float(np.mean([t for _, t in items])),
                       "used": corr != "unresolved" and len(items) >= min_rows})
    out = _r_over(points)
    out["by_mode"] = {m: _r_over([p for p in points if p["mode"] == m]) for m in MODES
                      if any(p["mode"] == m for p in points)}
    out["n_unresolved_points"] = sum(p["correctness"] == "unresolved" for p in points)
    out["points"] = points
    return out


def length_analysis(rows: list[dict], n_bins: int = 6, unit: str = "words", min_rows: int = 1) -> dict:
    """Both analyses: ``{"unit", "n_bins", "n_used", "excluded": excluded_counts(rows), "bins":
    length_bins(...), "correlation": length_correlation(...)}``."""
    return {"unit": unit, "n_bins": n_bins, "n_used": len(_usable(rows, unit)), "excluded": excluded_counts(rows),
            "bins": length_bins(rows, n_bins, unit), "correlation": length_correlation(rows, unit, min_rows)}
