"""GPU only (pip install -e '.[gpu]' on a CUDA machine): the vllm engine on the embedded SmolLM2 copy.

Not part of `make test` (CI has no GPU): `python -m pytest tests/gpu`.
"""
from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_vllm_engine_generates_and_splits_reasoning():
    from howeval.engines.base import ChatRequest
    from howeval.engines.checkpoints import embedded_checkpoint
    from howeval.engines.registry import build_engine

    eng = build_engine("vllm", embedded_checkpoint(), {"max_model_len": 2048, "gpu_memory_utilization": 0.3})
    reqs = [ChatRequest(messages=[{"role": "user", "content": "What is the capital of France?"}], max_tokens=16),
            ChatRequest(messages=[{"role": "user", "content": "Say hi."}], max_tokens=2,
                        chat_template_kwargs={"enable_thinking": False})]
    a, b = eng.generate(reqs)
    assert a.error is None and "Paris" in a.text and a.completion_tokens <= 16
    assert b.completion_tokens <= 2 and b.finish_reason in ("length", "stop")
