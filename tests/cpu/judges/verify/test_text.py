"""Tests for howeval.judges.verify.text: the extractive_text / boolean_text / other_text verifiers (TabMWP)."""
from __future__ import annotations

import pytest

from howeval.judges.verify import METHOD_RULE, verify

TAB_TIMES = ["15 minutes", "2 hours and 30 minutes", "1 hour and 45 minutes", "2 hours and 45 minutes"]

# (response, answer, answer_type, options, expected correct)
CASES = [
    # extractive_text / boolean_text / other_text (TabMWP, options given)
    ("The answer is April.", "April", "extractive_text", ["November", "March", "April", "May"], True),
    ("The answer is Tuesday.", "Thursday", "extractive_text", ["Tuesday", "Wednesday", "Thursday", "Friday"], False),
    ("The answer is D.", "3:35 P.M.", "extractive_text", ["10:25 A.M.", "8:50 A.M.", "2:25 P.M.", "3:35 P.M."], True),
    ("The answer is 3:35 P.M.", "3:35 P.M.", "extractive_text", ["10:25 A.M.", "8:50 A.M.", "2:25 P.M.", "3:35 P.M."], True),
    ("(C) Southport-Fort Fisher", "Southport-Fort Fisher", "extractive_text",
     ["Seattle-Bremerton", "Ocracoke", "Southport-Fort Fisher", "Fauntleroy-Vashon"], True),
    ("She has enough. The answer is A, yes.", "yes", "boolean_text", ["yes", "no"], True),
    ("The answer is (B) no.", "yes", "boolean_text", ["yes", "no"], False),
    ("There is a surplus. The answer is surplus.", "surplus", "boolean_text", ["shortage", "surplus"], True),
    ("The answer is (A).", "1 hour", "other_text", ["1 hour", "15 minutes", "45 minutes", "30 minutes"], True),
    ("The answer is (C) 1 hour and 45 minutes.", "2 hours and 45 minutes", "other_text", TAB_TIMES, False),
    ("The answer is 2 hours and 45 minutes.", "2 hours and 45 minutes", "other_text", TAB_TIMES, True),
    ("Katie", "Katie", "extractive_text", None, True),  # no options: normalized text
]


@pytest.mark.parametrize("response, answer, answer_type, options, expected", CASES)
def test_rules(response, answer, answer_type, options, expected):
    res = verify(response, answer, answer_type, options)
    assert res.correct is expected, res
    assert res.method == METHOD_RULE


# (response, answer, answer_type, options): the rules must not decide these
UNRESOLVED = [
    ("The answer is (A) no.", "yes", "boolean_text", ["yes", "no"]),  # letter and text disagree
]


@pytest.mark.parametrize("response, answer, answer_type, options", UNRESOLVED)
def test_unresolved(response, answer, answer_type, options):
    res = verify(response, answer, answer_type, options)
    assert res.correct is None, res
    assert res.reason.startswith("unresolved"), res.reason
