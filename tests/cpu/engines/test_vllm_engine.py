"""Tests for howeval.engines.vllm_engine without a GPU: request and engine-argument mapping, install hint."""
from __future__ import annotations

import pytest

from howeval.config.engines import VLLMOptions
from howeval.engines.base import ChatRequest
from howeval.engines.registry import build_engine


def test_vllm_mapping_without_a_gpu():
    from howeval.engines.vllm_engine import llm_kwargs, root_cause, sampling_kwargs

    r1 = ChatRequest(messages=[], max_tokens=5, temperature=0.6, top_p=0.95, seed=3, chat_template_kwargs={"enable_thinking": True})
    assert sampling_kwargs(r1) == {"max_tokens": 5, "temperature": 0.6, "top_p": 0.95, "seed": 3}
    # engine arguments are vLLM's own, flat or under engine_kwargs, passed through unchanged
    opts = VLLMOptions.model_validate({"tensor_parallel_size": 4, "engine_kwargs": {"enable_prefix_caching": True}})
    # TP 4 on GPUs: vLLM's workers are Ray actors in the replica's placement group (a config may set another backend)
    assert llm_kwargs("/models/q", opts) == {"model": "/models/q", "tensor_parallel_size": 4, "enable_prefix_caching": True,
                                             "distributed_executor_backend": "ray"}
    mp = VLLMOptions.model_validate({"tensor_parallel_size": 2, "distributed_executor_backend": "mp"})
    assert llm_kwargs("/m", mp)["distributed_executor_backend"] == "mp"
    assert "distributed_executor_backend" not in llm_kwargs("/m", VLLMOptions.model_validate({"tensor_parallel_size": 1}))
    # on a CPU platform the unset keys get the CPU defaults; a key the config sets wins
    cpu = llm_kwargs("/m", VLLMOptions.model_validate({"max_model_len": 4096}), on_cpu=True)
    assert cpu == {"model": "/m", "dtype": "float32", "enforce_eager": True, "gpu_memory_utilization": 0.1,
                   "max_model_len": 4096}
    try:
        try:
            raise OSError("no config.json in /m")
        except OSError as inner:
            raise RuntimeError("Engine core initialization failed.\nSee root cause above.") from inner
    except RuntimeError as e:
        assert root_cause(e) == "OSError: no config.json in /m"


def test_vllm_engine_missing_is_an_install_hint():
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm installed: covered by tests/gpu")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"\.\[gpu\]"):
        build_engine("vllm", "/models/x", {})


def test_vllm_sampling_starts_from_the_models_defaults_and_config_overrides_win():
    from howeval.engines.vllm_engine import sampling_kwargs

    defaults = {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "presence_penalty": 1.5}  # e.g. Qwen's generation_config
    unset = ChatRequest(messages=[], max_tokens=64, temperature=None, top_p=None, seed=None)
    assert sampling_kwargs(unset, defaults) == {**defaults, "max_tokens": 64}  # was temperature 0.0, top_p 1.0
    over = ChatRequest(messages=[], max_tokens=64, temperature=0.0, top_p=None, top_k=-1, seed=1)
    assert sampling_kwargs(over, defaults) == {"temperature": 0.0, "top_p": 0.8, "top_k": -1, "presence_penalty": 1.5,
                                               "max_tokens": 64, "seed": 1}


def test_vllm_engine_detects_a_template_that_prefills_think():
    from howeval.engines.vllm_engine import VLLMEngine

    class Tok:
        def apply_chat_template(self, msgs, tokenize, add_generation_prompt, **kw):
            return "<|im_start|>assistant\n" + ("<think>\n" if kw.get("enable_thinking", True) else "<think>\n\n</think>\n\n")

    class LLM:
        def get_tokenizer(self):
            return Tok()

    eng = object.__new__(VLLMEngine)  # no vllm here: only the template check
    eng.llm, eng._prefill_cache = LLM(), {}
    assert eng._prefills({"enable_thinking": True}) is True and eng._prefills(None) is True
    assert eng._prefills({"enable_thinking": False}) is False
