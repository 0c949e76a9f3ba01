"""Tests for howeval.judges.verify.mathexpr: math-verify equivalence, guarded against inputs it misreads or never finishes."""
from __future__ import annotations

import doctest

import pytest

from howeval.judges.verify import mathexpr as mathexpr_module
from howeval.judges.verify.mathexpr import MAX_MATH_CHARS, math_equal
from howeval.parsing.limits import InputTooLarge


def test_doctests():
    res = doctest.testmod(mathexpr_module)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize("side", [r"10^{10^{10}}", "2^{1000000}", "12345!"])
def test_huge_numbers_are_refused_before_math_verify(side):
    with pytest.raises(InputTooLarge, match="input too large"):
        math_equal("1", side)


@pytest.mark.parametrize("pred", ["3 & 4", "0 to 10", "4–6", "x" * (MAX_MATH_CHARS + 1)])
def test_lists_ranges_and_long_text_are_not_compared(pred):
    assert math_equal("4", pred) is None
