"""Length bins and length-vs-Trigger correlation (howeval.metrics.length), with hand-computed values."""
from __future__ import annotations

import math

import pytest

from howeval.metrics.length import (
    excluded_counts,
    length_analysis,
    length_bins,
    length_correlation,
    length_edges,
    pearson,
    response_length,
    small_groups,
)


def _row(cfg, mode, correct, trig, nwords, **kw):
    return {"sample_id": f"{cfg}{mode}{nwords}{trig}", "config": cfg, "mode": mode, "correct": correct,
            "cot": trig, "rep": False, "con": False, "pr": False, "response": " ".join(["w"] * nwords),
            "error": None, "truncated": False, **kw}


def test_response_length_units():
    assert response_length("a bb  ccc\n d") == 4
    assert response_length("a bb", "chars") == 4
    assert response_length(None) == 0
    with pytest.raises(ValueError, match="unit must be one of"):
        response_length("x", "tokens")


def test_pearson_hand_computed():
    # x = 1,2,3 ; y = 2,4,5 : Sxy = 3, Sxx = 2, Syy = 42/9 -> r = 3 / sqrt(2 * 42/9)
    r, p = pearson([1, 2, 3], [2, 4, 5])
    assert r == pytest.approx(3 / math.sqrt(2 * 42 / 9))
    assert pearson([1, 2], [1, 2]) == (None, None)
    assert pearson([1, 1, 1], [1, 2, 3]) == (None, None)


def test_sextiles_split_equal_counts_ranked_by_length():
    # 12 wrong NT rows, lengths 1..12; trigger only on the 4 longest
    rows = [_row("a", "NT", False, n > 8, n) for n in range(12, 0, -1)]
    bins = length_bins(rows)["NT/wrong"]
    assert [b["n"] for b in bins] == [2] * 6
    assert [(b["min_len"], b["max_len"]) for b in bins] == [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12)]
    assert [b["trigger"] for b in bins] == [0, 0, 0, 0, 1, 1]
    assert bins[0]["mean_len"] == 1.5


def test_bins_per_group_and_exclusions():
    rows = [_row("a", "T", True, True, 5), _row("a", "T", False, False, 3),
            _row("a", "NT", None, True, 4),  # unresolved: its own group
            _row("a", "NT", True, True, 4, error="boom"),  # engine error: out
            {**_row("a", "NT", True, True, 4), "cot": None},  # unlabelled: out
            {**_row("a", "T", False, True, 4), "truncated": True}]  # truncated: out
    assert excluded_counts(rows) == {"error": 1, "truncated": 1, "unlabelled": 1}
    # groups of one row are not cut into six bins (issue 25: "groups of n = 2 are cut into six bins")
    assert length_bins(rows) == {}
    assert small_groups(rows) == {"T/correct": 1, "T/wrong": 1, "NT/unresolved": 1}
    # 13 rows, lengths 0..12: edges 0, 2, 4, ..., 12; the maximum goes into the last bin
    rows = [_row("a", "NT", True, False, n) for n in range(13)]
    assert [x["n"] for x in length_bins(rows)["NT/correct"]] == [2, 2, 2, 2, 2, 3]


def test_bins_use_common_edges_across_groups():
    # NT correct answers are short (1..12 words), T wrong ones long (13..24): with per-group sextiles both
    # groups had "bin 1..6" over different lengths; on common edges NT fills the short bins, T the long ones
    rows = [_row("a", "NT", True, n % 2 == 0, n) for n in range(1, 13)]
    rows += [_row("a", "T", False, n % 3 == 0, n) for n in range(13, 25)]
    edges = length_edges(rows)
    assert edges == pytest.approx([1, 4.833333, 8.666667, 12.5, 16.333333, 20.166667, 24], rel=1e-6)
    b = length_bins(rows)
    assert [(x["lo"], x["hi"]) for x in b["NT/correct"]] == [(x["lo"], x["hi"]) for x in b["T/wrong"]]
    assert [x["n"] for x in b["NT/correct"]] == [4, 4, 4, 0, 0, 0]
    assert [x["n"] for x in b["T/wrong"]] == [0, 0, 0, 4, 4, 4]
    assert b["NT/correct"][3]["trigger"] is None and b["T/wrong"][0]["mean_len"] is None  # gaps, not zeros
    assert b["NT/correct"][0]["trigger"] == 0.5 and b["T/wrong"][5]["trigger"] == 0.5


def test_correlation_over_model_by_correctness_aggregates():
    rows = []
    # config a NT correct: lengths 2,4 (mean 3), trigger 0/2 ; a NT wrong: lengths 6,10 (mean 8), trigger 1/2
    rows += [_row("a", "NT", True, False, 2), _row("a", "NT", True, False, 4)]
    rows += [_row("a", "NT", False, True, 6), _row("a", "NT", False, False, 10)]
    # config b T wrong: length 12, trigger 1
    rows += [_row("b", "T", False, True, 12)]
    c = length_correlation(rows)
    pts = [(p["config"], p["mode"], p["correct"], p["mean_len"], p["trigger"]) for p in c["points"]]
    assert pts == [("a", "NT", True, 3.0, 0.0), ("a", "NT", False, 8.0, 0.5), ("b", "T", False, 12.0, 1.0)]
    # x = 8, 3, 12 ; y = .5, 0, 1 : mean x = 23/3, mean y = .5
    x, y = [8, 3, 12], [0.5, 0, 1]
    mx, my = sum(x) / 3, sum(y) / 3
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    assert "r" not in c  # no r pooled across modes (issue 25)
    assert c["by_mode"]["NT"]["n_points"] == 2 and c["by_mode"]["NT"]["r"] is None  # 2 points: no r
    nt3 = rows + [_row("c", "NT", False, True, 12)]
    x, y = [3, 8, 12], [0, 0.5, 1]
    mx, my = sum(x) / 3, sum(y) / 3
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    assert length_correlation(nt3)["by_mode"]["NT"]["r"] == pytest.approx(sxy / math.sqrt(sxx * syy))
    c2 = length_correlation(nt3, min_rows=2)
    assert c2["by_mode"]["NT"]["n_points"] == 2 and c2["by_mode"]["NT"]["r"] is None


def test_unresolved_aggregates_listed_but_not_in_r_and_r_per_mode():
    rows = [_row("a", "NT", True, False, 2), _row("a", "NT", False, True, 10), _row("b", "NT", True, False, 4),
            _row("b", "NT", False, False, 6), _row("a", "NT", None, True, 30),
            _row("a", "T", True, False, 3), _row("a", "T", False, True, 9), _row("b", "T", False, True, 12)]
    c = length_correlation(rows)
    unres = [p for p in c["points"] if p["correctness"] == "unresolved"]
    assert unres == [{"config": "a", "mode": "NT", "correct": None, "correctness": "unresolved", "n": 1,
                      "mean_len": 30.0, "trigger": 1.0, "used": False}]
    assert c["n_unresolved_points"] == 1 and "n_points" not in c
    # NT points used: (2, 0), (10, 1), (4, 0), (6, 0); T: (3, 0), (9, 1), (12, 1)
    assert c["by_mode"]["NT"]["n_points"] == 4 and c["by_mode"]["T"]["n_points"] == 3
    assert c["by_mode"]["NT"]["r"] == pytest.approx(pearson([2, 10, 4, 6], [0, 1, 0, 0])[0])
    assert c["by_mode"]["T"]["r"] == pytest.approx(pearson([3, 9, 12], [0, 1, 1])[0])
    la = length_analysis(rows)
    assert la["n_used"] == 8 and la["excluded"] == {"error": 0, "truncated": 0, "unlabelled": 0}


def test_length_analysis_bundle():
    la = length_analysis([_row("a", "NT", True, True, n) for n in range(1, 7)], unit="chars")
    assert la["unit"] == "chars" and la["n_bins"] == 6 and la["bins"] == {} and la["too_small"] == {"NT/correct": 6}
    la = length_analysis([_row("a", "NT", True, True, n) for n in range(1, 13)])
    assert len(la["bins"]["NT/correct"]) == 6 and la["too_small"] == {} and len(la["edges"]) == 7


def test_the_report_and_the_sweep_import_scipy_stats_only_for_a_correlation():
    """scipy.stats costs 0.5-1 s to import, inside the sweep's report phase (issue 43's wall time): the report's
    and the sweep's modules load without it; a correlation over 3+ aggregates still gets scipy's r and p."""
    import subprocess
    import sys

    code = ("import sys, howeval.report.run, howeval.ray_jobs.sweep, howeval.metrics.length as L\n"
            "assert L.pearson([1, 2], [3, 4]) == (None, None)\n"
            "print('scipy.stats' in sys.modules)\n"
            "r, p = L.pearson([1, 2, 3, 4], [1, 3, 2, 5])\n"
            "print('scipy.stats' in sys.modules, round(r, 4), round(p, 4))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "False"
    # by hand: Sxy 5.5, Sxx 5, Syy 8.75, r = 5.5 / sqrt(43.75); with 2 degrees of freedom the two-sided p is 1 - |r|
    assert out[1] == "True 0.8315 0.1685"
