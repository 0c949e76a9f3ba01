"""Tests for howeval.benchmarks.adapt.toolcalls: OpenAI and plain-text tool calls, bad calls kept with their error."""
from __future__ import annotations

import pytest

from howeval.benchmarks.adapt.toolcalls import (
    parse_openai_tool_calls,
    parse_text_tool_calls,
    parse_tool_calls,
    strip_tool_calls,
)


def test_parse_openai_tool_calls():
    calls = parse_openai_tool_calls(
        [
            {"id": "c1", "type": "function", "function": {"name": "zoom_in", "arguments": '{"box": [1, 2, 3, 4]}'}},
            {"id": "c2", "type": "function", "function": {"name": "rotate", "arguments": "{degrees: 90"}},
            {"id": "c3", "type": "function", "function": {"name": "contrast", "arguments": {"factor": 2}}},
            {"id": "c4", "type": "function", "function": {"name": "rotate", "arguments": "[90]"}},
        ]
    )
    assert [(c.name, c.id) for c in calls] == [("zoom_in", "c1"), ("rotate", "c2"), ("contrast", "c3"), ("rotate", "c4")]
    assert calls[0].arguments == {"box": [1, 2, 3, 4]} and calls[0].parse_error is None
    assert calls[1].arguments is None and "not valid JSON" in calls[1].parse_error
    assert calls[2].arguments == {"factor": 2}
    assert "JSON object" in calls[3].parse_error


def test_parse_text_tool_calls_both_formats_in_order():
    text = (
        "I need a closer look.\n"
        "TOOL: rotate(degrees=-90)\n"
        '<tool_call>{"name": "zoom_in", "arguments": {"box": [10, 20, 30, 40], "scale": 3}}</tool_call>\n'
        "- TOOL: contrast(factor=1.5)\n"
    )
    calls = parse_text_tool_calls(text)
    assert [(c.name, c.arguments, c.source) for c in calls] == [
        ("rotate", {"degrees": -90}, "line"),
        ("zoom_in", {"box": [10, 20, 30, 40], "scale": 3}, "tag"),
        ("contrast", {"factor": 1.5}, "line"),
    ]
    assert all(c.parse_error is None for c in calls)
    assert strip_tool_calls(text) == "I need a closer look."


@pytest.mark.parametrize(
    "text,name,fragment",
    [
        ("TOOL: zoom_in([1, 2, 3, 4])", "zoom_in", "keyword"),
        ("TOOL: zoom_in(box=[1, 2, 3, 4]", "zoom_in", "not a call"),
        ("TOOL: zoom_in(box=x)", "zoom_in", "not a literal"),
        ('<tool_call>{"name": "zoom_in", "arguments": {"box": [1, 2]</tool_call>', "zoom_in", "not valid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "", "no string 'name'"),
        ('<tool_call>{"name": "rotate", "arguments": "{\\"degrees\\": 90}"}</tool_call>', "rotate", None),
    ],
)
def test_parse_text_bad_or_odd_calls(text, name, fragment):
    (call,) = parse_text_tool_calls(text)
    assert call.name == name
    if fragment is None:
        assert call.parse_error is None and call.arguments == {"degrees": 90}
    else:
        assert fragment in call.parse_error


def test_parse_tool_calls_prefers_openai_and_handles_plain_answers():
    tc = [{"id": "a", "type": "function", "function": {"name": "rotate", "arguments": '{"degrees": 90}'}}]
    assert [c.source for c in parse_tool_calls("TOOL: contrast(factor=2)", tc)] == ["openai"]
    assert parse_tool_calls("The answer is B.", None) == []
    assert parse_tool_calls("", []) == []
    assert parse_tool_calls(None) == []
