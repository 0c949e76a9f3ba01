"""Tests for howeval.judges.pipeline: the verifier and the pattern judges over response rows -> Judgment rows."""
from __future__ import annotations

import pytest

from howeval.config import JudgesConfig
from howeval.judges.pipeline import Judger


def test_judger_never_labels_failures_or_truncations():
    j = Judger(JudgesConfig())
    base = {"config": "c", "mode": "T", "question": "What is 2+2?", "answer": "4", "answer_type": "integer_number",
            "options": None, "response_hash": "h"}
    rows = [{**base, "sample_id": "ok", "response": "The answer is \\boxed{4}.", "error": None, "truncated": False},
            {**base, "sample_id": "err", "response": "", "error": "timeout", "truncated": False},
            {**base, "sample_id": "cut", "response": "", "error": None, "truncated": True}]
    out = {r["sample_id"]: r for r in j.judge(rows)}
    assert out["ok"]["correct"] is True and out["ok"]["cot"] is False and out["ok"]["judge_error"] is None
    assert out["err"]["correct"] is None and out["err"]["cot"] is None and "timeout" in out["err"]["judge_error"]
    assert out["cut"]["correct"] is False and out["cut"]["verify_method"] == "truncated" and out["cut"]["rep"] is None


def test_rejudging_merges_judges_into_the_run():
    from howeval.judges.pipeline import merge_judges

    old = JudgesConfig.model_validate({"pattern": [{"name": "rules"}, {"name": "a", "version": "1"}]})
    new = JudgesConfig.model_validate({"pattern": [{"name": "a", "version": "2"}, {"name": "b"}]})
    m = merge_judges(old, new)
    assert [(j.name, j.version) for j in m.pattern] == [("rules", "1"), ("a", "2"), ("b", "1")]
    assert m.primary_name == "rules"
    assert merge_judges(old, new.model_copy(update={"primary": "b"})).primary_name == "b"


def test_cached_verifier_verdict_is_reused_typed():
    """A cached verdict (a VERIFY_TYPE struct read back from Arrow, or a VerifyResult) is reused as is:
    the verifier does not run again, and the verdict stays a VerifyResult (no JSON string in between)."""
    import pyarrow as pa

    from howeval.judges.verify import VerifyResult
    from howeval.records import VERIFY_TYPE

    cached = VerifyResult(True, "5", "llm", "same value")
    base = {"config": "c", "mode": "T", "question": "Q", "answer": "4", "answer_type": "integer_number",
            "options": None, "response": "The answer is 5.", "error": None, "truncated": False, "response_hash": "h"}
    table = pa.Table.from_pylist([{"cached_verify": vars(cached)}], schema=pa.schema([("cached_verify", VERIFY_TYPE)]))
    rows = [{**base, "sample_id": "a", **table.to_pylist()[0]},
            {**base, "sample_id": "b", "cached_verify": cached},
            {**base, "sample_id": "c", "cached_verify": None}]
    j = Judger(JudgesConfig())
    ver = j.verify_rows(rows)
    assert ver[0] == cached and ver[1] is cached  # rules alone would say 5 != 4
    assert ver[2] == VerifyResult(False, "5", "rule", ver[2].reason) and isinstance(ver[2], VerifyResult)
    out = {r["sample_id"]: r for r in j.judge(rows)}
    assert (out["a"]["correct"], out["a"]["verify_method"], out["c"]["correct"]) == (True, "llm", False)
    with pytest.raises(KeyError, match=r"cached verifier verdict: missing fields \['reason'\]"):
        j.verify_rows([{**base, "sample_id": "d", "cached_verify": {"correct": True, "extracted": "5", "method": "llm"}}])
