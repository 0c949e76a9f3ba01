"""Tests for howeval.judges.calibration: scores and the calibration-set sampler, hand-checked (the job: tests/cpu/ray_jobs/test_calibrate.py)."""
from __future__ import annotations

import pytest

from howeval.judges.calibration import (
    calibration_scores,
    calibration_table,
    item_key,
    labels_of,
    predicted_trigger,
    sample_calibration_set,
)
from howeval.judges.verdict import PatternVerdict, make_verdict
from howeval.records import LABELS


def L(cot=False, rep=False, con=False, pr=False):
    return {"cot": cot, "rep": rep, "con": con, "pr": pr}


def V(*bits, judge="j"):
    return make_verdict(dict(zip(LABELS, map(bool, bits))), None, judge, "0")


def test_item_key_and_labels_of():
    assert item_key({"sample_id": "s", "config": "c", "mode": "T"}) == "s|c|T"
    assert item_key({"source": "f.jsonl", "id": 7, "model": "m"}) == "f.jsonl|7|m"
    with pytest.raises(ValueError, match="names no item"):
        item_key({"labels": {}})
    assert labels_of({"labels": L(pr=True)}) == L(pr=True)
    assert labels_of({**L(), "judge_error": "boom"}) is None
    assert labels_of({**L(), "cot": None}) is None
    with pytest.raises(TypeError, match="JSON booleans"):
        labels_of({"id": 1, "labels": {**L(), "rep": 1}})


def test_scores_hand_checked():
    human = {"a": L(pr=True), "b": L(pr=True, rep=True), "c": L(), "d": L(con=True), "e": L(pr=True)}
    pred = {"a": L(pr=True), "b": L(pr=False, rep=True), "c": L(pr=True), "d": L(), "e": None}  # e: judge error
    s = calibration_scores(human, {"j": pred})
    j = s["judges"]["j"]
    assert (j["n"], j["n_missing"], j["missing"]) == (4, 1, ["e"])
    pr = j["labels"]["pr"]  # over a..d: human + {a, b}; judge + {a, c} -> TP 1, FP 1, FN 1
    assert (pr["tp"], pr["fp"], pr["fn"], pr["tn"]) == (1, 1, 1, 1)
    assert pr["precision"] == pr["recall"] == pr["f1"] == 0.5
    rep = j["labels"]["rep"]
    assert (rep["precision"], rep["recall"], rep["f1"]) == (1.0, 1.0, 1.0)
    con = j["labels"]["con"]  # human + {d}, judge predicts none: precision undefined, recall 0
    assert (con["precision"], con["recall"], con["f1"]) == (None, 0.0, None)
    cot = j["labels"]["cot"]  # no positives on either side
    assert (cot["precision"], cot["recall"], cot["f1"]) == (None, None, None)
    m = j["macro"]  # defined: precision {pr .5, rep 1}, recall {pr .5, rep 1, con 0}, f1 {pr .5, rep 1}
    assert (m["precision"], m["precision_n"]) == (0.75, 2)
    assert (m["recall"], m["recall_n"]) == (0.5, 3)
    assert (m["f1"], m["f1_n"]) == (0.75, 2)
    t = j["trigger"]  # human trigger a,b,d ; judge a,b,c
    assert (t["tp"], t["fp"], t["fn"]) == (2, 1, 1)
    assert s["human_rates"]["pr"] == 0.6 and s["human_rates"]["trigger"] == 0.8
    table = calibration_table(s)
    assert "| j | pr | 0.50 | 0.50 | 0.50 |" in table and "macro" in table


def test_scores_need_items():
    with pytest.raises(ValueError, match="no human-labelled items"):
        calibration_scores({}, {})


def test_predicted_trigger_majority_ties_true():
    assert predicted_trigger({"a": V(1, 0, 0, 0), "b": V(0, 0, 0, 0)}) is True
    assert predicted_trigger({"a": V(1, 0, 0, 0), "b": V(0, 0, 0, 0), "c": V(0, 0, 0, 0)}) is False
    assert predicted_trigger({"a": PatternVerdict.failed("a", "0", "judge_error: x")}) is None


def _pool(n_cons_t, n_cons_c, n_disp_t, n_disp_c):
    items = {}
    for i in range(n_cons_t):
        items[f"ct{i:02d}"] = {"a": V(1, 0, 0, 0), "b": V(1, 0, 0, 0), "c": V(1, 0, 0, 0)}
    for i in range(n_cons_c):
        items[f"cc{i:02d}"] = {"a": V(0, 0, 0, 0), "b": V(0, 0, 0, 0), "c": V(0, 0, 0, 0)}
    for i in range(n_disp_t):  # 2 of 3 trigger -> predicted trigger True
        items[f"dt{i:02d}"] = {"a": V(1, 0, 0, 0), "b": V(0, 1, 0, 0), "c": V(0, 0, 0, 0)}
    for i in range(n_disp_c):  # 1 of 3 triggers -> False
        items[f"dc{i:02d}"] = {"a": V(0, 0, 0, 1), "b": V(0, 0, 0, 0), "c": V(0, 0, 0, 0)}
    return items


def test_sampler_hits_ratio_and_trigger_when_the_pool_allows():
    res = sample_calibration_set(_pool(20, 20, 10, 10), n=10)
    # 7 consensus (round(10 * .7)), 3 disputed ; 7 triggering: round(7 * .7) = 5 in consensus, 2 in disputed
    assert (res["n"], res["n_consensus"], res["n_disputed"]) == (10, 7, 3)
    assert res["achieved_ratio"] == 0.7 and res["predicted_trigger_rate"] == 0.7
    strat = [(it["stratum"], it["predicted_trigger"]) for it in res["items"]]
    assert strat.count(("consensus", True)) == 5 and strat.count(("disputed", True)) == 2
    assert res["shortfall"] == []
    assert {it["key"][:2] for it in res["items"]} == {"ct", "cc", "dt", "dc"}


def test_sampler_is_seeded_and_order_independent():
    pool = _pool(20, 20, 10, 10)
    a = sample_calibration_set(pool, 10, seed=3)
    b = sample_calibration_set(dict(reversed(list(pool.items()))), 10, seed=3)
    assert [i["key"] for i in a["items"]] == [i["key"] for i in b["items"]]
    assert [i["key"] for i in a["items"]] != [i["key"] for i in sample_calibration_set(pool, 10, seed=4)["items"]]


def test_sampler_reports_shortfalls():
    # only 2 disputed items, no non-triggering consensus item
    res = sample_calibration_set(_pool(20, 0, 1, 1), n=10)
    assert (res["n_consensus"], res["n_disputed"]) == (8, 2)
    assert res["achieved_ratio"] == 0.8
    # triggering: want 7; consensus has only triggering items -> 8 + 1 = 9
    assert res["predicted_trigger_rate"] == 0.9
    assert res["shortfall"] == ["wanted 7 consensus items, took 8 (20 consensus and 2 disputed available)",
                                "wanted 7 predicted-triggering items, took 9"]
    res = sample_calibration_set(_pool(2, 0, 1, 0), n=10)
    assert res["n"] == 3 and "only 3 have labels" in res["shortfall"][0]


def test_sampler_skips_items_without_labels_and_checks_args():
    pool = _pool(3, 3, 0, 0) | {"x": {"a": PatternVerdict.failed("a", "0", "judge_error: x")}}
    assert sample_calibration_set(pool, 4)["available"]["no_labels"] == 1
    with pytest.raises(ValueError, match="consensus_ratio"):
        sample_calibration_set(pool, 4, consensus_ratio=1.5)
