"""AdaptMMBench metrics: table-driven checks against hand-computed values (SPEC section 4)."""
from __future__ import annotations

import math

import pytest

from howeval.benchmarks.adapt.loop import AdaptiveResult, CallRecord
from howeval.benchmarks.adapt.metrics import (
    confusion,
    key_step_coverage,
    mcc,
    mode_consistency,
    summarize,
    tool_effectiveness,
    tool_labels,
)

EPS = 1e-8


@pytest.mark.parametrize(
    "tp,fp,tn,fn,expected",
    [
        (5, 0, 5, 0, 25 / (25 + EPS)),  # perfect
        (0, 5, 0, 5, -25 / (25 + EPS)),  # inverse
        (6, 4, 0, 0, 0.0),  # every item calls a tool: TN+FN = 0 -> denominator eps -> 0
        (0, 0, 4, 6, 0.0),  # no item calls a tool: TP+FP = 0
        (3, 0, 0, 0, 0.0),  # only required items, all called
        (0, 0, 0, 0, 0.0),  # empty
        # hand computed: (3*4 - 1*2) / sqrt(4*5*5*6) = 10 / sqrt(600) = 0.408248...
        (3, 1, 4, 2, 10 / (math.sqrt(600) + EPS)),
        # (10*2 - 5*3) / sqrt(15*13*7*5) = 5 / sqrt(6825) = 0.060522...
        (10, 5, 2, 3, 5 / (math.sqrt(6825) + EPS)),
    ],
)
def test_mcc_table(tp, fp, tn, fn, expected):
    assert mcc(tp, fp, tn, fn) == pytest.approx(expected, abs=1e-12)


def test_mcc_hand_values_and_eps():
    assert mcc(3, 1, 4, 2) == pytest.approx(0.408248290, abs=1e-8)
    assert mcc(6, 4, 0, 0, eps=0.5) == 0.0
    with pytest.raises(ValueError, match="denominator"):
        mcc(6, 4, 0, 0, eps=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        mcc(-1, 0, 0, 0)
    with pytest.raises(ValueError, match="non-negative"):
        mcc(1.5, 0, 0, 0)


def test_tool_labels_and_confusion():
    text_ok = {"a": True, "b": False, "c": False, "d": True, "e": False}
    solved = {"a": True, "b": True, "c": False, "d": True, "e": True}
    labels = tool_labels(text_ok, solved)
    assert labels == {"a": "redundant", "b": "required", "c": "unsolved", "d": "redundant", "e": "required"}
    called = {"a": True, "b": True, "c": True, "d": False, "e": False}
    # the paper's item set: c (wrong in text mode, solved by no mode) is Tool-Required: TP b, c; FP a; TN d; FN e
    assert confusion(labels, called) == (2, 1, 1, 1)
    assert confusion(labels, called, unsolved="excluded") == (1, 1, 1, 1)  # c left out
    with pytest.raises(ValueError, match="'required' or 'excluded'"):
        confusion(labels, called, unsolved="drop")
    with pytest.raises(ValueError, match="same ids"):
        tool_labels({"a": True}, {"b": True})
    with pytest.raises(ValueError, match="correct in text mode"):
        tool_labels({"a": True}, {"a": False})
    with pytest.raises(ValueError, match="no adaptive-mode"):
        confusion({"a": "required"}, {})
    with pytest.raises(ValueError, match="unknown label"):
        confusion({"a": "maybe"}, {"a": True})


@pytest.mark.parametrize(
    "kw,expected",
    [
        ({"covered": [[True, False], [False, False], [False, True]]}, 2 / 3),
        ({"covered": [True, True, False]}, 2 / 3),
        ({"covered": [[True, True], [True, False], [True, False]]}, 1.0),  # one step may cover many
        ({"sim_fn": lambda K, S: [[0.9, 0.1], [0.35, 0.2], [0.1, 0.36]]}, 2 / 3),  # strictly above tau=0.35
        ({"sim_fn": lambda K, S: [[0.0, 0.0]] * 3}, 0.0),
    ],
)
def test_key_step_coverage(kw, expected):
    assert key_step_coverage(["k1", "k2", "k3"], ["s1", "s2"], **kw) == pytest.approx(expected)


def test_key_step_coverage_edges():
    with pytest.raises(ValueError, match=r"\|K\| = 0"):
        key_step_coverage([], ["s"], covered=[])
    assert key_step_coverage(["k"], [], lambda K, S: pytest.fail("not called")) == 0.0
    with pytest.raises(ValueError, match="exactly one"):
        key_step_coverage(["k"], ["s"])
    with pytest.raises(ValueError, match="shape"):
        key_step_coverage(["k", "j"], ["s"], covered=[[True, False]])
    with pytest.raises(ValueError, match="sim_fn returned shape"):
        key_step_coverage(["k"], ["s"], lambda K, S: [[1.0, 1.0]])
    # an exact-match "judge" with tau 0.5
    judge = lambda K, S: [[1.0 if k.lower() == s.lower() else 0.0 for s in S] for k in K]  # noqa: E731
    assert key_step_coverage(["Read", "Add"], ["read", "multiply"], judge, tau=0.5) == 0.5


@pytest.mark.parametrize("valid,total,expected", [(3, 4, 0.75), (0, 3, 0.0), (2, 2, 1.0), (0, 0, None)])
def test_tool_effectiveness(valid, total, expected):
    assert tool_effectiveness(valid, total) == expected


def test_tool_effectiveness_rejects_bad_counts():
    with pytest.raises(ValueError):
        tool_effectiveness(3, 2)


def _res(uid, mode, domain, correct, called=False, calls=(), tokens=10, steps=2, error=None):
    recs = [CallRecord(1, "zoom_in", {}, s, None if s == "ok" else "x") for s in calls]
    return AdaptiveResult(
        uid=uid, mode=mode, domain=domain, question="q", answer="a", answer_type="free_form",
        calls=recs, n_calls=len(recs), n_ineffective=sum(s == "error" for s in calls), called=called or bool(calls),
        n_turns=1 + bool(calls), tokens=tokens, steps=steps, error=error, correct=correct,
    )


def test_summarize():
    results = [
        # text mode: a, d correct -> redundant; b, e wrong
        _res("a", "text", "ocr", True), _res("b", "text", "ocr", False), _res("c", "text", "gui", False),
        _res("d", "text", "gui", True), _res("e", "text", "math", False),
        # adaptive: a called (FP), b called+correct (TP), c unsolved, d not called (TN), e not called (FN)
        _res("a", "adaptive", "ocr", True, calls=["ok", "error"], tokens=30, steps=4),
        _res("b", "adaptive", "ocr", True, calls=["ok"], tokens=20, steps=3),
        _res("c", "adaptive", "gui", False, calls=["ok"]),
        _res("d", "adaptive", "gui", True),
        _res("e", "adaptive", "math", False),
        # oracle solves e -> e is required
        _res("e", "oracle", "math", True), _res("a", "oracle", "ocr", None, error="timeout"),
    ]
    s = summarize([r.to_dict() if i % 2 else r for i, r in enumerate(results)])  # objects and dicts mixed
    assert s["n"] == {"text": 5, "adaptive": 5, "oracle": 1}
    assert s["errors"] == {"oracle": 1}
    assert s["accuracy"]["text"] == {"all": 0.4, "gui": 0.5, "math": 0.0, "ocr": 0.5}
    assert s["accuracy"]["adaptive"] == {"all": 0.6, "gui": 0.5, "math": 0.0, "ocr": 1.0}
    assert s["labels"] == {"redundant": 2, "required": 2, "unsolved": 1}
    # paper: c (no mode solves it, tool called) counts as required and called: TP
    assert s["confusion"] == {"tp": 2, "fp": 1, "tn": 1, "fn": 1}
    assert s["mcc"] == pytest.approx((2 * 1 - 1 * 1) / math.sqrt(3 * 3 * 2 * 2), abs=1e-6)
    assert s["confusion_solvable"] == {"tp": 1, "fp": 1, "tn": 1, "fn": 1} and s["mcc_solvable"] == pytest.approx(0.0)
    eff = s["efficiency"]["adaptive"]
    assert eff["tokens"] == pytest.approx((30 + 20 + 10 + 10 + 10) / 5)
    assert eff["tool_calls"] == pytest.approx(4 / 5) and eff["steps"] == pytest.approx((4 + 3 + 2 + 2 + 2) / 5)
    assert s["tool_exec_ok_rate"] == {"text": None, "adaptive": 0.75, "oracle": None}
    # tool-free adaptive answers: d (text right, adaptive right) and e (wrong, wrong): consistent
    assert s["consistency"] == {"n": 2, "inconsistent": 0, "rate": 0.0, "text_only": 0, "adaptive_only": 0}


def test_mode_consistency_counts_only_tool_free_adaptive_answers():
    """AdaptMMBench's check (text mode vs the text part of adaptive mode): items whose adaptive episode
    called a tool, or that lack an adaptive verdict, stay out; a flip either way is inconsistent."""
    text = {"a": True, "b": True, "c": False, "d": False, "e": True, "f": False}
    adaptive = {"a": True, "b": False, "c": True, "d": False, "e": False}  # f: no adaptive answer
    called = {"a": False, "b": False, "c": False, "d": False, "e": True}
    c = mode_consistency(text, adaptive, called)
    assert c == {"n": 4, "inconsistent": 2, "rate": 0.5, "text_only": 1, "adaptive_only": 1}
    assert mode_consistency(text, adaptive, {k: True for k in called})["rate"] is None
    assert mode_consistency({}, {}, {}) == {"n": 0, "inconsistent": 0, "rate": None, "text_only": 0, "adaptive_only": 0}


def test_summarize_without_text_mode_has_no_mcc_and_rejects_unscored():
    s = summarize([_res("a", "adaptive", "ocr", True)])
    assert s["mcc"] is None and s["labels"] is None
    with pytest.raises(ValueError, match="not scored"):
        summarize([_res("a", "text", "ocr", None)])
    with pytest.raises(ValueError, match="duplicate"):
        summarize([_res("a", "text", "ocr", True), _res("a", "text", "ocr", True)])


def test_mcc_uses_the_papers_item_set_not_only_items_some_mode_solves():
    # 10 items; the model gets 3 right in text mode (redundant). Of the 7 wrong ones, 3 are solved by no mode.
    # The two item sets give MCCs of different size: the paper counts the unsolved ones as Tool-Required.
    text = {f"i{k}": k < 3 for k in range(10)}
    solved = {f"i{k}": k < 7 for k in range(10)}  # i7, i8, i9: no mode solves them
    called = {"i0": True, "i1": False, "i2": False, "i3": True, "i4": False, "i5": False, "i6": False,
              "i7": False, "i8": False, "i9": True}
    labels = tool_labels(text, solved)
    # paper: required = i3..i9 (7): TP i3, i9 = 2; FN 5; redundant i0..i2: FP i0 = 1, TN 2
    assert confusion(labels, called) == (2, 1, 2, 5)
    assert mcc(2, 1, 2, 5) == pytest.approx(-1 / 21, abs=1e-6)  # (2*2 - 1*5) / sqrt(3*7*3*7) = -0.048
    # solvable only: required = i3..i6: TP 1, FN 3; FP 1, TN 2
    assert confusion(labels, called, unsolved="excluded") == (1, 1, 2, 3)
    assert mcc(1, 1, 2, 3) == pytest.approx((1 * 2 - 1 * 3) / math.sqrt(2 * 4 * 3 * 5), abs=1e-6)


@pytest.mark.parametrize("tp, fp, tn, fn", [(0, 0, 30, 12), (6, 4, 0, 0), (5, 0, 0, 3), (0, 3, 5, 0)])
def test_defined_mcc_is_none_where_a_margin_is_empty(tp, fp, tn, fn):
    from howeval.benchmarks.adapt.metrics import defined_mcc

    assert mcc(tp, fp, tn, fn) == 0.0  # the paper's formula with its epsilon: reads as chance level
    assert defined_mcc(tp, fp, tn, fn) is None
    assert defined_mcc(3, 1, 4, 2) == mcc(3, 1, 4, 2)
    with pytest.raises(ValueError, match="tp must be a non-negative int"):
        defined_mcc(-1, 0, 0, 0)
