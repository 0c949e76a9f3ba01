"""Tests for howeval.judges.base: the judge item record and the judge protocol."""
from __future__ import annotations

import pytest

from howeval.judges.base import JudgeItem, PatternJudge, as_judge_items
from howeval.judges.llm import LLMPatternJudge
from howeval.judges.rules import RuleJudge
from howeval.records import MissingColumnsError


def test_item_from_dict_and_itself():
    it = JudgeItem.of({"question": None, "response": "R", "options": ["x", "y"], "extra": 1})
    assert it == JudgeItem("", "R", ("x", "y"), None)
    assert JudgeItem.of(it) is it
    assert as_judge_items([it, {"question": "Q", "response": "S"}])[1] == JudgeItem("Q", "S")


def test_item_errors_name_the_field():
    with pytest.raises(MissingColumnsError, match=r"judge item: missing keys \['response'\].*present: \['question'\]"):
        JudgeItem.of({"question": "Q"})
    with pytest.raises(TypeError, match="JudgeItem.response must be str"):
        JudgeItem("Q", None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="JudgeItem.question must be str"):
        JudgeItem(None, "R")  # type: ignore[arg-type]


class _NoLabels:
    def generate(self, requests):
        raise AssertionError("not called")


def test_every_judge_meets_the_protocol():
    assert isinstance(RuleJudge(), PatternJudge)
    assert isinstance(LLMPatternJudge(_NoLabels(), "llm", "0"), PatternJudge)


def test_rule_judge_batch_equals_single_calls_in_one_argument_order():
    items = [JudgeItem("Pick one.\n(A) 3\n(B) 5", "The answer is (A). The answer is 5."),
             JudgeItem("", "Wait, let me re-check. It is 4.")]
    j = RuleJudge()
    batch = j.judge_batch(items)
    assert batch == [j.judge(it.question, it.response, it.options) for it in items]
    # the question's option lines map (A) to 3, which disagrees with 5: a contradiction
    assert batch[0].as_vector() == (False, False, True, False)
    assert batch[1].as_vector() == (True, False, False, False)
    assert j.judge_batch([]) == []
