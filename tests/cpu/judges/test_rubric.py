"""Tests for howeval.judges.rubric: the prompt's content, messages with and without an image, the strict
output parser (fences, prose, specific errors) and the repair prompt."""
from __future__ import annotations

import json

import pytest

from howeval.judges.rubric import (
    SYSTEM_PROMPT,
    build_pattern_messages,
    build_repair_messages,
    parse_pattern_output,
)
from howeval.judges.verdict import JudgeParseError


def good(cot=False, rep=False, con=False, pr=False, ev="span") -> str:
    vals = {"cot": cot, "rep": rep, "con": con, "pr": pr}
    return json.dumps({k: {"label": v, "evidence": ev if v else None} for k, v in vals.items()})


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
