"""LLMPatternJudge and the rubric with a scripted fake engine (no model, no network)."""
from __future__ import annotations

import json

import pytest

from howeval.engines.base import ChatRequest, Completion
from howeval.judges.llm import RAW_SEPARATOR, LLMPatternJudge
from howeval.judges.rubric import (
    SYSTEM_PROMPT,
    build_pattern_messages,
    build_repair_messages,
    parse_pattern_output,
)
from howeval.judges.verdict import LABELS, JudgeParseError, PatternVerdict


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
# rubric
# ------------------------------------------------------------------------------------------------------


def test_rubric_states_definitions_priority_and_multimodal_support():
    for needle in ("chain-of-thought leakage", "repetition", "contradiction", "performative reasoning",
                   "CoT-priority", "observable objects", "chart values", '"label"', '"evidence"'):
        assert needle in SYSTEM_PROMPT, needle


def test_messages_with_and_without_image():
    m = build_pattern_messages("Q?", "R.", "data:image/png;base64,AAAA")
    assert [x["role"] for x in m] == ["system", "user"]
    parts = m[1]["content"]
    assert parts[0] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert parts[1]["type"] == "text" and "Q?" in parts[1]["text"] and "R." in parts[1]["text"]
    t = build_pattern_messages("Q?", "R.", None)
    assert isinstance(t[1]["content"], str) and "No image" in t[1]["content"]
    with pytest.raises(ValueError, match="image_data_url"):
        build_pattern_messages("Q?", "R.", "/tmp/x.png")
    with pytest.raises(TypeError):
        build_pattern_messages("Q?", None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        good(cot=True),
        "```json\n" + good(cot=True) + "\n```",
        "Here is my judgment:\n" + good(cot=True) + "\nThat's all.",
        '{"cot": true, "rep": false, "con": false, "pr": false}',
        '{"COT": {"label": true, "evidence": "span"}, "rep": {"label": false}, "con": {"label": false}, "pr": {"label": false}}',
    ],
)
def test_parse_tolerates_fences_and_prose(text):
    labels, evidence = parse_pattern_output(text)
    assert labels == {"cot": True, "rep": False, "con": False, "pr": False}
    assert evidence["rep"] is None


@pytest.mark.parametrize(
    "text,reason",
    [
        ("", "empty output"),
        ("no json here", "no JSON object"),
        ('{"cot": {"label": true,}}', "invalid JSON"),
        ('{"cot": {"label": true', "unbalanced braces"),
        ('{"cot": {"label": true}, "rep": {"label": false}}', "missing keys \\['con', 'pr'\\]"),
        ('{"cot": {"label": "yes"}, "rep": {"label": false}, "con": {"label": false}, "pr": {"label": false}}', "cot.label must be a JSON boolean"),
        ('{"cot": {"evidence": "x"}, "rep": {"label": false}, "con": {"label": false}, "pr": {"label": false}}', "has no 'label' field"),
        ('{"cot": 1, "rep": false, "con": false, "pr": false}', "must be an object"),
        ('{"verdict": "fine"}', "none of the keys"),
    ],
)
def test_parse_errors_are_specific(text, reason):
    with pytest.raises(JudgeParseError, match=reason):
        parse_pattern_output(text)


def test_repair_messages_carry_the_bad_output_and_the_error():
    orig = build_pattern_messages("Q?", "R.", None)
    rep = build_repair_messages(orig, "garbage", "no JSON object in output")
    assert rep[: len(orig)] == orig
    assert rep[-2] == {"role": "assistant", "content": "garbage"}
    assert rep[-1]["role"] == "user" and "no JSON object in output" in rep[-1]["content"]


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


def test_verdict_invariants():
    with pytest.raises(ValueError, match="must carry no labels"):
        PatternVerdict(labels={k: False for k in LABELS}, evidence={}, judge="j", judge_version="0", error="x")
    with pytest.raises(ValueError, match="missing \\['pr'\\]"):
        PatternVerdict(labels={"cot": True, "rep": False, "con": False}, evidence={}, judge="j", judge_version="0")
    with pytest.raises(TypeError, match="bool"):
        PatternVerdict(labels={k: 1 for k in LABELS}, evidence={}, judge="j", judge_version="0")  # type: ignore[misc]


def test_labels_tuple_matches_records():
    records = pytest.importorskip("howeval.records")
    assert records.LABELS == LABELS
