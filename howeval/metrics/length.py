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

- **Length bins** (Fig. 6): common edges for every group, the sextiles (``n_bins``, default 6) of the
  lengths of all usable rows pooled, so bin k covers the same length range in every mode x correctness
  group (all configs pooled) and groups are compared "within comparable length ranges". A group with
  fewer than ``MIN_ROWS_PER_BIN * n_bins`` rows is not cut (listed in ``too_small``). Each bin reports its
  edges, its rows' mean length and Trigger (None for a bin the group has no row in).
- **Correlation** (Fig. 5): one aggregate per (config, mode, correctness): mean length and Trigger;
  Pearson r (and its two-sided p) over the correct/wrong aggregates with at least ``min_rows`` rows, per
  mode only (``by_mode``): never pooled across modes. r is None with fewer than 3 aggregates or a
  constant side.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

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


MIN_ROWS_PER_BIN = 2
"""A group is cut into bins only when it has at least this many rows per bin (12 for sextiles); a smaller
group gets no bins (it is listed in ``too_small``): six bins of one or two responses are noise."""


def length_edges(rows: list[dict], n_bins: int = 6, unit: str = "words") -> list[float]:
    """Common bin edges for every group: the ``k / n_bins`` quantiles of the lengths of all usable rows
    (all modes and correctness groups pooled), deduplicated, so bin k covers the same lengths in every
    group (the paper compares Trigger "within comparable length ranges", Fig. 6).

    Returns ``[e_0, ..., e_k]`` (k <= n_bins; fewer when lengths tie): bin i holds lengths in
    ``[e_{i-1}, e_i)``, the last bin also ``e_k``. [] when there are no usable rows.

    >>> rows = [{"mode": "NT", "correct": True, "response": "w " * n, "cot": False, "rep": False,
    ...          "con": False, "pr": False} for n in range(1, 13)]
    >>> [round(e, 2) for e in length_edges(rows, n_bins=3)]
    [1.0, 4.67, 8.33, 12.0]
    """
    lens = np.asarray([n for _, n, _ in _usable(rows, unit)], dtype=float)
    if lens.size == 0:
        return []
    edges = np.quantile(lens, np.linspace(0, 1, n_bins + 1))
    return [float(e) for e in np.unique(edges)] if np.ptp(lens) > 0 else [float(lens[0]), float(lens[0])]


def length_bins(rows: list[dict], n_bins: int = 6, unit: str = "words",
                min_rows_per_bin: int = MIN_ROWS_PER_BIN) -> dict:
    """Trigger by length bin per mode x correctness group, on common edges (:func:`length_edges`).

    Returns ``{group: [{"bin": 1.., "n", "lo", "hi", "min_len", "max_len", "mean_len", "trigger"}, ...]}``
    with groups named like ``"T/wrong"`` or ``"NT/unresolved"``, in the order NT before T and correct,
    wrong, unresolved. ``lo``/``hi`` are the bin's common edges; ``min_len``/``max_len``/``mean_len`` the
    group's own rows in it (None, like ``trigger``, when the group has no row in that bin). A group with
    fewer than ``min_rows_per_bin * n_bins`` rows gets no bins: see :func:`small_groups`.

    Raises:
        ValueError: ``n_bins`` or ``min_rows_per_bin`` < 1.
    """
    if n_bins < 1 or min_rows_per_bin < 1:
        raise ValueError(f"n_bins and min_rows_per_bin must be >= 1, got {n_bins}, {min_rows_per_bin}")
    edges = length_edges(rows, n_bins, unit)
    groups: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for r, n, t in _usable(rows, unit):
        groups[group_name(r["mode"], correctness(r))].append((n, t))
    out = {}
    k = max(len(edges) - 1, 1)
    for g in [group_name(m, c) for m in MODES for c in CORRECTNESS]:
        items = groups.get(g)
        if not items or len(items) < min_rows_per_bin * n_bins:
            continue
        lens = np.asarray([n for n, _ in items], dtype=float)
        trig = np.asarray([t for _, t in items], dtype=float)
        # bin of each row: edges[i-1] <= len < edges[i]; the maximum goes into the last bin
        idx = np.clip(np.searchsorted(np.asarray(edges[1:-1]), lens, side="right"), 0, k - 1)
        bins = []
        for i in range(k):
            sel = idx == i
            m = int(sel.sum())
            bins.append({"bin": i + 1, "n": m, "lo": edges[i], "hi": edges[min(i + 1, len(edges) - 1)],
                         "min_len": int(lens[sel].min()) if m else None, "max_len": int(lens[sel].max()) if m else None,
                         "mean_len": float(lens[sel].mean()) if m else None,
                         "trigger": float(trig[sel].mean()) if m else None})
        out[g] = bins
    return out


def small_groups(rows: list[dict], n_bins: int = 6, unit: str = "words",
                 min_rows_per_bin: int = MIN_ROWS_PER_BIN) -> dict[str, int]:
    """``{group: rows}`` of the mode x correctness groups too small to cut into ``n_bins`` bins."""
    counts = Counter(group_name(r["mode"], correctness(r)) for r, _, _ in _usable(rows, unit))
    return {g: n for g, n in counts.items() if n < min_rows_per_bin * n_bins}


def pearson(x, y) -> tuple[float | None, float | None]:
    """Pearson r and its two-sided p (``scipy.stats.pearsonr``, imported here: about 0.5-1 s that a report
    with fewer than 3 aggregates per mode, e.g. one config, never needs); ``(None, None)`` with < 3 points or
    a constant side.

    >>> r, _ = pearson([1, 2, 3], [2, 4, 5]); round(r, 4)
    0.982
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size != y.size:
        raise ValueError(f"x and y differ in length: {x.size} vs {y.size}")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    from scipy import stats

    res = stats.pearsonr(x, y)
    return float(res.statistic), float(res.pvalue)


def _r_over(points: list[dict]) -> dict:
    used = [p for p in points if p["used"]]
    r, pv = pearson([p["mean_len"] for p in used], [p["trigger"] for p in used])
    return {"r": r, "p_value": pv, "n_points": len(used)}


def length_correlation(rows: list[dict], unit: str = "words", min_rows: int = 1) -> dict:
    """Pearson r between mean response length and Trigger over (config, mode, correctness) aggregates.

    Returns ``{"by_mode": {mode: {"r", "p_value", "n_points"}}, "n_unresolved_points", "points":
    [{"config", "mode", "correct", "correctness", "n", "mean_len", "trigger", "used"}]}``. ``correct`` is
    True / False / None (unresolved). Unresolved aggregates and aggregates with fewer than ``min_rows``
    rows are listed with ``used = False`` and enter no r. r is per mode only: a pooled r over NT and T
    points would mix two modes whose lengths differ for reasons of their own (the paper reports the
    relation per mode).
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
    out: dict = {"by_mode": {m: _r_over([p for p in points if p["mode"] == m]) for m in MODES
                             if any(p["mode"] == m for p in points)}}
    out["n_unresolved_points"] = sum(p["correctness"] == "unresolved" for p in points)
    out["points"] = points
    return out


def length_analysis(rows: list[dict], n_bins: int = 6, unit: str = "words", min_rows: int = 1) -> dict:
    """Both analyses: ``{"unit", "n_bins", "n_used", "excluded": excluded_counts(rows), "edges":
    length_edges(...), "bins": length_bins(...), "too_small": small_groups(...), "min_rows_per_bin",
    "correlation": length_correlation(...)}``."""
    return {"unit": unit, "n_bins": n_bins, "n_used": len(_usable(rows, unit)), "excluded": excluded_counts(rows),
            "edges": length_edges(rows, n_bins, unit), "bins": length_bins(rows, n_bins, unit),
            "too_small": small_groups(rows, n_bins, unit), "min_rows_per_bin": MIN_ROWS_PER_BIN,
            "correlation": length_correlation(rows, unit, min_rows)}
