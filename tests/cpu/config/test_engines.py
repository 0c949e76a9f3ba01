"""Tests for howeval.config.engines: vLLM options (pass-through engine arguments, checked when vllm is importable)."""
from __future__ import annotations

import pytest

from howeval.config.engines import VLLMOptions


def test_vllm_options_reject_the_same_key_twice_and_the_model():
    with pytest.raises(ValueError, match=r"\['max_model_len'\] given both flat and under engine_kwargs"):
        VLLMOptions.model_validate({"max_model_len": 1, "engine_kwargs": {"max_model_len": 2}})
    with pytest.raises(ValueError, match="config's `model:`"):
        VLLMOptions.model_validate({"model": "/x"})


def test_vllm_options_checked_against_engine_args_when_vllm_is_importable(monkeypatch):
    import howeval.config.engines as options

    monkeypatch.setattr(options, "vllm_engine_arg_names", lambda: frozenset({"max_model_len", "kv_cache_dtype"}))
    assert VLLMOptions.model_validate({"kv_cache_dtype": "fp8"}).all_engine_kwargs() == {"kv_cache_dtype": "fp8"}
    with pytest.raises(ValueError, match=r"unknown vLLM engine argument\(s\) \['max_modle_len'\]"):
        VLLMOptions.model_validate({"max_modle_len": 4096})
    # no vllm here: near-misses of the recorded EngineArgs names are errors, other new names wait for the engine
    monkeypatch.setattr(options, "vllm_engine_arg_names", lambda: None)
    with pytest.raises(ValueError, match="'max_modle_len': did you mean 'max_model_len'"):
        VLLMOptions.model_validate({"max_modle_len": 4096})
    assert VLLMOptions.model_validate({"a_future_flag": 1}).all_engine_kwargs() == {"a_future_flag": 1}


def test_vllm_is_imported_for_the_check_only_when_the_recorded_names_do_not_answer_it(monkeypatch):
    """Issue 43 (start sooner): no options, or only fields of the recorded EngineArgs with that vLLM version
    installed, are checked without importing vllm; anything else is checked against the installed EngineArgs."""
    import howeval.config.engines as options
    from howeval.config.vllm_known_args import RECORDED_VERSION

    calls = []

    def names():
        calls.append(1)
        return frozenset({"max_model_len"})

    monkeypatch.setattr(options, "vllm_engine_arg_names", names)
    monkeypatch.setattr(options, "_vllm_version", lambda: RECORDED_VERSION)
    VLLMOptions.model_validate({})
    VLLMOptions.model_validate({"max_num_seqs": 64, "engine_kwargs": {"enable_prefix_caching": True}})
    assert calls == []
    with pytest.raises(ValueError, match=r"unknown vLLM engine argument\(s\) \['max_modle_len'\]"):
        VLLMOptions.model_validate({"max_modle_len": 4096})
    assert calls == [1]
    monkeypatch.setattr(options, "_vllm_version", lambda: "0.99.0")  # another vLLM: its own fields decide
    with pytest.raises(ValueError, match=r"\['max_num_seqs'\]"):
        VLLMOptions.model_validate({"max_num_seqs": 64})
    assert calls == [1, 1]
