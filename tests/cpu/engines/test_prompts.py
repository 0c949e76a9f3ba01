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


# ------------------------------------------------------------------ issue 25: one answer instruction


def test_one_answer_instruction_per_prompt_set_per_benchmark(tmp_path):
    import json as _json

    from howeval.benchmarks.loaders import load_samples
    from howeval.config import BenchmarkConfig, ModelConfig
    from howeval.engines.prompts import ANSWER_INSTRUCTION, build_request

    m = tmp_path / "m.jsonl"
    m.write_text(_json.dumps({"uid": "a", "question": "2+2?", "answer": "4", "answer_type": "integer_number",
                              "category": "stem"}) + "\n")
    model = ModelConfig(name="c", engine="hf", vision=False, modes={"NT": {"system_prompt": "Answer briefly."}})
    for instr, expected in [(None, ANSWER_INSTRUCTION), ("Answer with a number only.", "Answer with a number only.")]:
        (s,), _ = load_samples([BenchmarkConfig(path=str(m), answer_instruction=instr)])
        req = build_request(s, model, "NT")
        text = req.messages[-1]["content"][-1]["text"]
        assert text == f"2+2?\n{expected}"  # exactly one instruction, the benchmark's
        assert "answer is" not in req.messages[0]["content"].lower()  # and no second format in the system prompt
    (s,), _ = load_samples([BenchmarkConfig(path=str(m), answer_instruction="")])
    assert build_request(s, model, "NT").messages[-1]["content"][-1]["text"] == "2+2?"


@pytest.mark.parametrize("modes,match", [
    ({"NT": {"system_prompt": "Answer directly. End with: The answer is <answer>."}}, "sets an answer format"),
    ({"NT": {"system_prompt": "Put your final answer in \\boxed{}."}}, "sets an answer format"),
    ({"T": {"system_prompt": "First think step by step inside <think></think> tags."}}, "asks for <think> tags"),
    ({"NT": {"system_prompt": "x", "prompted_thinking": True}}, "only the T mode"),
])
def test_configs_that_ask_for_two_formats_or_fake_thinking_are_refused(modes, match):
    from howeval.config import ModelConfig

    with pytest.raises(ValueError, match=match):
        ModelConfig(name="c", engine="hf", modes=modes)


def test_prompted_thinking_is_allowed_when_said_so():
    from howeval.config import ModelConfig

    m = ModelConfig(name="c", engine="hf", modes={"T": {"system_prompt": "Think inside <think></think>.",
                                                         "prompted_thinking": True}})
    assert m.modes["T"].prompted_thinking
