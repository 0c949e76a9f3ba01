"""Tests for howeval.judges.verify.llm: the LLM judge grades only what the rules leave open, in one call."""
from __future__ import annotations

import doctest

import pytest

from howeval.engines.base import ChatRequest, Completion
from howeval.judges.verify import METHOD_LLM, METHOD_LLM_ERROR, METHOD_RULE, LLMVerifier, llm as llm_module


class ScriptedEngine:
    """A fake Engine: answers each request with the next scripted Completion (or raises)."""

    name = "scripted"

    def __init__(self, replies: list[Completion] | None = None, raises: Exception | None = None, short: bool = False):
        self.replies = list(replies or [])
        self.raises = raises
        self.short = short
        self.calls: list[list[ChatRequest]] = []

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        if self.raises:
            raise self.raises
        out = [self.replies.pop(0) for _ in requests]
        return out[:-1] if self.short else out


def _item(response, answer, answer_type, options=None, question="Q?"):
    return dict(question=question, response=response, answer=answer, answer_type=answer_type,
                options=options, source="test")


ITEMS = [
    _item(r"\boxed{61}", "61", "free_form"),  # rules: True
    _item("The blue bar is shorter than the red bar.", "Yes", "free_form",
          question="Is the red bar taller than the blue bar?"),  # open: a comparison, no yes/no
    _item("The answer is (B) no.", "no", "boolean_text", ["yes", "no"]),  # rules: True
    _item("It is a bottle of Sprite.", "This is a bottle of Sprite, a popular brand of soda.", "free_form"),  # open
    _item("", "7", "integer_number"),  # rules: False (empty)
]


def test_verify_batch_calls_engine_once_for_unresolved_only():
    engine = ScriptedEngine([
        Completion(text='{"correct": false, "reason": "says shorter, gold Yes"}'),
        Completion(text='Sure. ```json\n{"correct": true, "reason": "same drink"}\n```'),
    ])
    results = LLMVerifier(engine).verify_batch(ITEMS)
    assert len(engine.calls) == 1 and len(engine.calls[0]) == 2
    prompt = engine.calls[0][0].messages[0]["content"]
    assert "Is the red bar taller" in prompt and "blue bar is shorter" in prompt and '"correct"' in prompt
    assert [r.correct for r in results] == [True, False, True, True, False]
    assert [r.method for r in results] == [METHOD_RULE, METHOD_LLM, METHOD_RULE, METHOD_LLM, METHOD_RULE]
    assert results[1].reason.startswith("says shorter, gold Yes")


def test_verify_batch_no_unresolved_no_call():
    engine = ScriptedEngine()
    results = LLMVerifier(engine).verify_batch([ITEMS[0], ITEMS[2]])
    assert engine.calls == [] and [r.correct for r in results] == [True, True]


@pytest.mark.parametrize(
    "reply, reason_part",
    [
        (Completion(text="I think it is right."), "no JSON verdict"),
        (Completion(text='{"correct": "yes"}'), "not a boolean"),
        (Completion(text="", finish_reason="error", error="HTTP 503"), "HTTP 503"),
        (Completion(text="", truncated=True, finish_reason="length"), "truncated"),
    ],
)
def test_llm_failures_are_unresolved_never_default(reply, reason_part):
    engine = ScriptedEngine([reply])
    (res,) = LLMVerifier(engine).verify_batch([ITEMS[1]])
    assert res.correct is None and res.method == METHOD_LLM_ERROR and reason_part in res.reason


def test_engine_exception_is_recorded():
    engine = ScriptedEngine(raises=ConnectionError("refused"))
    results = LLMVerifier(engine).verify_batch(ITEMS)
    assert [r.method for r in results] == [METHOD_RULE, METHOD_LLM_ERROR, METHOD_RULE, METHOD_LLM_ERROR, METHOD_RULE]
    assert "ConnectionError" in results[1].reason


def test_engine_dropping_a_completion_raises():
    engine = ScriptedEngine([Completion(text='{"correct": true}')] * 2, short=True)
    with pytest.raises(ValueError, match="returned 1 completions for 2 requests"):
        LLMVerifier(engine).verify_batch(ITEMS)


def test_missing_item_keys_raise():
    with pytest.raises(ValueError, match=r"missing keys \['question'\]; present: \['answer', 'answer_type', 'response'\]"):
        LLMVerifier(ScriptedEngine()).verify_batch([dict(response="x", answer="1", answer_type="free_form")])


@pytest.mark.parametrize("kwargs, match", [(dict(max_tokens=4), "max_tokens"), (dict(max_response_chars=10), "max_response_chars")])
def test_llm_verifier_bad_args(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LLMVerifier(ScriptedEngine(), **kwargs)


def test_long_responses_are_cut_from_the_front():
    judge = LLMVerifier(ScriptedEngine(), max_response_chars=200)
    req = judge.build_request(_item("x" * 1000 + " The answer is 3.", "3", "free_form"))
    text = req.messages[0]["content"]
    assert "The answer is 3." in text and "x" * 300 not in text and req.temperature == 0.0


def test_doctests():
    res = doctest.testmod(llm_module)
    assert res.attempted > 0 and res.failed == 0
