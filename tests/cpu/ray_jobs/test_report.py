"""Tests for ray_jobs.report: the judge-agreement section over several pattern judges."""
from __future__ import annotations


def test_judge_agreement_over_two_judges():
    from ray_jobs.report import judge_agreement

    rows = []
    vectors = {"x": ((1, 0, 0, 0), (1, 0, 0, 0)), "y": ((0, 1, 0, 0), (0, 0, 0, 0)), "z": ((0, 0, 0, 0), None)}
    for sid, (a, b) in vectors.items():
        for name, v in (("rules@1", a), ("llm@1", b)):
            labels = dict(zip(("cot", "rep", "con", "pr"), (None,) * 4 if v is None else map(bool, v)))
            rows.append({"sample_id": sid, "config": "c", "mode": "T", "response_hash": "h", "judge": name,
                         "judge_error": "judge_error: garbage" if v is None else None, **labels})
    a = judge_agreement(rows)
    assert a["judges"] == ["llm@1", "rules@1"] and a["n"] == 3
    assert a["n_unanimous"] == 1 and a["n_consensus_samples"] == 1 and a["n_with_errors"] == 1  # z: one judge failed
    assert a["per_label"]["rep"]["n_disputed"] == 1 and a["disputed"] == [["y", "c", "T"]]
    assert judge_agreement([r for r in rows if r["judge"] == "rules@1"]) is None
