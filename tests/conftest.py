"""Shared fixtures: where the real benchmark samples live (``../shared/data``, never copied here)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HOWEVAL_SHARED_DATA", REPO.parent / "shared" / "data"))


def pytest_sessionstart(session):
    """Print pytest-randomly's seed as the first line also under ``-q`` (which hides the header, where
    pytest-randomly prints it), with the command that replays the order."""
    config = session.config
    tr = config.pluginmanager.get_plugin("terminalreporter")
    seed = getattr(config.option, "randomly_seed", None)
    if tr is None or getattr(tr, "showheader", True) or not config.pluginmanager.has_plugin("randomly"):
        return
    if isinstance(seed, int) and getattr(config.option, "randomly_reorganize", True):
        tr.write_line(f"test order shuffled with --randomly-seed={seed} (replay it: make test SEED={seed})")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test (or fixture) that needs the embedded PatternRM on a machine where it is not cached and the real
    samples it trains on are absent (a clone outside this folder layout) is skipped with the one-line reason
    (``howeval.judges.patternrm.head.PatternRMDataMissing``), not failed."""
    outcome = yield
    rep = outcome.get_result()
    if call.excinfo is not None and call.excinfo.typename == "PatternRMDataMissing":
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {call.excinfo.value}")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data`` (override with HOWEVAL_SHARED_DATA); a test that needs it is skipped, with
    the reason, where it is absent (a clone outside this folder layout)."""
    if not (SHARED_DATA / "manifest.jsonl").exists():
        pytest.skip(f"real samples not found at {SHARED_DATA} (../shared/data beside the repository): "
                    "set HOWEVAL_SHARED_DATA=/path/to/data to run this test")
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
