"""Shared fixtures: where the real benchmark samples live (``../shared/data``, never copied here)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HOWEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data`` (override with HOWEVAL_SHARED_DATA); skips nothing: it must exist."""
    assert SHARED_DATA.exists(), f"real samples not found at {SHARED_DATA}; set HOWEVAL_SHARED_DATA"
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def tiny_vlm_engine():
    """The ``hf`` engine on the tiny VLM test vehicle (built once under the cache; howeval.engines.tiny_vlm)."""
    from howeval.engines.registry import build_engine
    from howeval.engines.tiny_vlm import TINY_VLM

    eng = build_engine("hf", TINY_VLM, {"batch_size": 4, "torch_threads": 1})
    assert eng.supports_images and eng.model.config.model_type == "idefics3"
    return eng
