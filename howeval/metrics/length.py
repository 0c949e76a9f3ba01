"""Length analysis of SPEC section 1: Trigger by six length bins, and Pearson r of length vs Trigger.

Response length is the length of y_m (``response``; the reasoning channel is never counted), in
whitespace-separated words by default (``unit="chars"`` for characters). Only rows with a response, a
known ``correct`` and known labels enter (errors, truncations and judge errors are left out).

- **Length bins**: within each mode x correctness group (``NT/correct``, ``NT/wrong``, ``T/correct``,
  ``T/wrong``; all configs pooled) rows are ranked by length (ties broken by input order) and split into
  ``n_bins`` (default 6: sextiles) groups of equal size (sizes differ by at most one). Each bin reports
  its length range, mean length and Trigger.
- **Correlation**: one aggregate per (config, mode, correctness) ("model-by-correctness"; a config in a
  mode is one evaluated model setting): mean length and Trigger; Pearson r (and its two-sided p) over
  the aggregates with at least ``min_rows`` rows. r is None with fewer than 3 aggregates or a constant side.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
from scipy import stats as _st

from howeval.metrics.patterneval import trigger_of
from howeval.records import MODES

UNITS = ("words", "chars")


def response_length(text: str | None, unit: str = "words") -> int:
    """Length of a response: whitespace words (default) or characters.

    >>> response_length("The answer is 5."), response_length("ab c", "chars")
    (4, 4)
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    text = text or ""
    return len(text.split()) if unit == "words" else len(text)


def _usable(rows: list[dict], unit: str) -> list[tuple[dict, int, bool]]:
    out = []
    for r in rows:
        if r.get("error") or r.get("truncated") or r.get("response") is None:
            continue
        t = trigger_of(r)
        if t is None or r.get("correct") is None:
            continue
        out.append((r, response_length(r["response"], unit), t))
    return out


def group_name(mode: str, correct: bool) -> str:
    return f"{mode}/{'correct' if correct else 'wrong'}"


def length_bins(rows: list[dict], n_bins: int = 6, unit: str = "words") -> dict:
    """Trigger by ``n_bins`` equal-count length bins per mode x correctness group.

    Returns ``{group: [{"bin": 1.., "n", "min_len", "max_len", "mean_len", "trigger"}, ...]}`` with
    groups named like ``"T/wrong"``; a group with fewer rows than bins gets one bin per row.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    groups: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for r, n, t in _usable(rows, unit):
        groups[group_name(r["mode"], bool(r["correct"]))].append((n, t))
    out = {}
    for g in [group_name(m, c) for m in MODES for c in (True, False)]:
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


def length_correlation(rows: list[dict], unit: str = "words", min_rows: int = 1) -> dict:
    """Pearson r between mean response length and Trigger over (config, mode, correctness) aggregates.

    Returns ``{"r", "p_value", "n_points", "points": [{"config", "mode", "correct", "n", "mean_len",
    "trigger"}]}``; aggregates with fewer than ``min_rows`` rows are listed but not used.
    """
    agg: dict[tuple, list[tuple[int, bool]]] = defaultdict(list)
    for r, n, t in _usable(rows, unit):
        agg[(str(r["config"]), r["mode"], bool(r["correct"]))].append((n, t))
    points = []
    for (cfg, mode, corr), items in sorted(agg.items()):
        points.append({"config": cfg, "mode": mode, "correct": corr, "n": len(items),
                       "mean_len": float(np.mean([n for n, _ in items])),
                       "trigger": float(np.mean([t for _, t in items])), "used": len(items) >= min_rows})
    used = [p for p in points if p["used"]]
    r, pv = pearson([p["mean_len"] for p in used], [p["trigger"] for p in used])
    return {"r": r, "p_value": pv, "n_points": len(used), "points": points}


def length_analysis(rows: list[dict], n_bins: int = 6, unit: str = "words", min_rows: int = 1) -> dict:
    """Both analyses: ``{"unit", "n_bins", "bins": length_bins(...), "correlation": length_correlation(...)}``."""
    return {"unit": unit, "n_bins": n_bins, "bins": length_bins(rows, n_bins, unit),
            "correlation": length_correlation(rows, unit, min_rows)}


def length_section(la: dict) -> str:
    """Markdown for ``length_analysis`` output: the bin table and the correlation line."""
    c = la["correlation"]
    r = "–" if c["r"] is None else f"{c['r']:+.3f} (p = {c['p_value']:.3g})"
    lines = ["## Response length and patterns", "",
             f"Length of y_m in {la['unit']}. Pearson r between mean length and Trigger over "
             f"{c['n_points']} config x mode x correctness aggregates: **{r}**.", "",
             f"Trigger (%) by length bin (equal-count bins, {la['n_bins']} per group; mean length in brackets):", ""]
    nb = max((len(v) for v in la["bins"].values()), default=0)
    lines.append("| group | n | " + " | ".join(f"bin {i}" for i in range(1, nb + 1)) + " |")
    lines.append("|---|---|" + "---|" * nb)
    for g, bins in la["bins"].items():
        cells = [f"{100 * b['trigger']:.0f} [{b['mean_len']:.0f}]" for b in bins] + [""] * (nb - len(bins))
        lines.append(f"| {g} | {sum(b['n'] for b in bins)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
