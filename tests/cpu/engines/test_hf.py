"""Tests for howeval.engines.hf: the embedded model generates in batches (loads the model: slow)."""
from __future__ import annotations

import pytest

from howeval.engines.base import ChatRequest
from howeval.engines.registry import build_engine


@pytest.mark.slow
def test_hf_embedded_model_generates_in_batches():
    eng = build_engine("hf", None, {"batch_size": 2})
    reqs = [ChatRequest(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}},
                                                                 {"type": "text", "text": q}]}], max_tokens=n)
            for q, n in (("What is the capital of France?", 12), ("Say hello.", 3), ("Count to three.", 8))]
    out = eng.generate(reqs)
    assert "Paris" in out[0].text
    assert out[1].completion_tokens <= 3 and out[1].finish_reason in ("length", "stop")
    assert all(c.error is None for c in out)
