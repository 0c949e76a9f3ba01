"""Judge calibration scores, the calibration-set sampler, and the calibrate job (hand-checked)."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from howeval.judges.calibration import (calibration_scores, calibration_table, item_key, labels_of,
                                 predicted_trigger, sample_calibration_set)
from howeval.judges.verdict import PatternVerdict, make_verdict
from howeval.records import JUDGMENT_SCHEMA, LABELS
from ray_jobs import calibrate as job


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


# -- the job -------------------------------------------------------------------------------------


def test_job_rule_judge_on_the_real_labelled_file(tmp_path, repo_root, shared_data):
    labels = repo_root / "tests" / "fixtures" / "human_labels.jsonl"
    rows = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(rows) >= 30 and all("response" not in r for r in rows), "texts are read from ../shared/data"
    rc = job.main(["--labels", str(labels), "--responses", str(shared_data / "responses"),
                   "--manifest", str(shared_data / "manifest.jsonl"), "--out", str(tmp_path)])
    assert rc == 0
    s = json.loads((tmp_path / "calibration.json").read_text())
    j = s["judges"]["rules@1"]
    assert s["n_items"] == len(rows) and j["n"] == len(rows) and j["n_missing"] == 0
    assert "| rules@1 | rep |" in (tmp_path / "calibration.md").read_text()


def test_job_missing_texts_is_an_error(tmp_path):
    labels = tmp_path / "h.jsonl"
    labels.write_text(json.dumps({"source": "x.jsonl", "id": "1", "model": "m", "labels": L()}) + "\n")
    assert job.main(["--labels", str(labels), "--responses", str(tmp_path), "--out", str(tmp_path / "o")]) == 2


def test_job_from_predictions_jsonl_and_inline_texts(tmp_path):
    labels = tmp_path / "h.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "model": "m", "response": "Wait, let me re-check. The answer is 5.", "labels": L(cot=True)},
        {"id": "2", "model": "m", "response": "The answer is 4.", "labels": L()}]) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "model": "m", "judge": "x", **L(cot=True)},
        {"id": "2", "model": "m", "judge": "x", **L(rep=True)},
        {"id": "1", "model": "m", "judge": "y", "judge_error": "judge_error: bad json", **dict.fromkeys(LABELS)}]) + "\n")
    assert job.main(["--labels", str(labels), "--predictions", str(preds), "--out", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "calibration.json").read_text())
    assert s["judges"]["x"]["labels"]["cot"]["f1"] == 1.0 and s["judges"]["x"]["labels"]["rep"]["fp"] == 1
    assert s["judges"]["y"]["n"] == 0 and s["judges"]["y"]["n_missing"] == 2
    # in-process rule judge on inline texts
    assert job.main(["--labels", str(labels), "--out", str(tmp_path / "b")]) == 0
    s = json.loads((tmp_path / "b" / "calibration.json").read_text())
    assert s["judges"]["rules@1"]["labels"]["cot"]["tp"] == 1


def _write_judgments(run, rows):
    (run / "judgments" / "j").mkdir(parents=True)
    full = [{f.name: r.get(f.name) for f in JUDGMENT_SCHEMA} for r in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=JUDGMENT_SCHEMA), run / "judgments" / "j" / "part.parquet")


def test_job_from_a_run_and_sampling(tmp_path):
    run = tmp_path / "run"
    rows = []
    for i in range(12):
        for judge, bits in (("a@1", (i % 2 == 0, False, False, False)), ("b@1", (i % 2 == 0, i % 3 == 0, False, False))):
            rows.append({"sample_id": f"s{i}", "config": "m", "mode": "NT", "judge": judge,
                         **dict(zip(LABELS, bits))})
    rows.append({"sample_id": "s0", "config": "m", "mode": "NT", "judge": "a@1", "judge_error": "judge_error: x"})
    _write_judgments(run, rows)
    labels = tmp_path / "h.jsonl"
    labels.write_text("\n".join(json.dumps({"sample_id": f"s{i}", "config": "m", "mode": "NT",
                                            "labels": L(cot=i % 2 == 0)}) for i in range(12)) + "\n")
    assert job.main(["--labels", str(labels), "--run", str(run), "--out", str(tmp_path / "c")]) == 0
    s = json.loads((tmp_path / "c" / "calibration.json").read_text())
    assert s["judges"]["a@1"]["labels"]["cot"]["f1"] == 1.0 and s["judges"]["a@1"]["n"] == 12  # success wins
    assert s["judges"]["b@1"]["labels"]["rep"]["fp"] == 4
    assert job.main(["--sample", "6", "--run", str(run), "--out", str(tmp_path / "d")]) == 0
    summary = json.loads((tmp_path / "d" / "calibration_set.json").read_text())
    assert summary["n"] == 6 and summary["judges"] == ["a@1", "b@1"]
    assert len((tmp_path / "d" / "calibration_set.jsonl").read_text().splitlines()) == 6
