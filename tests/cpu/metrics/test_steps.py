"""Table-driven tests of howeval.metrics.steps on hand-computed similarity matrices (SPEC section 3)."""
from __future__ import annotations

import doctest

import numpy as np
import pytest

from howeval.metrics import steps as crystal
from howeval.metrics.steps import (
    ORDER_SCORES,
    greedy_match,
    kendall_order_score,
    lis_length,
    lis_order_score,
    ordered_f1,
    step_scores,
)

# 3 predicted x 4 reference steps. Candidates > 0.35, by similarity:
# (0,0,.90) take, (2,1,.85) take, (1,2,.80) take, (2,2,.60) p2 used, (1,3,.50) p1 used,
# (0,1,.40) p0 used, (2,3,.36) p2 used  -> 3 matches.
SIM_3x4 = np.array(
    [
        [0.90, 0.40, 0.10, 0.20],
        [0.30, 0.20, 0.80, 0.50],
        [0.20, 0.85, 0.60, 0.36],
    ]
)


def test_greedy_3x4_hand_computed():
    assert greedy_match(SIM_3x4, 0.35) == [(0, 0, 0.90), (2, 1, 0.85), (1, 2, 0.80)]


def test_step_scores_3x4_hand_computed():
    # P = 3/3, R = 3/4, F1 = 2*1*.75/1.75 = 6/7.
    # By reference index the prediction indices are [0, 2, 1]: LIS = 2, ratio 2/3.
    # Kendall over ref (0,1,2) vs pred (0,2,1): c = 2, d = 1, tau = 1/3 -> (1 + 1/3)/2 = 2/3.
    s = step_scores(SIM_3x4, tau=0.35, alpha=0.5)
    assert (s.n_pred, s.n_ref, s.matched) == (3, 4, 3)
    assert s.precision == pytest.approx(1.0)
    assert s.recall == pytest.approx(0.75)
    assert s.f1 == pytest.approx(6 / 7)
    assert s.lis == pytest.approx(2 / 3)
    assert s.order_score == pytest.approx(2 / 3)
    assert s.ordered_f1 == pytest.approx(6 / 7 * (0.5 + 0.5 * 2 / 3))  # = 5/7
    assert s.ordered_f1 == pytest.approx(5 / 7)
    s3 = step_scores(SIM_3x4, tau=0.35, alpha=0.3)
    assert s3.ordered_f1 == pytest.approx(6 / 7 * (0.7 + 0.3 * 2 / 3))  # = 0.771428...
    assert s3.ordered_f1 == pytest.approx(0.7714285714)
    sk = step_scores(SIM_3x4, tau=0.35, alpha=0.5, order="kendall")
    assert sk.order_score == pytest.approx(2 / 3)
    assert sk.lis == pytest.approx(2 / 3)  # LIS ratio is reported whatever the order score


# 4x4 permutation: prediction order by reference index [1, 0, 3, 2].
# LIS = 2 -> ratio 0.5; Kendall: c = 4, d = 2 of 6 -> tau = 1/3 -> 2/3. F1 = 1.
SIM_PERM = np.array(
    [
        [0.1, 0.9, 0.1, 0.1],
        [0.9, 0.1, 0.1, 0.1],
        [0.1, 0.1, 0.1, 0.9],
        [0.1, 0.1, 0.9, 0.1],
    ]
)


@pytest.mark.parametrize(
    "order, alpha, order_score, ordered",
    [
        ("lis", 0.5, 0.5, 0.75),
        ("lis", 0.3, 0.5, 0.85),
        ("lis", 1.0, 0.5, 0.5),
        ("lis", 0.0, 0.5, 1.0),
        ("kendall", 0.5, 2 / 3, 5 / 6),
        ("kendall", 0.3, 2 / 3, 0.9),
        ("kendall", 0.0, 2 / 3, 1.0),
    ],
)
def test_order_scores_permutation(order, alpha, order_score, ordered):
    s = step_scores(SIM_PERM, tau=0.35, alpha=alpha, order=order)
    assert s.matched == 4 and s.f1 == pytest.approx(1.0)
    assert s.lis == pytest.approx(0.5)
    assert s.order_score == pytest.approx(order_score)
    assert s.ordered_f1 == pytest.approx(ordered)


def test_worked_example_with_gold_matches(shared_data):
    """The CRYSTAL worked example scored from its gold matches (a 0/0.9 matrix built from them).

    Gold pred->ref [0, None, 4, 3, 5]: 4 matched of n=5, m=6: P=4/5, R=2/3, F1=8/11.
    Prediction indices by reference index: [0, 3, 2, 4] -> LIS 3, ratio 3/4.
    Ordered F1 at alpha 0.3 (the site's): 8/11 * (0.7 + 0.3*0.75) = 8/11 * 0.925.
    """
    import json

    ex = next(x for x in json.loads((shared_data / "steps/crystal_examples.json").read_text())
              if x["kind"] == "worked_match_example")
    gold = ex["predicted_to_reference_match"]
    sim = np.zeros((len(ex["predicted_steps"]), len(ex["reference_steps"])))
    for i, j in enumerate(gold):
        if j is not None:
            sim[i, j] = 0.9
    s = step_scores(sim, tau=0.35, alpha=0.3)
    assert s.matched == 4
    assert s.f1 == pytest.approx(8 / 11)
    assert s.lis == pytest.approx(0.75)
    assert s.ordered_f1 == pytest.approx(8 / 11 * 0.925)
    assert sorted((p, r) for p, r, _ in s.pairs) == [(i, j) for i, j in enumerate(gold) if j is not None]


@pytest.mark.parametrize(
    "sim, tau, expected",
    [
        # strictly above tau: a similarity equal to tau never matches
        (np.array([[0.35, 0.2]]), 0.35, []),
        (np.array([[0.3501, 0.2]]), 0.35, [(0, 0, 0.3501)]),
        # ties broken by (pred, ref) ascending -> the diagonal
        (np.full((3, 3), 0.5), 0.35, [(0, 0, 0.5), (1, 1, 0.5), (2, 2, 0.5)]),
        # greedy is not a maximum matching: optimum would match 2
        (np.array([[0.9, 0.8], [0.85, 0.1]]), 0.35, [(0, 0, 0.9)]),
        # one reference step wanted by two predictions: the more similar wins
        (np.array([[0.6], [0.7]]), 0.35, [(1, 0, 0.7)]),
        # negative similarities and a negative tau
        (np.array([[-0.2, -0.5]]), -0.3, [(0, 0, -0.2)]),
        (np.zeros((0, 3)), 0.35, []),
    ],
)
def test_greedy_table(sim, tau, expected):
    assert greedy_match(sim, tau) == expected


def test_greedy_one_to_one_random():
    rng = np.random.default_rng(0)
    for _ in range(50):
        sim = rng.uniform(-1, 1, size=(rng.integers(1, 9), rng.integers(1, 9)))
        pairs = greedy_match(sim, 0.1)
        assert len({p for p, _, _ in pairs}) == len(pairs) == len({r for _, r, _ in pairs})
        assert all(s > 0.1 for _, _, s in pairs)
        assert [s for _, _, s in pairs] == sorted((s for _, _, s in pairs), reverse=True)


@pytest.mark.parametrize(
    "seq, expected",
    [
        ([], 0),
        ([5], 1),
        ([1, 1, 1], 1),
        ([3, 1, 2], 2),
        ([0, 1, 2, 3], 4),
        ([3, 2, 1, 0], 1),
        ([0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15], 6),
        ([2, 2, 3, 3, 4], 3),
    ],
)
def test_lis_length(seq, expected):
    assert lis_length(seq) == expected


@pytest.mark.parametrize(
    "pairs, lis, kendall",
    [
        ([], 1.0, 1.0),
        ([(4, 2, 0.9)], 1.0, 1.0),
        ([(0, 0, 0.9), (1, 1, 0.8)], 1.0, 1.0),
        ([(1, 0, 0.9), (0, 1, 0.8)], 0.5, 0.0),
        ([(2, 0, 0.9), (1, 1, 0.9), (0, 2, 0.9)], 1 / 3, 0.0),
        # pairs given in any order: both scores list them by reference index first
        ([(0, 2, 0.9), (2, 0, 0.9), (1, 1, 0.9)], 1 / 3, 0.0),
    ],
)
def test_order_score_table(pairs, lis, kendall):
    assert lis_order_score(pairs) == pytest.approx(lis)
    assert kendall_order_score(pairs) == pytest.approx(kendall)


def test_no_predicted_steps_all_zeros():
    s = step_scores(np.zeros((0, 4)))
    assert (s.n_pred, s.n_ref, s.matched) == (0, 4, 0)
    assert (s.precision, s.recall, s.f1, s.lis, s.order_score, s.ordered_f1) == (0.0,) * 6
    assert s.pairs == ()


def test_nothing_matched_zero_f1():
    s = step_scores(np.full((2, 3), 0.1))
    assert (s.matched, s.precision, s.recall, s.f1, s.ordered_f1) == (0, 0.0, 0.0, 0.0, 0.0)
    assert s.lis == 1.0  # fewer than two matched


@pytest.mark.parametrize("shape", [(3, 0), (0, 0)])
def test_no_reference_steps_is_an_error(shape):
    with pytest.raises(ValueError, match="no reference steps"):
        step_scores(np.zeros(shape))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"order": "spearman"}, "registered"),
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": -0.1}, "alpha"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        step_scores(SIM_3x4, **kwargs)


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros((2, 2, 2)), np.array([[np.nan, 0.5]])])
def test_bad_matrix(bad):
    with pytest.raises(ValueError):
        greedy_match(bad, 0.35)


def test_alpha_zero_is_plain_f1():
    for order in ORDER_SCORES:
        s = step_scores(SIM_3x4, alpha=0.0, order=order)
        assert s.ordered_f1 == s.f1
    assert ordered_f1(0.4, 0.0, 0.0) == 0.4


def test_doctests():
    assert doctest.testmod(crystal).failed == 0
