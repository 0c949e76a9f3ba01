"""Tests for howeval.metrics.patterneval: SPEC section 1 metrics computed by hand."""
from __future__ import annotations

import pytest

from howeval.metrics.patterneval import group_metrics, paired_deltas, sweep_metrics, trigger_of


def _row(sid, mode, correct, labels=(False, False, False, False), **kw):
    return {"sample_id": sid, "config": "c", "mode": mode, "correct": correct, "family": kw.get("family", "VG"),
            "category": kw.get("category", "ocr"), **dict(zip(("cot", "rep", "con", "pr"), labels)), **kw}


def test_metrics_hand_computed():
    nt = [_row("a", "NT", True, (True, False, False, False)), _row("b", "NT", False, (False, True, True, False)),
          _row("c", "NT", None, (None,) * 4, error="boom"), _row("d", "NT", True)]
    t = [_row("a", "T", True), _row("b", "T", True), _row("c", "T", False), _row("d", "T", False, (False,) * 3 + (True,))]
    m = sweep_metrics(nt + t)["configs"]["c"]
    assert m["NT"]["acc"] == pytest.approx(2 / 3) and m["NT"]["trigger"] == pytest.approx(2 / 3)
    assert m["NT"]["labels"] == {"cot": pytest.approx(1 / 3), "rep": pytest.approx(1 / 3),
                                 "con": pytest.approx(1 / 3), "pr": 0.0}
    assert (m["NT"]["n"], m["NT"]["n_scored"], m["NT"]["n_errors"]) == (4, 3, 1)
    assert m["T"]["acc"] == 0.5 and m["T"]["trigger"] == 0.25
    # pairs a, b, d (c has no NT verdict): T-NT correctness = 0 + 1 - 1 -> 0; NT-T triggers = 1 + 1 - 1 -> 1/3
    assert m["delta_acc"] == 0.0 and m["n_paired_acc"] == 3
    assert m["delta_pat"] == pytest.approx(1 / 3) and m["n_paired_pat"] == 3


def test_trigger_is_any_label_and_none_when_unlabelled():
    assert trigger_of(_row("a", "NT", True, (False, False, True, False))) is True
    assert trigger_of(_row("a", "NT", True)) is False
    assert trigger_of(_row("a", "NT", True, (None,) * 4)) is None
    assert group_metrics([])["acc"] is None and paired_deltas([], [])["delta_acc"] is None


# ------------------------------------------------------------- issue 25: denominators and "did T think?"


def test_acc_and_trigger_keep_their_denominators_and_the_papers_all_n_form():
    rows = [_row("a", "NT", True, (True, False, False, False)), _row("b", "NT", False),
            _row("c", "NT", None),  # unresolved: out of Acc, wrong in Acc all-N
            _row("d", "NT", None, (None,) * 4, error="engine: boom"),  # engine error: out of both, wrong in all-N
            _row("e", "NT", False, (None,) * 4, truncated=True)]  # truncated: scored wrong, no labels
    g = group_metrics(rows)
    assert (g["n"], g["n_scored"], g["n_labeled"]) == (5, 3, 3)
    assert g["acc"] == pytest.approx(1 / 3) and g["acc_all_n"] == pytest.approx(1 / 5)
    assert g["trigger"] == pytest.approx(1 / 3) and g["trigger_all_n"] == pytest.approx(1 / 5)


def test_t_rows_without_a_reasoning_channel_and_length_cuts_are_counted_and_warned():
    nt = [_row(s, "NT", True, finish_reason="stop") for s in "abc"]
    t = [_row("a", "T", True, finish_reason="stop", reasoning=None),
         _row("b", "T", False, finish_reason="length", reasoning=""),
         _row("c", "T", False, (None,) * 4, finish_reason="length", truncated=True, reasoning=None)]
    m = sweep_metrics(nt + t)["configs"]["c"]
    assert (m["T"]["n_reasoning"], m["T"]["n_length_cut"], m["T"]["n_truncated"]) == (0, 2, 1)
    assert m["NT"]["n_length_cut"] == 0
    assert m["warnings"][0].startswith("config 'c': none of its 3 T rows has a reasoning channel")
    assert m["warnings"][1] == ("config 'c' T: 2 of 3 answers stopped at the length limit (finish_reason 'length'; "
                                "1 of them inside the reasoning, no answer)")
    thinking = [dict(r, reasoning="2+2=4") for r in t]
    assert sweep_metrics(nt + thinking)["configs"]["c"]["T"]["n_reasoning"] == 3
    assert not any("reasoning channel" in w for w in sweep_metrics(nt + thinking)["configs"]["c"]["warnings"])


# ------------------------------------------------------------- issue 34: nothing measured is not 0.0
def test_all_n_is_not_measured_when_every_row_failed_and_the_report_warns():
    failed = [_row(s, "NT", None, (None,) * 4, error="AuthenticationError: Error code: 401") for s in "abc"]
    g = group_metrics(failed)
    assert (g["acc"], g["acc_all_n"], g["trigger"], g["trigger_all_n"]) == (None, None, None, None)
    m = sweep_metrics(failed)["configs"]["c"]
    assert m["warnings"][0].startswith("config 'c' NT: not measured: all 3 rows failed (engine errors")
    # answers with a verdict but every judge call failed: Acc measured, Trigger not
    unjudged = [dict(_row(s, "NT", s == "a", (None,) * 4), judge_error="401") for s in "ab"]
    g = group_metrics(unjudged)
    assert (g["acc_all_n"], g["trigger_all_n"]) == (0.5, None)
    w = sweep_metrics(unjudged)["configs"]["c"]["warnings"]
    assert w == ["config 'c' NT: Trigger not measured: every judge call failed (2 judge errors: see the judge_error "
                 "column of judgments/)"]
