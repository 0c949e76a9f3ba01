"""Tests for howeval.judges.claims: the public claim helpers the rule judge uses (doctests and edge cases)."""
from __future__ import annotations

import doctest

from howeval.judges import claims
from howeval.judges.claims import as_number, disagreeing_pair, extract_claims


def test_doctests():
    res = doctest.testmod(claims)
    assert res.attempted > 0 and res.failed == 0


def test_disagreeing_pair():
    found = extract_claims("The answer is (A). Later: the answer is (C).")
    pair = disagreeing_pair(found, {})
    assert pair is not None and {pair[0].letter, pair[1].letter} == {"A", "C"}
    assert disagreeing_pair(extract_claims("The answer is 4. So the answer is 4."), {}) is None
    assert as_number(None) is None and as_number("-3.5") == -3.5
