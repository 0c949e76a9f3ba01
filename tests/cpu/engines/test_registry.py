"""Tests for howeval.engines.registry: unknown engines and bad options name the problem."""
from __future__ import annotations

import pytest

from howeval.config.engines import OpenAIOptions
from howeval.engines.registry import build_engine


def test_unknown_engine_and_bad_option_name_the_problem():
    with pytest.raises(ValueError, match="registered"):
        build_engine("tgi", "m", {})
    with pytest.raises(ValueError, match="max_concurency"):
        build_engine("openai", "m", {"max_concurency": 3})
    assert OpenAIOptions().max_retries == 3


def test_batches_in_flight_keeps_the_openai_window_full():
    from howeval.engines.registry import batches_in_flight

    assert batches_in_flight("openai", {"max_concurrency": 64}, 32) == 3
    assert batches_in_flight("openai", {}, 16) == 2  # default window 8: one batch fills it, one more waits ready
    assert batches_in_flight("openai", {"max_concurrency": 1}, 1) == 2
    assert batches_in_flight("hf", {}, 4) == batches_in_flight("replay", {}, 4) == 1


def test_batches_in_flight_keeps_every_vllm_sequence_slot_busy():
    from howeval.engines.registry import VLLM_DEFAULT_MAX_NUM_SEQS, batches_in_flight

    # enough batches to fill max_num_seqs, plus one queued behind them
    assert batches_in_flight("vllm", {"max_num_seqs": 128}, 32) == 5
    assert batches_in_flight("vllm", {"engine_kwargs": {"max_num_seqs": 100}}, 64) == 3
    assert batches_in_flight("vllm", {}, 64) == -(-VLLM_DEFAULT_MAX_NUM_SEQS // 64) + 1
    with pytest.raises(ValueError, match="batch_size"):
        batches_in_flight("vllm", {}, 0)


def test_an_engine_declares_its_batches_in_flight_at_registration():
    from howeval.engines import registry

    registry.register_engine("scripted-in-flight", lambda m, o: None, in_flight=lambda opts, bs: 7)
    try:
        assert registry.batches_in_flight("scripted-in-flight", {}, 8) == 7
    finally:
        registry._BUILDERS.pop("scripted-in-flight")
        registry._IN_FLIGHT.pop("scripted-in-flight")
