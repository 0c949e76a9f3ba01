"""Tests for howeval.engines.prompts: requests per mode, the question layout, image data URLs."""
from __future__ import annotations

import doctest

import pytest

from howeval.config import ModelConfig
from howeval.engines import prompts
from howeval.engines.prompts import build_request, format_question, image_data_url, image_mime, question_text


def test_doctests():
    assert doctest.testmod(prompts).failed == 0


def test_request_per_mode_and_options():
    m = ModelConfig.model_validate({"name": "q", "engine": "openai", "model": "m", "modes": {
        "NT": {"chat_template_kwargs": {"enable_thinking": False}},
        "T": {"chat_template_kwargs": {"enable_thinking": True}, "max_tokens": 999}}})
    s = {"sample_id": "s1", "question": "Pick", "options": ["x", "y"], "images": [b"\x89PNG\r\n\x1a\nabc"]}
    assert question_text(s) == "Pick\nA. x\nB. y\nPut your final answer in \\boxed{}."
    r = build_request(s, m, "T")
    assert r.chat_template_kwargs == {"enable_thinking": True} and r.max_tokens == 999
    assert r.messages[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert r.request_id == "s1|q|T"
    with pytest.raises(KeyError, match="configured"):
        build_request(s, m.model_copy(update={"modes": {"NT": m.modes["NT"]}}), "T")


def test_question_layouts():
    # the sweep: one newline; the AdaptMMBench loop: a blank line; no options and no instruction: the question
    assert format_question("Q?", ["a", "b"], "Answer: X", sep="\n\n") == "Q?\n\nA. a\nB. b\n\nAnswer: X"
    assert format_question(" Q? ", None, "") == "Q?"
    assert question_text({"question": "Q?", "instruction": "Say it."}) == "Q?\nSay it."
    assert format_question("Q", [str(i) for i in range(26)], None).endswith("Z. 25")
    with pytest.raises(ValueError, match="at most 26"):
        format_question("Q", ["x"] * 27, None)


@pytest.mark.parametrize("data, mime", [
    (b"\x89PNG\r\n\x1a\n....", "image/png"), (b"\xff\xd8\xff\xe0..", "image/jpeg"), (b"GIF89a..", "image/gif"),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"), (b"BM....", None),
])
def test_image_mime_and_data_url(data, mime):
    assert image_mime(data) == mime
    assert image_data_url(data).startswith(f"data:{mime or 'application/octet-stream'};base64,")
