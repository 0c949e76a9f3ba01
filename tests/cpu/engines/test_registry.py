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
    assert batches_in_flight("vllm", {}, 32) == batches_in_flight("hf", {}, 4) == 1
