"""Tests for howeval.parsing.answers: final-answer and option-letter extraction (table-driven, real response shapes)."""
from __future__ import annotations

import doctest

import pytest

from howeval.parsing import answers
from howeval.parsing.answers import extract_answer, extract_option_letter, find_final_answer


def test_doctests():
    res = doctest.testmod(answers)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize(
    "text, expected",
    [
        # last \boxed wins, nested braces kept (MATH-Vision responses)
        (r"Therefore, the answer is \boxed{61}.", "61"),
        (r"$\boxed{\text{(A)}}$", r"\text{(A)}"),
        (r"\boxed{4}. The sum ... so the question mark stands for \(\boxed{8}\).", "8"),
        (r"$$b=\frac{1-d}{3}=\boxed{\frac{1}{6}} .$$", r"\frac{1}{6}"),
        (r"$\boxed{3}$.The answer is: 3", "3"),
        (r"2 \boxed{2}", "2"),
        (r"8\boxed{}", None),  # an empty box is no answer, and nothing else marks one
        (r"\boxed{unclosed", None),
        # final-answer lines, last one wins, cut at the end of the sentence
        ("The answer is (B).", "(B)"),
        ("Hence, the answer is (B).", "(B)"),
        ("Therefore, the correct answer is (C).", "(C)"),
        ("The answer is $13.00.", "$13.00"),
        ("The probability is 0.538, or 53.8%. The answer is 0.538, or 53.8%.", "0.538, or 53.8%"),
        ("Erin has $39.00. The answer is A, yes.", "A, yes"),
        ("The answer is C. Web Page Design class", "C"),
        ("The answer is 7. This follows from the table.", "7"),
        ("Answer: 42", "42"),
        ("Final answer: x = 3", "x = 3"),
        ("**Answer:** 5:45 P.M.", "5:45 P.M"),
        ("**Final Answer:** $\\frac{1}{2}$", "$\\frac{1}{2}$"),
        ("The answer is: 2304\nThe answer is: 12", "12"),
        ("ANSWER = 9", "9"),
        # JSON responses (CRYSTAL's requested format)
        ('{"reasoning_steps": ["s1", "s2"], "answer": "Africa"}', "Africa"),
        ('```json\n{"reasoning_steps": [], "answer": "\\\\boxed{3}"}\n```', "3"),
        # nothing to extract
        ("", None),
        ("Look at the sticks. Stick 4 lays exactly in the middle.", None),  # two sentences, no answer verb
        ("The answer depends on the table", None),  # no 'is'/':' after 'answer'
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text, source",
    [(r"so \boxed{2}", "boxed"), ('{"answer": 3}', "json"), ("The answer is 3.", "answer_line")],
)
def test_find_final_answer_source(text, source):
    found = find_final_answer(text)
    assert found is not None and found[1] == source


@pytest.mark.parametrize(
    "text, n, expected",
    [
        ("B", 5, "B"),
        ("(B)", 5, "B"),
        ("B.", 5, "B"),
        ("A)", 5, "A"),
        ("b", 5, "B"),
        (r"\text{(A)}", 5, "A"),
        (r"\text{D}", 5, "D"),
        ("(B) no", 5, "B"),
        ("A, yes", 5, "A"),
        ("C. Web Page Design class", 4, "C"),
        ("A) Yes", 5, "A"),
        ("B (60°)", 5, "B"),
        ("(C) 1 hour and 45 minutes", 4, "C"),
        ("Answer: E", 5, "E"),
        ("the correct option is D", 5, "D"),
        ("choice (C)", 5, "C"),
        ("I pick (D) here", 5, "D"),
        # rejected
        ("S", 5, None),  # outside A..E
        ("E", 4, None),  # outside A..D
        ("A cat sat", 5, None),  # article, not a letter answer
        ("region A", 5, None),
        ("the answer is a square", 5, None),  # lower-case 'a' after a marker is an article
        ("15^{\\circ}", 5, None),
        ("", 5, None),
    ],
)
def test_extract_option_letter(text, n, expected):
    assert extract_option_letter(text, n) == expected


@pytest.mark.parametrize("n", [0, 27, -1])
def test_extract_option_letter_bad_n(n):
    with pytest.raises(ValueError, match=str(n)):
        extract_option_letter("A", n)


def test_extract_answer_type_error():
    with pytest.raises(TypeError, match="NoneType"):
        extract_answer(None)  # type: ignore[arg-type]


# ------------------------------------------------------ issue 25: a threshold restated after the answer


@pytest.mark.parametrize("text,expected", [
    ("It fell below 5 in **2003**. No other year in the chart is under 5.", ("2003", "bold")),
    ("It fell below 5 in **2003**.\n\nNo other year in the chart is under 5.", ("2003", "bold")),
    ("It fell below 5 in 2003. No other year in the chart is under 5.", None),
    ("Sales first passed 40 in 2019. Every later year is more than 40.", None),
    ("So the total comes to 45 apples.", ("45", "final_sentence")),  # an ordinary conclusion still reads
])
def test_a_closing_bound_is_not_read_as_the_answer(text, expected):
    assert find_final_answer(text) == expected


def test_an_earlier_bold_span_is_read_only_when_it_is_a_bare_value():
    assert find_final_answer("**Step 1** read the chart.\n\nNo other year in the chart is under 5.") is None
    assert find_final_answer("The best is **(B)**.\n\nThe others score under 5.") == ("(B)", "bold")
