"""Tests for howeval.actors.judge: the judge stage takes the typed judges block, never its dumped dict."""
from __future__ import annotations

import pytest

from howeval.actors.judge import JudgeStage
from howeval.config import JudgesConfig


def test_a_dumped_judges_block_is_refused_not_revalidated():
    with pytest.raises(TypeError, match="judges: expected a JudgesConfig, got dict"):
        JudgeStage(JudgesConfig().model_dump())
