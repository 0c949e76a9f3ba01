"""Tests for howeval.judges.verify.answer: the candidate answer of a response, refusals, text normalization."""
from __future__ import annotations

import doctest

from howeval.judges.verify import answer as answer_module, verify
from howeval.judges.verify.answer import find_candidate, missing_answer

LETTERS = ["A", "B", "C", "D", "E"]


def test_empty_response_is_a_missing_answer():
    for answer_type, answer, options in [("integer_number", "3", None), ("boolean_text", "yes", ["yes", "no"]),
                                         ("multiple_choice", "A", LETTERS), ("free_form", "6", None)]:
        res = verify("   ", answer, answer_type, options)
        assert res.correct is False and res.reason.startswith("no answer found"), res


def test_missing_answer_verdicts():
    assert find_candidate("Sorry, I can't help with that image.") == (None, "refusal")
    refusal = missing_answer("Sorry, I can't help with that image.", "refusal")
    assert refusal.correct is False and refusal.reason.startswith("refusal:") and refusal.extracted is None
    # two sentences, no answer marker, no concluding value: nothing to judge (one sentence would be read)
    long_text = "Look at the sticks from the top. Stick 4 lays exactly in the middle of the others, as shown."
    assert find_candidate(long_text) == (None, "no final-answer marker")
    assert find_candidate("Stick 4 lays exactly in the middle of the others, as the picture shows.") == (
        "4", "one_sentence")
    open_ = missing_answer(long_text, "no final-answer marker")
    assert open_.correct is None and open_.reason.startswith("unresolved: no final-answer marker")


def test_doctests():
    res = doctest.testmod(answer_module)
    assert res.attempted > 0 and res.failed == 0
