"""Reward-server request bodies: pathological reference answers and labels are 422 naming the field (issue 12)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

from howeval.reward_server.schemas import MAX_ANSWER, OpenRLHFRequest, RewardItem, check_reference

from degenerate import CORPUS, ITEM_BOUND_S, run_in_thread


def item(**kw):
    base = {"prompt": "q", "response": "The answer is 4.", "answer": "4", "answer_type": "free_form"}
    return RewardItem(**{**base, **kw})


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("answer", "[" * 1000 + "]" * 1000, "answer: brackets nested 101+ deep; at most 100"),
        ("answer", "9" * 5000, "answer: a number of 5,000 digits; at most 1,000"),
        ("answer", "x" * (MAX_ANSWER + 1), f"answer: {MAX_ANSWER + 1:,} characters; at most {MAX_ANSWER:,}"),
        ("options", ["1", "(" * 500], "options.1: brackets nested 101+ deep"),
    ],
)
def test_pathological_reference_is_a_validation_error_naming_the_field(field, value, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        item(**{field: value})


def test_pathological_label_is_refused_before_json_decoding():
    with pytest.raises(ValidationError, match=r"labels\.1: brackets nested 101\+ deep"):
        OpenRLHFRequest(query=["q a", "q b"], prompts=["q", "q"], labels=["4", '{"a":' * 1000 + "1" + "}" * 1000])
    ok = OpenRLHFRequest(query=["q a"], prompts=["q"], labels=['{"answer": "4", "kind": "base"}'])
    assert ok.labels == ['{"answer": "4", "kind": "base"}']


def test_pathological_responses_are_accepted_for_scoring():
    # a model response is scored (unresolved when over the limits), never refused; only text that is
    # not valid Unicode (a lone surrogate) is refused by pydantic, naming the field
    for name, text in CORPUS:
        if name == "lone-surrogate":
            with pytest.raises(ValidationError, match="response"):
                item(response=text)
        elif len(text) <= 200_000:
            assert item(response=text).response == text


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=300))
def test_check_reference_only_raises_value_error(value):
    res, cpu, err = run_in_thread(lambda: check_reference(value, "answer"))
    assert err is None or isinstance(err, ValueError)
    assert cpu < ITEM_BOUND_S


def test_composite_kind_is_accepted_with_reference_steps_and_results_carry_components():
    from howeval.reward_server.schemas import RewardResult

    assert item(kind="composite", reference_steps=["add"]).kind == "composite"
    with pytest.raises(ValidationError, match="reference_steps: required and non-empty when kind is 'composite'"):
        item(kind="composite")
    row = {"reward": 0.175, "s_ver": 0.0, "verify_method": "rule", "step_f1": 0.5,
           "components": {"accuracy": 0.0, "reasoning": 0.175}}
    assert RewardResult(**row).model_dump()["components"] == {"accuracy": 0.0, "reasoning": 0.175}
