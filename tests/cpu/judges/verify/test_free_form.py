"""Tests for howeval.judges.verify.free_form: free_form (MATH-Vision, Bingo) and free_form_or_mc (CRYSTAL)."""
from __future__ import annotations

import json

import pytest

from howeval.judges.verify import METHOD_RULE, verify

# (response, answer, answer_type, options, expected correct)
CASES = [
    # free_form (MATH-Vision numbers and expressions)
    (r"the number is \boxed{61}.", "61", "free_form", None, True),
    ("Two", "5", "free_form", None, False),
    ("five", "5", "free_form", None, True),
    (r"\boxed{90 \text{ grams}}", "140", "free_form", None, False),
    (r"\boxed{140 \text{ grams}}", "140", "free_form", None, True),
    (r"\boxed{25\%}", "20", "free_form", None, False),
    (r"\boxed{20 \pi}", "8", "free_form", None, False),
    (r"\boxed{\frac{4}{2}}", "2", "free_form", None, True),
    (r"\boxed{-2}", "-2", "free_form", None, True),
    (r"\boxed{\frac{\sqrt{2}}{2}}", "\\frac{1}{\\sqrt{2}}", "free_form", None, True),  # symbolic gold
    (r"\boxed{0.7071}", "\\frac{1}{\\sqrt{2}}", "free_form", None, False),  # 4 digits is not 6-digit equality
    ("8.", "3", "free_form", None, False),
    (r"8\boxed{}", "3", "free_form", None, False),
    ("Yes", "Yes", "free_form", None, True),
    # free_form_or_mc (CRYSTAL)
    (r"\boxed{B}", "B (60°)", "free_form_or_mc", None, True),
    ("The answer is 60°.", "B (60°)", "free_form_or_mc", None, True),
    ("The answer is 40°.", "B (60°)", "free_form_or_mc", None, False),
    ("Answer: A", "B (60°)", "free_form_or_mc", None, False),
    ('{"reasoning_steps": ["..."], "answer": "A"}', "A", "free_form_or_mc", None, True),
    ("Yes", "A) Yes", "free_form_or_mc", None, True),
    ("No.", "A) Yes", "free_form_or_mc", None, False),
    ("The answer is three.", "3", "free_form_or_mc", None, True),
    ("Answer: Africa", "Africa", "free_form_or_mc", None, True),
    ("Answer: no", "Yes", "free_form_or_mc", None, False),
]


@pytest.mark.parametrize("response, answer, answer_type, options, expected", CASES)
def test_rules(response, answer, answer_type, options, expected):
    res = verify(response, answer, answer_type, options)
    assert res.correct is expected, res
    assert res.method == METHOD_RULE


# (response, answer, answer_type, options): the rules must not decide these
UNRESOLVED = [
    ("Look at the sticks. Stick 4 lays exactly in the middle.", "3", "free_form", None),  # no marker, 2 sentences
    ("This image shows the solar system with eight planets.",
     "This image shows the solar system, in which nine planets revolve around the sun.", "free_form", None),
    ("There are 8 squares.", None, "free_form", None),  # Bingo item without a reference
    ("Answer: Europe", "Africa", "free_form_or_mc", None),  # text mismatch may be a paraphrase
    ("Answer: Yes", "A", "free_form_or_mc", None),  # gold is only a letter
]


@pytest.mark.parametrize("response, answer, answer_type, options", UNRESOLVED)
def test_unresolved(response, answer, answer_type, options):
    res = verify(response, answer, answer_type, options)
    assert res.correct is None, res
    assert res.reason.startswith("unresolved"), res.reason


def test_rel_tol_is_used():
    assert verify(r"\boxed{3.1416}", "3.14159", "free_form").correct is True
    assert verify(r"\boxed{3.1416}", "3.14159", "free_form", rel_tol=1e-7).correct is False


def test_bingo_items_are_unresolved(shared_data):
    items = [json.loads(line) for line in open(shared_data / "manifest.jsonl", encoding="utf-8")]
    bingo = [it for it in items if it["uid"].startswith("bingo:")]
    assert len(bingo) == 20
    for it in bingo:
        res = verify("The picture shows something else entirely, described at length here.", it["answer"],
                     it["answer_type"], it["options"])
        assert res.correct is None, (it["uid"], res)


@pytest.mark.parametrize("text", ["It fell below 5 in 2003. No other year in the chart is under 5.",
                                  "It fell below 5 in **2003**.\n\nNo other year in the chart is under 5."])
def test_a_threshold_restated_after_the_answer_is_never_the_answer(text):
    res = verify(text, "5", "free_form")
    assert res.correct is not True and res.extracted != "5", res
    assert verify(text, "2003", "free_form").correct in (True, None)
