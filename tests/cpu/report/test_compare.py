"""howeval.report.compare: paired deltas, McNemar and flips between two sides, recomputed by hand."""
from __future__ import annotations

import pytest
from scipy.stats import binomtest

from howeval.report.compare import compare_markdown, compare_rows, paired_stat


def _r(sid, mode, correct, cot, fam="VG", text="t"):
    return {"sample_id": sid, "mode": mode, "correct": correct, "cot": cot, "rep": False, "con": False, "pr": False,
            "family": fam, "category": "c", "question": "q", "answer": "1", "response": text}


def test_paired_stat_by_hand():
    pairs = [(True, False)] * 3 + [(False, True)] * 1 + [(True, True)] * 4 + [(None, True)]
    s = paired_stat(pairs, n_boot=300, min_pairs=8)
    assert s["n"] == 8 and s["a"] == 7 / 8 and s["b"] == 5 / 8 and s["delta"] == pytest.approx(-2 / 8)
    assert (s["mcnemar"]["b"], s["mcnemar"]["c"]) == (3, 1)
    assert s["mcnemar"]["p_value"] == pytest.approx(binomtest(1, 4).pvalue)
    assert s["ci"][0] <= s["delta"] <= s["ci"][1]
    assert paired_stat([(None, True)])["delta"] is None


def test_compare_rows_shared_prompts_flips_and_families():
    a = [_r("p1", "NT", True, False), _r("p2", "NT", True, True), _r("p3", "NT", False, False, "KR"),
         _r("p4", "NT", None, True, "KR"), _r("only_a", "NT", True, False)]
    b = [_r("p1", "NT", False, True, text="B1"), _r("p2", "NT", True, False), _r("p3", "NT", True, False, "KR"),
         _r("p4", "NT", True, True, "KR"), _r("only_b", "NT", False, False)]
    c = compare_rows(a, b, n_boot=200)
    assert list(c) == ["NT"]
    m = c["NT"]
    assert (m["n_a"], m["n_b"], m["n_shared"]) == (5, 5, 4)
    # Acc on p1..p3 (p4 unresolved in A): A = 2/3, B = 2/3
    assert m["acc"]["n"] == 3 and m["acc"]["a"] == pytest.approx(2 / 3) and m["acc"]["delta"] == pytest.approx(0)
    # Trigger on p1..p4: A = 2/4 (p2, p4), B = 2/4 (p1, p4)
    assert m["trigger"]["n"] == 4 and m["trigger"]["delta"] == 0 and (m["trigger"]["mcnemar"]["b"], m["trigger"]["mcnemar"]["c"]) == (1, 1)
    assert m["labels"]["cot"]["delta"] == 0 and m["labels"]["rep"]["a"] == 0
    assert m["families"]["KR"]["acc"]["n"] == 1 and m["families"]["KR"]["acc"]["delta"] == 1.0
    assert m["families"]["VG"]["acc"]["delta"] == pytest.approx(-0.5)
    flips = {k: [x["sample_id"] for x in v] for k, v in m["flips"].items()}
    assert flips == {"right_to_wrong": ["p1"], "wrong_to_right": ["p3"], "clean_to_triggered": ["p1"],
                     "triggered_to_clean": ["p2"]}
    assert m["flips"]["right_to_wrong"][0]["b"]["response"] == "B1"
    md = compare_markdown({"a": {"run": "A", "config": "x"}, "b": {"run": "B", "config": "y"}, "modes": c})
    assert "## NT: 4 shared prompts (A 5, B 5)" in md and "### NT: right → wrong (1)" in md
    assert "| Acc | 3 | 66.7 | 66.7 | +0.0 |" in md


def test_no_interval_below_the_minimum_of_pairs_and_cross_mode_pairs_for_two_checkpoints():
    """Issue 34: 2 pairs that agree give no [+100, +100] interval; an NT-only side against a T-only side
    (a non-thinking and a thinking checkpoint) is paired as "NT vs T"."""
    from howeval.report.compare import MIN_PAIRS_CI

    s = paired_stat([(False, True), (False, True)], n_boot=200)
    assert s["delta"] == 1.0 and s["ci"] is None and s["ci_refused"] == f"too few pairs (2 < {MIN_PAIRS_CI})"
    assert paired_stat([(False, True)] * MIN_PAIRS_CI, n_boot=200)["ci"] == [1.0, 1.0]
    nt = [_r(f"p{i}", "NT", i % 2 == 0, False) for i in range(4)]
    t = [_r(f"p{i}", "T", True, i == 0) for i in range(4)]
    c = compare_rows(nt, t, n_boot=200)
    assert list(c) == ["NT vs T"] and c["NT vs T"]["acc"]["delta"] == pytest.approx(0.5)
    md = compare_markdown({"a": {"run": "R", "config": "instruct"}, "b": {"run": "R", "config": "thinking"},
                           "modes": c, "warnings": ["the two sides sampled differently: temperature 0.0 (A) vs 0.6 (B)"]})
    assert md.startswith("# Comparison: A: instruct vs B: thinking (run R)\n")
    assert "| Acc | 4 | 50.0 | 100.0 | +50.0 | too few pairs (4 < 10) |" in md
    assert "- **Warning**: the two sides sampled differently: temperature 0.0 (A) vs 0.6 (B)." in md
