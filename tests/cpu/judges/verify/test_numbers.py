"""Tests for howeval.judges.verify.numbers: numbers read from answers, the integer_number / decimal_number verifiers."""
from __future__ import annotations

import doctest

import pytest

from howeval.judges.verify import METHOD_RULE, numbers as numbers_module, verify

# (response, answer, answer_type, options, expected correct)
CASES = [
    # integer_number (TabMWP)
    ("$7.00 + $3.00 + $3.00 = $13.00\n\nThe answer is $13.00.", "13", "integer_number", None, True),
    ("The answer is $38,088.", "38,088", "integer_number", None, True),
    ("The answer is 38,089.", "38,088", "integer_number", None, False),
    ("There are −2 books. The answer is −2.", "3", "integer_number", None, False),
    ("It takes 15 minutes. The answer is 15 minutes.", "15", "integer_number", None, True),
    ("The answer is 13.4", "13", "integer_number", None, False),
    ("The mode is 9.", "9", "integer_number", None, True),  # bare short answer
    # decimal_number (TabMWP): gold precision; fractions by value
    ("The answer is $0.20.", "0.20", "decimal_number", None, True),
    ("The answer is 0.2", "0.20", "decimal_number", None, True),
    ("The answer is 0.21", "0.20", "decimal_number", None, False),
    ("The answer is $1.35.", "1.35", "decimal_number", None, True),
    ("The answer is 14/36.", "7/18", "decimal_number", None, True),
    ("The answer is 0.389.", "7/18", "decimal_number", None, True),
    ("The answer is 0.538, or 53.8%.", "7/18", "decimal_number", None, False),
    ("The answer is 3/4.", "3/13", "decimal_number", None, False),
    ("The answer is 0.14.", "1/11", "decimal_number", None, False),
]


@pytest.mark.parametrize("response, answer, answer_type, options, expected", CASES)
def test_rules(response, answer, answer_type, options, expected):
    res = verify(response, answer, answer_type, options)
    assert res.correct is expected, res
    assert res.method == METHOD_RULE


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(response="7", answer="seven?", answer_type="integer_number"), "'seven\\?'"),
    ],
)
def test_bad_items_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        verify(**kwargs)


def test_doctests():
    res = doctest.testmod(numbers_module)
    assert res.attempted > 0 and res.failed == 0


# ------------------------------------------------------------------ issue 25: a power is not its base


@pytest.mark.parametrize("answer_type", ["integer_number", "decimal_number"])
@pytest.mark.parametrize("response,gold", [(r"\boxed{10^{10^{10}}}", "10"), (r"\boxed{10^{10^{10}}}", "10000000000"),
                                           (r"\boxed{2^{3} apples}", "2")])
def test_number_verifiers_never_read_the_base_or_exponent_of_a_power(response, gold, answer_type):
    res = verify(response, gold, answer_type)
    assert res.correct is None  # unresolved (the LLM judge may evaluate it), never "correct"
    assert "a power, not a plain number" in res.reason


@pytest.mark.parametrize("answer_type", ["integer_number", "decimal_number"])
@pytest.mark.parametrize("response,gold,correct", [(r"\boxed{2^{3}}", "8", True), (r"The answer is $2^3$.", "8", True),
                                                   (r"\boxed{2^{3}}", "2", False), (r"\boxed{2^{3}}", "3", False),
                                                   (r"\boxed{-2^{2}}", "-4", True), (r"\boxed{10**6}", "1000000", True)])
def test_an_answer_that_is_one_integer_power_is_its_value(response, gold, correct, answer_type):
    """A whole answer ``a^{b}`` is evaluated exactly (issue 35's leftover: ``\boxed{2^{3}}`` against 8 was
    unresolved); its base or exponent is never read as the answer (2^{3} against 2 or 3 is wrong, not right)."""
    res = verify(response, gold, answer_type)
    assert res.correct is correct and res.method == "rule", res
    assert res.reason.startswith("number 8 vs" if "2^" in response and "-" not in response else "number ")


def test_plain_numbers_still_read_after_the_power_check():
    assert verify(r"\boxed{8}", "8", "integer_number").correct is True
    assert verify("The answer is $1,250.", "1250", "integer_number").correct is True
    assert verify("The answer is: Donald spent $1.", "1", "integer_number").correct is True
