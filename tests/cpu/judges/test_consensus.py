"""consensus / consensus_table: majority, agreement counts, unanimity, errors excluded and reported."""
from __future__ import annotations

import pytest

from howeval.judges.consensus import consensus, consensus_table
from howeval.judges.verdict import LABELS, PatternVerdict, make_verdict


def v(bits: str, judge: str = "j") -> PatternVerdict:
    return make_verdict({k: b == "1" for k, b in zip(LABELS, bits)}, None, judge, "0")


def err(judge: str = "j") -> PatternVerdict:
    return PatternVerdict.failed(judge, "0", "judge_error: no JSON object", raw="nope")


@pytest.mark.parametrize(
    "votes,majority,agreement,unanimous,disputed",
    [
        (["1000", "1000", "1000"], (True, False, False, False), (3, 3, 3, 3), True, ()),
        (["1000", "1100", "1000"], (True, False, False, False), (3, 2, 3, 3), False, ("rep",)),
        (["1001", "0001", "1000"], (True, False, False, True), (2, 3, 3, 2), False, ("cot", "pr")),
        (["0000", "0010"], (False, False, None, False), (2, 2, 1, 2), False, ("con",)),
        (["0110"], (False, True, True, False), (1, 1, 1, 1), True, ()),
    ],
)
def test_consensus_table_driven(votes, majority, agreement, unanimous, disputed):
    r = consensus({f"j{i}": v(b, f"j{i}") for i, b in enumerate(votes)})
    assert r.as_vector() == majority
    assert tuple(r.agreement[k] for k in LABELS) == agreement
    assert r.unanimous is unanimous and r.disputed_labels == disputed
    assert r.n_judges == len(votes) and r.complete


def test_errors_are_excluded_and_reported():
    r = consensus({"a": v("1000"), "b": v("1000"), "c": err("c")})
    assert r.n_judges == 2 and r.judges == ("a", "b")
    assert not r.unanimous and not r.complete and not r.is_consensus_sample  # c did not label it: not unanimous
    assert r.errors == {"c": "judge_error: no JSON object"}
    assert r.votes_true == {"cot": 2, "rep": 0, "con": 0, "pr": 0}


def test_all_failed_has_no_labels():
    r = consensus({"a": err("a"), "b": err("b")})
    assert r.n_judges == 0 and not r.unanimous
    assert r.as_vector() == (None, None, None, None) and r.trigger is None


def test_trigger_and_empty_input():
    assert consensus({"a": v("0000")}).trigger is False
    assert consensus({"a": v("0001"), "b": v("0000")}).trigger is None  # pr tied, nothing else true
    assert consensus({"a": v("1001"), "b": v("1000")}).trigger is True
    with pytest.raises(ValueError, match="at least one"):
        consensus({})


def test_consensus_table_counts():
    rows = [
        {"a": v("1000"), "b": v("1000"), "c": v("1000")},  # consensus sample
        {"a": v("1000"), "b": v("1100"), "c": v("1000")},  # rep disputed 2/3
        {"a": v("0000"), "b": v("0000"), "c": err()},  # agree among 2, one error: not unanimous
        {"a": err(), "b": err(), "c": err()},  # no labels
    ]
    t = consensus_table(rows)
    assert t["n"] == 4 and t["n_unanimous"] == 1 and t["n_consensus_samples"] == 1
    assert t["n_with_errors"] == 2 and t["n_no_labels"] == 1 and t["unanimous_rate"] == 0.25
    assert t["per_label"]["rep"] == {"agreement_counts": {3: 1, 2: 2}, "n_disputed": 1, "majority_true": 0, "ties": 0}
    assert t["per_label"]["cot"]["majority_true"] == 2
    assert t["per_label"]["cot"]["agreement_counts"] == {3: 2, 2: 1}
    assert consensus_table([])["unanimous_rate"] is None
