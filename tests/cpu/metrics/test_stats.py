"""Bootstrap intervals, paired intervals and McNemar (howeval.metrics.stats), checked against hand computation."""
from __future__ import annotations

import math

import pytest
from scipy.stats import binomtest, chi2

from howeval.metrics.patterneval import sweep_metrics
from howeval.metrics.stats import add_intervals, bootstrap_ci, extend_metrics, mcnemar, paired_bootstrap_ci


def _pairs(b, c, both_true=0, both_false=0):
    return [(True, False)] * b + [(False, True)] * c + [(True, True)] * both_true + [(False, False)] * both_false


@pytest.mark.parametrize("c", [0.0, 0.25, 1.0])
def test_ci_of_a_constant_is_the_constant(c):
    assert bootstrap_ci([c] * 17) == (c, c)


def test_ci_skips_none_and_empty_is_none():
    assert bootstrap_ci([None, None]) is None
    assert bootstrap_ci([True, None, True]) == (1.0, 1.0)
    assert paired_bootstrap_ci([(None, True)], "delta_acc") is None


def test_seeded_reproducible_and_seed_matters():
    vals = [True, False, True, True, False, False, True, False, True, True] * 3
    a = bootstrap_ci(vals, seed=3)
    assert a == bootstrap_ci(vals, seed=3)
    cont = [0.1 * i + 0.013 * i * i for i in range(15)]  # continuous values: another seed moves the bounds
    assert bootstrap_ci(cont, n_boot=200, seed=3) != bootstrap_ci(cont, n_boot=200, seed=4)
    lo, hi = a
    assert lo < sum(vals) / len(vals) < hi and 0 <= lo and hi <= 1


def test_ci_narrows_with_n_and_brackets_mean():
    small = bootstrap_ci([1, 0] * 10)
    big = bootstrap_ci([1, 0] * 500)
    assert big[1] - big[0] < small[1] - small[0]
    # normal approximation for the big sample: 0.5 +- 1.96 * sqrt(.25/1000)
    half = 1.96 * math.sqrt(0.25 / 1000)
    assert big[0] == pytest.approx(0.5 - half, abs=0.01) and big[1] == pytest.approx(0.5 + half, abs=0.01)


def test_paired_directions():
    # every prompt: NT wrong, T right -> delta_acc = +1 ; NT triggers, T not -> delta_pat = +1
    assert paired_bootstrap_ci([(False, True)] * 5, "delta_acc") == (1.0, 1.0)
    assert paired_bootstrap_ci([(True, False)] * 5, "delta_pat") == (1.0, 1.0)
    assert paired_bootstrap_ci([(True, False)] * 5, "delta_acc") == (-1.0, -1.0)
    with pytest.raises(ValueError, match="stat must be one of"):
        paired_bootstrap_ci([(True, False)], "acc")


@pytest.mark.parametrize("b,c", [(1, 6), (0, 5), (4, 4), (10, 14), (3, 0)])
def test_mcnemar_exact_matches_binomtest(b, c):
    r = mcnemar(_pairs(b, c, both_true=7, both_false=2))
    assert (r["b"], r["c"], r["n"], r["exact"]) == (b, c, b + c + 9, True)
    assert r["p_value"] == pytest.approx(binomtest(b, b + c, 0.5).pvalue)


def test_mcnemar_exact_hand_value():
    # b=1, c=6: P[X<=1] for Bin(7, 1/2) = (1 + 7)/128 = 1/16; two-sided p = 1/8
    assert mcnemar(_pairs(1, 6))["p_value"] == pytest.approx(0.125)


def test_mcnemar_chi_square_with_continuity_correction():
    # b=10, c=20: (|10-20| - 1)^2 / 30 = 81/30 = 2.7 ; p = P[chi2_1 > 2.7]
    r = mcnemar(_pairs(10, 20, both_true=50))
    assert r["exact"] is False
    assert r["statistic"] == pytest.approx(2.7)
    assert r["p_value"] == pytest.approx(chi2.sf(2.7, 1))
    assert r["p_value"] == pytest.approx(math.erfc(math.sqrt(2.7 / 2)))  # chi2_1 tail by hand


def test_mcnemar_no_discordant_pairs_and_nones():
    r = mcnemar(_pairs(0, 0, both_true=3) + [(None, True)])
    assert (r["b"], r["c"], r["n"], r["p_value"]) == (0, 0, 3, 1.0)


def _row(sid, mode, correct, cot, cfg="m", response="an answer"):
    return {"sample_id": sid, "config": cfg, "mode": mode, "correct": correct, "cot": cot, "rep": False,
            "con": False, "pr": False, "response": response, "error": None, "truncated": False}


def _rows():
    rows = []
    for i in range(12):
        rows.append(_row(f"s{i}", "NT", i % 3 == 0, i % 2 == 0, response="word " * (i + 1)))
        rows.append(_row(f"s{i}", "T", i % 3 != 2, i % 4 == 0, response="word " * (3 * i + 2)))
    return rows


def test_add_intervals_shapes_and_values():
    rows = _rows()
    m = add_intervals(sweep_metrics(rows), rows, n_boot=500)
    c = m["configs"]["m"]
    for mode in ("NT", "T"):
        lo, hi = c[mode]["acc_ci"]
        assert lo <= c[mode]["acc"] <= hi
        lo, hi = c[mode]["trigger_ci"]
        assert lo <= c[mode]["trigger"] <= hi
    assert c["delta_acc_ci"][0] <= c["delta_acc"] <= c["delta_acc_ci"][1]
    assert c["delta_pat_ci"][0] <= c["delta_pat"] <= c["delta_pat_ci"][1]
    # NT correct on i%3==0 (4), T correct on i%3 != 2 (8): b = 0, c = 4 (i%3 == 1)
    assert (c["mcnemar"]["b"], c["mcnemar"]["c"]) == (0, 4)
    assert c["mcnemar"]["p_value"] == pytest.approx(binomtest(0, 4).pvalue)
    assert m["intervals"]["n_boot"] == 500


def test_single_mode_config_has_no_paired_stats():
    rows = [_row("a", "NT", True, False), _row("b", "NT", False, True)]
    c = add_intervals(sweep_metrics(rows), rows)["configs"]["m"]
    assert c["delta_acc_ci"] is None and c["mcnemar"] is None and c["NT"]["acc_ci"] == [0.0, 1.0]


def test_extend_metrics_serializes():
    import json

    rows = _rows()
    m = extend_metrics(sweep_metrics(rows), rows, n_boot=200)
    assert "length" in m and (m["length"]["bins"] or m["length"]["too_small"])
    json.dumps(m)  # metrics.json must serialize
