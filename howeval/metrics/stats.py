"""Uncertainty for PatternEval metrics: bootstrap CIs for Acc/Trigger, paired CIs for Δacc/Δpat, McNemar.

Pure numpy/scipy, seeded: the same rows and seed always give the same intervals.

- :func:`bootstrap_ci`: percentile interval of the mean over ``n_boot`` resamples (None values skipped).
- :func:`paired_bootstrap_ci`: the same over prompts paired by ``sample_id`` (each resample draws whole
  (NT, T) pairs), for Δacc = mean(c_T − c_NT) and Δpat = mean(t_NT − t_T) (SPEC section 1).
- :func:`mcnemar`: McNemar's test on paired booleans (NT, T): exact two-sided binomial test on the
  discordant pairs when ``b + c < 25``, otherwise the chi-square statistic with continuity correction
  ``(|b − c| − 1)^2 / (b + c)`` on 1 degree of freedom (Edwards 1948). ``b`` = pairs with NT true and
  T false, ``c`` = NT false and T true.
- :func:`add_intervals` / :func:`extend_metrics`: attach all of it (and the length analysis of
  ``howeval.metrics.length``) to the dict of ``howeval.metrics.patterneval.sweep_metrics``. Statistics
  only: the Markdown rendering of these numbers lives in ``howeval.report.tables``.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from howeval.metrics.patterneval import paired_outcomes, trigger_of
from howeval.records import MODES

EXACT_BELOW = 25
"""McNemar uses the exact binomial test when the discordant count b + c is below this, else chi-square."""

PAIRED_STATS = ("delta_acc", "delta_pat")


def _clean(values: Iterable) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None], dtype=float)


def _percentile_ci(boot: np.ndarray, alpha: float) -> tuple[float, float]:
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def _check(n_boot: int, alpha: float) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def bootstrap_ci(values: Iterable, n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap ``(1 − alpha)`` interval of the mean of ``values`` (bools count 0/1).

    None values are skipped; returns None when nothing is left.

    >>> bootstrap_ci([1, 1, 1])
    (1.0, 1.0)
    >>> bootstrap_ci([None]) is None
    True
    """
    _check(n_boot, alpha)
    x = _clean(values)
    if x.size == 0:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    return _percentile_ci(x[idx].mean(axis=1), alpha)


MIN_PAIRS_CI = 10
"""Fewest pairs for which a comparison shows a bootstrap interval: below it the resampled deltas take a
handful of values (2 pairs that agree give ``[+100, +100]``, an interval of zero width), so the delta is
shown with its pair count and ``too few pairs`` instead of an interval."""


def paired_bootstrap_ci(pairs: Sequence[tuple], stat: str = "delta_acc", n_boot: int = 2000, alpha: float = 0.05,
                        seed: int = 0) -> tuple[float, float] | None:
    """Bootstrap interval of a paired gap over ``pairs = [(x_NT, y_T), ...]`` (resampling whole pairs).

    ``stat="delta_acc"``: mean(y_T − x_NT) (Δacc, x/y = correct); ``stat="delta_pat"``: mean(x_NT − y_T)
    (Δpat, x/y = trigger). Pairs with a None side are skipped; None when no pair is left.

    >>> paired_bootstrap_ci([(False, True), (False, True)], "delta_acc")
    (1.0, 1.0)
    """
    _check(n_boot, alpha)
    if stat not in PAIRED_STATS:
        raise ValueError(f"stat must be one of {PAIRED_STATS}, got {stat!r}")
    p = [(float(x), float(y)) for x, y in pairs if x is not None and y is not None]
    if not p:
        return None
    arr = np.asarray(p)
    d = arr[:, 1] - arr[:, 0] if stat == "delta_acc" else arr[:, 0] - arr[:, 1]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, d.size, size=(n_boot, d.size))
    return _percentile_ci(d[idx].mean(axis=1), alpha)


def mcnemar(pairs: Sequence[tuple]) -> dict:
    """McNemar's test for paired booleans ``[(x_NT, y_T), ...]`` (pairs with a None side skipped).

    Returns ``{"b", "c", "n", "statistic", "p_value", "exact"}``: ``b`` = #(x true, y false), ``c`` =
    #(x false, y true), ``n`` = pairs used. With ``b + c < 25`` the test is exact: ``statistic = b`` and
    ``p = min(1, 2·P[Bin(b + c, 1/2) <= min(b, c)])``; otherwise ``statistic = (|b − c| − 1)^2 / (b + c)``
    and ``p = P[chi2_1 > statistic]``. No discordant pair gives p = 1.

    >>> r = mcnemar([(True, False)] * 1 + [(False, True)] * 6 + [(True, True)] * 3)
    >>> r["b"], r["c"], r["exact"], round(r["p_value"], 4)
    (1, 6, True, 0.125)
    """
    used = [(bool(x), bool(y)) for x, y in pairs if x is not None and y is not None]
    b = sum(x and not y for x, y in used)
    c = sum(y and not x for x, y in used)
    nd = b + c
    if nd == 0:
        return {"b": 0, "c": 0, "n": len(used), "statistic": 0.0, "p_value": 1.0, "exact": True}
    from scipy import stats as _st  # here, not at import: scipy.stats costs every sweep process ~1-2 s (issue 43)

    if nd < EXACT_BELOW:
        p = min(1.0, 2.0 * float(_st.binom.cdf(min(b, c), nd, 0.5)))
        return {"b": b, "c": c, "n": len(used), "statistic": float(b), "p_value": p, "exact": True}
    chi = (abs(b - c) - 1) ** 2 / nd
    return {"b": b, "c": c, "n": len(used), "statistic": float(chi), "p_value": float(_st.chi2.sf(chi, 1)),
            "exact": False}


def add_intervals(metrics: dict, rows: list[dict], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Add CIs and McNemar to ``metrics`` (the dict of ``sweep_metrics(rows)``), in place, and return it.

    Per config x mode: ``acc_ci``, ``trigger_ci`` (``[lo, hi]`` or None). Per config: ``delta_acc_ci``,
    ``delta_pat_ci``, ``mcnemar`` (on correctness, T vs NT) and ``mcnemar_trigger`` (on the trigger
    indicator). ``metrics["intervals"]`` records ``{n_boot, alpha, seed, method}``.
    """
    by_cfg: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by_cfg[r["config"]][r["mode"]].append(r)
    for cfg, entry in metrics["configs"].items():
        modes = by_cfg.get(cfg, {})
        for m in MODES:
            if m not in entry:
                continue
            rs = modes.get(m, [])
            ci = bootstrap_ci((r.get("correct") for r in rs), n_boot, alpha, seed)
            entry[m]["acc_ci"] = list(ci) if ci else None
            ci = bootstrap_ci((trigger_of(r) for r in rs), n_boot, alpha, seed)
            entry[m]["trigger_ci"] = list(ci) if ci else None
        if "NT" in modes and "T" in modes:
            acc, pat = paired_outcomes(modes["NT"], modes["T"])
        else:
            acc, pat = [], []
        ci = paired_bootstrap_ci(acc, "delta_acc", n_boot, alpha, seed)
        entry["delta_acc_ci"] = list(ci) if ci else None
        ci = paired_bootstrap_ci(pat, "delta_pat", n_boot, alpha, seed)
        entry["delta_pat_ci"] = list(ci) if ci else None
        entry["mcnemar"] = mcnemar(acc) if acc else None
        entry["mcnemar_trigger"] = mcnemar(pat) if pat else None
    metrics["intervals"] = {"n_boot": n_boot, "alpha": alpha, "seed": seed,
                            "method": "percentile bootstrap of the mean; paired: resampling prompts; "
                                      f"McNemar exact binomial when b+c < {EXACT_BELOW}, else chi-square "
                                      "with continuity correction"}
    return metrics


def extend_metrics(metrics: dict, rows: list[dict], n_boot: int = 2000, alpha: float = 0.05, seed: int = 0) -> dict:
    """Everything this module and ``howeval.metrics.length`` add to a ``sweep_metrics`` dict (in place; returned).

    Adds the intervals of :func:`add_intervals` and ``metrics["length"]`` (``howeval.metrics.length.length_analysis``).
    """
    from howeval.metrics.length import length_analysis

    add_intervals(metrics, rows, n_boot=n_boot, alpha=alpha, seed=seed)
    metrics["length"] = length_analysis(rows)
    return metrics
