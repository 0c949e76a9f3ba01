"""Every job's command line explains each option (``--help``), and each job has a console script."""
from __future__ import annotations

import argparse
import importlib

import pytest
import tomllib

JOBS = ["adapt", "build_corpus", "build_keysteps", "build_mixture", "build_triggers", "build_refs", "calibrate", "compare", "crystal", "judge", "local_head", "report",
        "sweep", "train_elastic", "train_patternrm"]


@pytest.mark.parametrize("job", JOBS)
def test_every_option_has_help_text(job, monkeypatch, capsys):
    silent = []
    original = argparse._ActionsContainer.add_argument

    def recording(self, *args, **kwargs):
        action = original(self, *args, **kwargs)
        if not action.help and action.dest != "help":
            silent.append("/".join(action.option_strings) or action.dest)
        return action

    monkeypatch.setattr(argparse._ActionsContainer, "add_argument", recording)
    module = importlib.import_module(f"howeval.ray_jobs.{job}")
    with pytest.raises(SystemExit) as e:
        module.main(["--help"])
    assert e.value.code == 0 and "usage:" in capsys.readouterr().out
    assert not silent, f"howeval.ray_jobs.{job}: options without help text: {silent}"


def test_console_scripts_point_at_the_jobs_mains(repo_root):
    scripts = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["howeval-sweep"] == "howeval.ray_jobs.sweep:main" and scripts["howeval-judge"] == "howeval.ray_jobs.judge:main"
    for name, target in scripts.items():
        module, _, func = target.partition(":")
        assert name.startswith("howeval-") and callable(getattr(importlib.import_module(module), func)), name
