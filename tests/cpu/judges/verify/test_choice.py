"""Tests for howeval.judges.verify.choice: the option an answer names (letter, text, number, math), multiple choice."""
from __future__ import annotations

import pytest

from howeval.judges.verify import METHOD_RULE, verify
from howeval.judges.verify.choice import as_options, option_letter

MATHV_DEG = ["$10^{\\circ}$", "$15^{\\circ}$", "$20^{\\circ}$", "$25^{\\circ}$", "$30^{\\circ}$"]
MATHV_SQRT = ["$\\frac{6-\\sqrt{2}}{2}$", "$\\frac{3 \\sqrt{2}}{2}$", "2.5", "3", "$6(\\sqrt{2}-1)$"]
MATHV_LITRES = ["9 litres", "8 litres", "6 litres", "4 litres", "2 litres"]
MATHV_FUNCS = ["$f(x)=-g(x)+2$", "$f(x)=-g(x)-2$", "$f(x)=-g(x+2)$", "$f(x+2)=-g(x)$", "$f(x+1)=-g(x-1)$"]
LETTERS = ["A", "B", "C", "D", "E"]
PUZZLE_NUM = [4, 1, 3, 2]
PUZZLE_COLOR = ["orange", "blue", "purple", "yellow"]

# (response, answer, answer_type, options, expected correct)
CASES = [
    # multiple_choice, gold a letter (MATH-Vision)
    (r"So the answer is \boxed{(A)}.", "A", "multiple_choice", MATHV_FUNCS, True),
    (r"The answer is \boxed{(A)}.", "C", "multiple_choice", MATHV_FUNCS, False),
    (r"$\angle CDE=\boxed{15^{\circ}}$.", "B", "multiple_choice", MATHV_DEG, True),  # option value, not letter
    (r"$\boxed{30^\circ}$. The answer is: (E)", "B", "multiple_choice", MATHV_DEG, False),
    (r"radius is \boxed{6(\sqrt{2}-1)}.", "E", "multiple_choice", MATHV_SQRT, True),  # math-verify
    (r"\boxed{3}", "E", "multiple_choice", MATHV_SQRT, False),  # "3" is option D
    (r"\boxed{9}", "A", "multiple_choice", MATHV_LITRES, True),  # unit dropped
    (r"\boxed{5.25} litres", "A", "multiple_choice", MATHV_LITRES, False),  # names no option
    (r"\[\boxed{f(x) + g(x) = 0}\]", "C", "multiple_choice", MATHV_FUNCS, False),
    ("A)", "D", "multiple_choice", LETTERS, False),  # bare letter; options are image labels
    ("The answer is \\boxed{B}.", "B", "multiple_choice", LETTERS, True),
    ("The answer is (C).", "A", "multiple_choice", ["A", "C", "C", "D", "it depends"], False),
    ("\\boxed{18\\%}", "D", "multiple_choice", ["$6 \\%$", "$11 \\%$", "$12 \\%$", "$13 \\%$", "$18 \\%$"], False),
    ("\\boxed{13\\%}", "D", "multiple_choice", ["$6 \\%$", "$11 \\%$", "$12 \\%$", "$13 \\%$", "$18 \\%$"], True),
    # multiple_choice, gold an option value (PuzzleVQA; options may be ints)
    ("The answer is 1.", "1", "multiple_choice", PUZZLE_NUM, True),
    ("\\boxed{4}", "1", "multiple_choice", PUZZLE_NUM, False),
    ("(B)", "1", "multiple_choice", PUZZLE_NUM, True),  # letter B -> option 1
    ("Answer: blue", "blue", "multiple_choice", PUZZLE_COLOR, True),
    ("The missing color is purple. The answer is purple.", "blue", "multiple_choice", PUZZLE_COLOR, False),
    ("So the answer is the blue one.", "blue", "multiple_choice", PUZZLE_COLOR, True),  # option text inside
    ("\\boxed{30}", 30, "multiple_choice", ["30", "77", "12", "90"], True),  # int gold
]


@pytest.mark.parametrize("response, answer, answer_type, options, expected", CASES)
def test_rules(response, answer, answer_type, options, expected):
    res = verify(response, answer, answer_type, options)
    assert res.correct is expected, res
    assert res.method == METHOD_RULE


# (response, answer, answer_type, options): the rules must not decide these
UNRESOLVED = [
    ("The sixth tree should be planted in region A.", "B", "multiple_choice", LETTERS),
]


@pytest.mark.parametrize("response, answer, answer_type, options", UNRESOLVED)
def test_unresolved(response, answer, answer_type, options):
    res = verify(response, answer, answer_type, options)
    assert res.correct is None, res
    assert res.reason.startswith("unresolved"), res.reason


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(response="A", answer="A", answer_type="multiple_choice", options=None), "needs options"),
        (dict(response="A", answer="green", answer_type="multiple_choice", options=PUZZLE_COLOR), "'green'"),
    ],
)
def test_bad_items_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        verify(**kwargs)


def test_option_texts_math_verify_would_equate_are_not_equated():
    r = verify("The answer is 3 & 4.", "B", "multiple_choice", ["1 & 2", "1 & 4"])
    assert r.correct is False and "names no option" in r.reason


def test_option_helpers():
    assert [option_letter(i) for i in (0, 1, 25)] == ["A", "B", "Z"]
    assert as_options(PUZZLE_NUM) == ["4", "1", "3", "2"] and as_options(None) == [] and as_options([]) == []
