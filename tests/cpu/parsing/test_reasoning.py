"""Reasoning-channel split: truncation without tags when the template pre-fills the opener (issue 12)."""
from __future__ import annotations

import pytest

from howeval.config import ModeConfig
from howeval.parsing.reasoning import Split, split_reasoning, template_opens_reasoning


@pytest.mark.parametrize(
    "raw,finish,opener,expected",
    [
        # the template pre-filled <think>: a length-cut text with no closing tag is reasoning, not the answer
        ("Let me count the apples: 3, 4, so the answer is 7", "length", True,
         Split("Let me count the apples: 3, 4, so the answer is 7", "", True)),
        # same text, opener not pre-filled (config says nothing): the text is the answer, as before
        ("The answer is 7", "length", False, Split(None, "The answer is 7", False)),
        # pre-filled opener, closing tag reached: split at it
        ("count 3+4 </think> The answer is 7.", "stop", True, Split("count 3+4", "The answer is 7.", False)),
        # pre-filled opener, closing tag reached, then cut while answering: answer kept, not truncated
        ("count </think> The answer is", "length", True, Split("count", "The answer is", False)),
        # pre-filled opener and a normal stop without a closing tag: the text is the answer (unchanged)
        ("The answer is 7.", "stop", True, Split(None, "The answer is 7.", False)),
        # an empty length-cut output with the opener pre-filled is truncated with no reasoning
        ("", "length", True, Split(None, "", True)),
    ],
)
def test_split_with_opener_in_template(raw, finish, opener, expected):
    assert split_reasoning(raw, finish_reason=finish, opener_in_template=opener) == expected


def test_server_reasoning_still_wins():
    assert split_reasoning("The answer is 7", finish_reason="length", server_reasoning="r",
                           opener_in_template=True) == Split("r", "The answer is 7", False)


def test_template_detection_and_config_flag():
    assert template_opens_reasoning("<|im_start|>assistant\n<think>\n")
    assert template_opens_reasoning("Assistant: <THINKING>")
    assert not template_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert ModeConfig().reasoning_opener_in_template is False
    assert ModeConfig(reasoning_opener_in_template=True).reasoning_opener_in_template is True


@pytest.mark.parametrize("raw, finish, expect", [
    ("<think>a</think>B", "stop", ("a", "B", False)),
    ("<think>a", "length", ("a", "", True)),
    ("<think>a", "stop", ("a", "", True)),
    ("a</think> B", "stop", ("a", "B", False)),  # template pre-filled <think>
    ("plain", "length", (None, "plain", False)),
    ("<THINKING>x</THINKING>y", "stop", ("x", "y", False)),
])
def test_split_reasoning(raw, finish, expect):
    s = split_reasoning(raw, finish_reason=finish)
    assert (s.reasoning, s.response, s.truncated) == expect


def test_server_reasoning_channel_wins_and_empty_content_is_truncated():
    assert split_reasoning("42", server_reasoning="r").response == "42"
    s = split_reasoning("", finish_reason="length", server_reasoning="still thinking")
    assert s.truncated and s.response == ""
