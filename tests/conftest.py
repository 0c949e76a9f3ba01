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
