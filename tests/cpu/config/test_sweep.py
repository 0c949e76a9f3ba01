"""Tests for howeval.config.sweep: paths resolved against the file, errors naming the key, the demo config."""
from __future__ import annotations

from pathlib import Path

import pytest

from howeval.config import ConfigError, load_sweep_config


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


BASE = """
output_uri: out
benchmarks: [{path: m.jsonl}]
models:
  - name: a
    engine: hf
    modes: {NT: {}}
"""


def test_config_resolves_benchmark_paths_against_the_file(tmp_path):
    cfg = load_sweep_config(_write(tmp_path, BASE))
    assert cfg.benchmarks[0].path == str((tmp_path / "m.jsonl").resolve())
    assert cfg.judges.primary_name == "rules"


@pytest.mark.parametrize("patch, expect", [
    (("engine: hf", "engine: nope"), "unknown engine 'nope'"),
    (("modes: {NT: {}}", "modes: {NT: {}, X: {}}"), "models.0.modes.X"),
    (("engine: hf", "engine: hf\n    options: {batch_sz: 3}"), "batch_sz"),
    (("engine: hf", "engine: hf\n    sampling: {max_tokens: 0}"), "models.0.sampling.max_tokens"),
    (("output_uri: out", "output_uri: out\ncolour: red"), "colour"),
])
def test_config_errors_name_the_key(tmp_path, patch, expect):
    with pytest.raises(ConfigError) as e:
        load_sweep_config(_write(tmp_path, BASE.replace(*patch)))
    assert expect in str(e.value)


def test_demo_config_validates(repo_root):
    cfg = load_sweep_config(repo_root / "configs" / "demo.yaml")
    assert [m.name for m in cfg.models] == ["smollm2-135m"] and set(cfg.models[0].modes) == {"NT", "T"}
    assert Path(cfg.benchmarks[0].path).exists()


def test_sweep_module_doctests():
    """The module's doctests run here (``make test`` runs tests/cpu only, without --doctest-modules): the
    documented-thinking-prompt lookup on InternVL3.5's prompt with its blank lines collapsed."""
    import doctest

    import howeval.config.sweep as sweep

    res = doctest.testmod(sweep)
    assert res.attempted >= 2 and res.failed == 0
