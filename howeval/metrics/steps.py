"""CRYSTAL step-level metrics: greedy step matching, Match F1, LIS / Kendall order, Ordered Match F1.

SPEC.md section 3 ("CRYSTAL (step-level reasoning)"). Pure numpy: the caller supplies the cosine
similarity matrix (``howeval.embed.StepEmbedder.similarity`` builds one), so every function here is
deterministic and cheap enough to re-run at many thresholds.

Conventions (one place, used everywhere below):

- ``sim`` has shape ``(n_pred, m_ref)``: row i is predicted step s_i, column j is reference step k_j.
  (SPEC writes the matrix as m x n; this is its transpose, chosen so rows follow the response.)
- A pair is ``(pred_index, ref_index, similarity)``.
- Threshold: a pair is a candidate only when ``sim > tau`` **strictly** (SPEC section 3; the paper text
  says "≥ τ", the SPEC decides). Default ``tau = 0.35`` for both all-distilroberta-v1 (paper) and
  all-MiniLM-L6-v2 (offline default).

Reference: CRYSTAL (arXiv 2603.13099), reference implementation ``waybarrios/crystal`` @ f8d97392
(its docs: greedy one-to-one matching, cosine threshold 0.35, Ordered F1 with alpha 0.3 by default and
Kendall's tau as its default order score).
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

Pair = tuple[int, int, float]

DEFAULT_TAU = 0.35
DEFAULT_ALPHA = 0.5  # paper text; the reference code recommends 0.3


def greedy_match(sim: np.ndarray, tau: float = DEFAULT_TAU) -> list[Pair]:
    """Greedy one-to-one matching of predicted to reference steps (SPEC section 3).

    Every pair with ``sim[i, j] > tau`` (strictly) is a candidate. Candidates are visited by similarity
    descending; ties are broken by ``(pred_index, ref_index)`` ascending so the result never depends
    on sort stability. A pair is kept when neither its predicted nor its reference step is already used.
    Greedy is not a maximum matching (see the second example).

    Args:
        sim: cosine similarities, shape ``(n_pred, m_ref)``, finite values.
        tau: similarity threshold; only pairs strictly above it can match.

    Returns:
        The kept pairs ``(pred_index, ref_index, similarity)`` in the order they were assigned
        (similarity descending).

    Raises:
        ValueError: when ``sim`` is not 2-D or holds NaN/inf.

    >>> greedy_match(np.array([[0.9, 0.4], [0.2, 0.35]]), tau=0.35)
    [(0, 0, 0.9)]
    >>> greedy_match(np.array([[0.9, 0.8], [0.85, 0.1]]), tau=0.35)  # greedy keeps 1, optimum is 2
    [(0, 0, 0.9)]
    """
    sim = _check_sim(sim)
    rows, cols = np.nonzero(sim > tau)
    if rows.size == 0:
        return []
    vals = sim[rows, cols]
    # np.lexsort sorts by the LAST key first: similarity descending, then pred, then ref ascending.
    order = np.lexsort((cols, rows, -vals))
    used_pred: set[int] = set()
    used_ref: set[int] = set()
    pairs: list[Pair] = []
    for k in order:
        i, j = int(rows[k]), int(cols[k])
        if i in used_pred or j in used_ref:
            continue
        used_pred.add(i)
        used_ref.add(j)
        pairs.append((i, j, float(vals[k])))
    return pairs


def lis_length(seq: Sequence[int]) -> int:
    """Length of the longest strictly increasing subsequence (patience sorting, O(n log n)).

    >>> lis_length([])
    0
    >>> lis_length([0, 2, 1, 3])
    3
    >>> lis_length([1, 1, 1])  # strictly increasing: equal values do not extend
    1
    """
    tails: list[int] = []
    for x in seq:
        k = bisect.bisect_left(tails, x)  # bisect_left: an equal value replaces, never extends
        if k == len(tails):
            tails.append(x)
        else:
            tails[k] = x
    return len(tails)


def _pred_by_ref(pairs: Sequence[Pair]) -> list[int]:
    """Prediction indices of the matched pairs listed by reference index (SPEC section 3, "Order")."""
    return [p for p, _, _ in sorted(pairs, key=lambda t: t[1])]


def lis_order_score(pairs: Sequence[Pair]) -> float:
    """LIS ratio = LIS / matched over the pairs listed by reference index; 1.0 when fewer than 2 matched.

    This is the paper's order score (SPEC section 3).

    >>> lis_order_score([(0, 0, 0.9), (2, 1, 0.8), (1, 2, 0.7)])  # pred order by ref: [0, 2, 1]
    0.6666666666666666
    >>> lis_order_score([(3, 0, 0.9)])
    1.0
    """
    if len(pairs) < 2:
        return 1.0
    return lis_length(_pred_by_ref(pairs)) / len(pairs)


def kendall_order_score(pairs: Sequence[Pair]) -> float:
    """Kendall's tau between reference and prediction indices of the matched pairs, mapped to [0, 1].

    ``score = (tau + 1) / 2`` with ``tau = (concordant - discordant) / C(k, 2)`` over the k matched pairs
    (no ties: matching is one-to-one). 1.0 when fewer than 2 matched. This is the reference code's
    default order score (SPEC section 3, "as an option").

    >>> kendall_order_score([(1, 0, 0.9), (0, 1, 0.9), (3, 2, 0.9), (2, 3, 0.9)])  # c=4, d=2: tau=1/3
    0.6666666666666666
    >>> kendall_order_score([(2, 0, 0.9), (1, 1, 0.9), (0, 2, 0.9)])  # fully reversed
    0.0
    """
    k = len(pairs)
    if k < 2:
        return 1.0
    pred = np.asarray(_pred_by_ref(pairs))  # (k,) already ordered by reference index
    upper = np.triu(np.ones((k, k), dtype=bool), 1)
    diff = np.sign(pred[None, :] - pred[:, None])[upper]  # +1 concordant, -1 discordant
    tau = float(diff.sum()) / (k * (k - 1) / 2)
    return (tau + 1.0) / 2.0


ORDER_SCORES: dict[str, Callable[[Sequence[Pair]], float]] = {
    "lis": lis_order_score,
    "kendall": kendall_order_score,
}


def ordered_f1(f1: float, order_score: float, alpha: float) -> float:
    """Ordered Match F1 = F1 · ((1 − α) + α · order_score); equals F1 when α = 0 (SPEC section 3).

    >>> round(ordered_f1(6 / 7, 2 / 3, 0.5), 6)
    0.714286
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must lie in [0, 1]")
    if alpha == 0.0:
        return f1
    return f1 * ((1.0 - alpha) + alpha * order_score)


@dataclass(frozen=True)
class StepScores:
    """Step metrics of one response against one reference chain (SPEC section 3).

    Attributes:
        n_pred: number of predicted steps n.
        n_ref: number of reference steps m.
        matched: number of greedy matches.
        precision: matched / n.
        recall: matched / m.
        f1: Match F1 = 2PR / (P + R), 0 when nothing matched.
        lis: LIS ratio = LIS / matched (1.0 when fewer than 2 matched; 0 when there are no predicted steps),
            always reported whatever ``order`` is.
        order_score: the order score used in ``ordered_f1`` (the LIS ratio, or Kendall mapped to [0, 1]).
        ordered_f1: F1 · ((1 − α) + α · order_score).
        pairs: the greedy pairs ``(pred_index, ref_index, similarity)``, similarity descending.
    """

    n_pred: int
    n_ref: int
    matched: int
    precision: float
    recall: float
    f1: float
    lis: float
    order_score: float
    ordered_f1: float
    pairs: tuple[Pair, ...] = field(default_factory=tuple)


def step_scores(
    sim: np.ndarray,
    tau: float = DEFAULT_TAU,
    alpha: float = DEFAULT_ALPHA,
    order: str = "lis",
) -> StepScores:
    """All CRYSTAL step metrics from one similarity matrix (SPEC section 3).

    Formulas (n predicted, m reference steps, ``matched`` greedy pairs above ``tau``)::

        P = matched / n        R = matched / m        F1 = 2PR / (P + R)   (0 if matched == 0)
        LIS ratio = LIS(pred indices listed by ref index) / matched       (1.0 if matched < 2)
        Ordered F1 = F1 * ((1 - alpha) + alpha * order_score)            (F1 if alpha == 0)

    No predicted steps (``n == 0``): every score is 0. No reference steps (``m == 0``): ValueError.

    Args:
        sim: cosine similarities, shape ``(n_pred, m_ref)``.
        tau: matching threshold (strict), default 0.35.
        alpha: order weight in [0, 1]; 0.5 in the paper text, 0.3 in the reference code.
        order: ``"lis"`` (paper) or ``"kendall"`` (reference code default), see ``ORDER_SCORES``.

    >>> s = step_scores(np.array([[0.9, 0.1], [0.2, 0.1], [0.1, 0.8]]), tau=0.35, alpha=0.5)
    >>> (s.matched, round(s.precision, 4), s.recall, s.f1, s.lis, s.ordered_f1)
    (2, 0.6667, 1.0, 0.8, 1.0, 0.8)
    """
    if order not in ORDER_SCORES:
        raise ValueError(f"order={order!r} is not registered; registered: {sorted(ORDER_SCORES)}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must lie in [0, 1]")
    sim = _check_sim(sim)
    n, m = sim.shape
    if m == 0:
        raise ValueError(f"no reference steps (sim shape {sim.shape}): a missing reference is an error, not a score")
    if n == 0:
        return StepScores(0, m, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, ())
    pairs = greedy_match(sim, tau)
    k = len(pairs)
    precision, recall = k / n, k / m
    f1 = 0.0 if k == 0 else 2 * precision * recall / (precision + recall)
    lis = lis_order_score(pairs)
    score = lis if order == "lis" else ORDER_SCORES[order](pairs)
    return StepScores(
        n_pred=n,
        n_ref=m,
        matched=k,
        precision=precision,
        recall=recall,
        f1=f1,
        lis=lis,
        order_score=score,
        ordered_f1=ordered_f1(f1, score, alpha),
        pairs=tuple(pairs),
    )


def _check_sim(sim: np.ndarray) -> np.ndarray:
    sim = np.asarray(sim, dtype=np.float64)
    if sim.ndim != 2:
        raise ValueError(f"sim must be 2-D (n_pred, m_ref); got shape {sim.shape}")
    if not np.isfinite(sim).all():
        raise ValueError("sim holds NaN or inf values")
    return sim
