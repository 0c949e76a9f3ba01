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


def test_unset_batch_size_takes_the_engines_default_and_the_rows_in_flight_its_capacity():
    """Issue 43: with no batch size in the config the rows in flight per replica come from the engine's
    capacity (vLLM's max_num_seqs, openai's max_concurrency), never fewer, plus one batch queued."""
    from howeval.engines.registry import (
        DEFAULT_BATCH_SIZE,
        VLLM_DEFAULT_MAX_NUM_SEQS,
        batches_in_flight,
        default_batch_size,
        resolved_batch_size,
    )

    assert VLLM_DEFAULT_MAX_NUM_SEQS == 1024  # vLLM's largest own default (H100/H200-class offline LLM)
    cases = [("vllm", {}, 64, VLLM_DEFAULT_MAX_NUM_SEQS), ("vllm", {"max_num_seqs": 128}, 32, 128),
             ("vllm", {"max_num_seqs": 512}, 64, 512), ("vllm", {"max_num_seqs": 2}, 1, 2),
             ("openai", {}, 8, 8), ("openai", {"max_concurrency": 128}, 32, 128),
             ("openai", {"max_concurrency": 1000}, 64, 1000)]
    for engine, opts, batch, capacity in cases:
        assert resolved_batch_size(engine, opts, None) == default_batch_size(engine, opts) == batch, (engine, opts)
        rows = batch * batches_in_flight(engine, opts, batch)
        assert capacity + batch <= rows < capacity + 2 * batch, (engine, opts, rows)
    assert resolved_batch_size("hf", {}, None) == resolved_batch_size("replay", {}, None) == DEFAULT_BATCH_SIZE == 8
    assert batches_in_flight("hf", {}, 8) == 1
    # a config's own batch size wins; the rows in flight still cover the engine's capacity
    assert resolved_batch_size("vllm", {"max_num_seqs": 128}, 16) == 16
    assert 16 * batches_in_flight("vllm", {"max_num_seqs": 128}, 16) == 144


def test_an_engine_declares_its_default_batch_size_at_registration():
    from howeval.engines import registry

    registry.register_engine("scripted-batch", lambda m, o: None, batch_size=lambda opts: (opts or {}).get("n", 0) + 5)
    try:
        assert registry.default_batch_size("scripted-batch", {"n": 3}) == 8
        assert registry.default_batch_size("scripted-batch", {"n": -10}) == 1  # never below one row
    finally:
        registry._BUILDERS.pop("scripted-batch")
        registry._BATCH_SIZE.pop("scripted-batch")
