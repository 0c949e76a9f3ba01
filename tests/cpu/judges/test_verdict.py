"""Tests for howeval.judges.verdict: the verdict invariants (labels xor error) and one LABELS tuple."""
from __future__ import annotations

import pytest

from howeval.judges.verdict import LABELS, PatternVerdict, make_verdict


def test_verdict_invariants():
    with pytest.raises(ValueError, match="must carry no labels"):
        PatternVerdict(labels={k: False for k in LABELS}, evidence={}, judge="j", judge_version="0", error="x")
    with pytest.raises(ValueError, match="missing \\['pr'\\]"):
        PatternVerdict(labels={"cot": True, "rep": False, "con": False}, evidence={}, judge="j", judge_version="0")
    with pytest.raises(TypeError, match="bool"):
        PatternVerdict(labels={k: 1 for k in LABELS}, evidence={}, judge="j", judge_version="0")  # type: ignore[misc]


def test_labels_tuple_matches_records():
    records = pytest.importorskip("howeval.records")
    assert records.LABELS == LABELS


def test_make_verdict_drops_evidence_of_false_labels_and_failed_has_none():
    v = make_verdict({"cot": True, "rep": False, "con": False, "pr": False}, {"cot": "wait", "rep": "x"}, "j", "1")
    assert v.evidence == {"cot": "wait", "rep": None, "con": None, "pr": None}
    assert v.trigger is True and v.as_vector() == (True, False, False, False) and v.ok
    f = PatternVerdict.failed("j", "1", "judge_error: timeout", raw="...")
    assert (f.ok, f.trigger, f.as_vector(), f.labels) == (False, None, None, {})
    with pytest.raises(ValueError, match="non-empty error"):
        PatternVerdict.failed("j", "1", "")
