"""Tests for howeval.engines.registry: unknown engines and bad options name the problem."""
from __future__ import annotations

import pytest

from howeval.engines.options import OpenAIOptions
from howeval.engines.registry import build_engine


def test_unknown_engine_and_bad_option_name_the_problem():
    with pytest.raises(ValueError, match="registered"):
        build_engine("tgi", "m", {})
    with pytest.raises(ValueError, match="max_concurency"):
        build_engine("openai", "m", {"max_concurency": 3})
    assert OpenAIOptions().max_retries == 3
