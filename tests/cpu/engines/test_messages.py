"""howeval.engines.messages: the prompt as sent, with image ids instead of bytes; template parts for VLM processors."""
from __future__ import annotations

import json

import pytest

from howeval.config import ModelConfig
from howeval.engines.messages import prompt_record, redact_images, to_template_parts
from howeval.engines.prompts import build_request, image_data_url


def test_prompt_record_has_system_prompt_text_and_image_ids_not_bytes():
    model = ModelConfig.model_validate({"name": "m", "engine": "replay", "options": {"path": "x"},
                                        "modes": {"T": {"system_prompt": "Think first.", "max_tokens": 50}}})
    sample = {"sample_id": "s1", "question": "What?", "options": ["a", "b"], "images": [b"\x89PNG\r\n\x1a\nAAA", b"xx"]}
    req = build_request(sample, model, "T")
    rec = json.loads(prompt_record(req, ["one.png"]))
    assert rec["messages"][0] == {"role": "system", "content": "Think first."}
    parts = rec["messages"][1]["content"]
    assert parts[:2] == [{"type": "image", "image_id": "one.png"}, {"type": "image", "image_id": "image-1"}]
    assert parts[2]["text"].startswith("What?\nA. a\nB. b\n")
    assert rec["max_tokens"] == 50 and "base64" not in json.dumps(rec)
    # the request itself is unchanged
    assert req.messages[1]["content"][0]["type"] == "image_url"


def test_redact_keeps_plain_text_messages():
    msgs = [{"role": "user", "content": "hi"}]
    assert redact_images(msgs) == msgs


RED, BLUE = b"\x89PNG\r\n\x1a\nred", b"\x89PNG\r\n\x1a\nblue"  # bytes only: nothing decodes them here


def test_template_parts_keep_image_positions_and_bytes():
    msgs = [{"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "image_url", "image_url": {"url": image_data_url(RED)}},
                                         {"type": "image_url", "image_url": {"url": image_data_url(BLUE)}}]},
            {"role": "assistant", "content": None}]
    out, images = to_template_parts(msgs)
    assert out[1]["content"] == [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "image"}]
    assert images == [RED, BLUE] and out[2]["content"] == "" and out[0]["content"] == "s"
    with pytest.raises(ValueError, match="base64 data URL"):
        to_template_parts([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}]}])
