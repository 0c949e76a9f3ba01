"""Tests for howeval.judges.llm: LLMPatternJudge with a scripted fake engine (no model, no network)."""
from __future__ import annotations

import json

import pytest

from howeval.engines.base import ChatRequest, Completion
from howeval.judges.llm import RAW_SEPARATOR, LLMPatternJudge


def good(cot=False, rep=False, con=False, pr=False, ev="span") -> str:
    vals = {"cot": cot, "rep": rep, "con": con, "pr": pr}
    return json.dumps({k: {"label": v, "evidence": ev if v else None} for k, v in vals.items()})


class ScriptedEngine:
    """Returns the scripted completions in order; records every generate() call."""

    name = "scripted"

    def __init__(self, script: list[Completion | str]):
        self.script = list(script)
        self.calls: list[list[ChatRequest]] = []

    def generate(self, requests: list[ChatRequest]) -> list[Completion]:
        self.calls.append(list(requests))
        out = []
        for _ in requests:
            c = self.script.pop(0)
            out.append(Completion(text=c) if isinstance(c, str) else c)
        return out


ITEM = {"question": "How many apples?", "response": "Wait, 3. The answer is 3.", "image_data_url": "data:image/png;base64,AAAA"}


# ------------------------------------------------------------------------------------------------------
# judge_batch
# ------------------------------------------------------------------------------------------------------


def test_good_and_fenced_outputs_in_one_batched_call():
    eng = ScriptedEngine([good(cot=True, ev="Wait, 3."), "```json\n" + good(pr=True) + "\n```"])
    judge = LLMPatternJudge(eng, name="fake", version="v0")
    vs = judge.judge_batch([ITEM, {"question": "Q", "response": "R"}])
    assert len(eng.calls) == 1 and len(eng.calls[0]) == 2
    assert vs[0].as_vector() == (True, False, False, False) and vs[0].evidence["cot"] == "Wait, 3."
    assert vs[1].as_vector() == (False, False, False, True)
    assert all(v.judge == "fake" and v.judge_version.startswith("v0|") and v.error is None for v in vs)
    assert vs[0].raw == good(cot=True, ev="Wait, 3.")
    # the image travels as an image_url part; the second item has none -> text-only
    assert eng.calls[0][0].messages[1]["content"][0]["type"] == "image_url"
    assert isinstance(eng.calls[0][1].messages[1]["content"], str)
    assert eng.calls[0][0].temperature == 0.0


def test_text_only_judge_drops_the_image():
    eng = ScriptedEngine([good()])
    LLMPatternJudge(eng, "rm", "v0", with_image=False).judge_batch([ITEM])
    assert isinstance(eng.calls[0][0].messages[1]["content"], str)


def test_garbage_then_good_repair():
    eng = ScriptedEngine([good(), "I think it has CoT.", good(), good(rep=True)])
    vs = LLMPatternJudge(eng, "fake", "v0").judge_batch([ITEM, ITEM, ITEM])
    # first call: 3 requests; second call: only the bad one, with the repair conversation
    assert [len(c) for c in eng.calls] == [3, 1]
    repair = eng.calls[1][0].messages
    assert repair[-2] == {"role": "assistant", "content": "I think it has CoT."}
    assert "no JSON object" in repair[-1]["content"]
    assert [v.error for v in vs] == [None, None, None]
    assert vs[1].as_vector() == (False, True, False, False)
    assert vs[2].as_vector() == (False, False, False, False)


def test_garbage_twice_gives_judge_error_with_raw_and_no_labels():
    eng = ScriptedEngine(["nope", '{"cot": {"label": "maybe"}}'])
    (v,) = LLMPatternJudge(eng, "fake", "v0").judge_batch([ITEM])
    assert len(eng.calls) == 2  # exactly one repair
    assert v.error is not None and v.error.startswith("judge_error: ")
    assert "missing keys" in v.error
    assert v.labels == {} and v.evidence == {} and v.as_vector() is None and v.trigger is None
    assert v.raw == "nope" + RAW_SEPARATOR + '{"cot": {"label": "maybe"}}'


def test_engine_error_is_not_repaired_and_has_no_labels():
    eng = ScriptedEngine([Completion(text="", finish_reason="error", error="HTTP 503"), good(con=True)])
    vs = LLMPatternJudge(eng, "fake", "v0").judge_batch([ITEM, ITEM])
    assert len(eng.calls) == 1
    assert vs[0].error == "judge_error: engine: HTTP 503" and vs[0].labels == {}
    assert vs[1].as_vector() == (False, False, True, False)


def test_engine_error_during_repair():
    eng = ScriptedEngine(["garbage", Completion(text="", finish_reason="error", error="timeout")])
    (v,) = LLMPatternJudge(eng, "fake", "v0").judge_batch([ITEM])
    assert v.error.startswith("judge_error: engine: timeout") and v.raw == "garbage"


def test_items_are_checked_and_empty_batch():
    judge = LLMPatternJudge(ScriptedEngine([]), "fake", "v0")
    assert judge.judge_batch([]) == []
    with pytest.raises(ValueError, match="missing keys \\['response'\\]"):
        judge.judge_batch([{"question": "Q"}])
    with pytest.raises(ValueError, match="max_tokens"):
        LLMPatternJudge(ScriptedEngine([]), "fake", "v0", max_tokens=0)


def test_engine_that_drops_requests_is_an_error():
    class Short(ScriptedEngine):
        def generate(self, requests):
            return []

    with pytest.raises(RuntimeError, match="returned 0 completions for 1 requests"):
        LLMPatternJudge(Short([]), "fake", "v0").judge_batch([ITEM])


def test_question_or_response_over_200k_characters_fails_without_an_engine_call():
    """Issue 35: the LLM judge sent a 5 MB response and a 1 MB question to its engine, where the rules judge
    and the verifier refuse over 200,000 characters. Such an item is a failed verdict with the reason; the
    other items of the batch are judged as usual, in one call."""
    eng = ScriptedEngine([good(rep=True)])
    items = [{"question": "q", "response": "x" * 5_000_000}, {"question": "q" * 1_000_000, "response": "r"},
             {"question": "How many?", "response": "3 and 3 and 3."}]
    big_resp, big_q, ok = LLMPatternJudge(eng, "j", "v0").judge_batch(items)
    assert len(eng.calls) == 1 and len(eng.calls[0]) == 1
    assert not big_resp.labels and "response has 5,000,000 characters (limit 200,000)" in big_resp.error
    assert not big_q.labels and "question has 1,000,000 characters" in big_q.error
    assert ok.labels == {"cot": False, "rep": True, "con": False, "pr": False}
