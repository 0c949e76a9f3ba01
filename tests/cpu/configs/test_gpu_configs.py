"""The GPU recipes' pass-through blocks name fields of the installed TRL/transformers config classes.

The suite runs with the transformers/TRL the GPU image gets (constraints/cpu.txt = constraints/gpu.txt,
tests/cpu/test_gpu_extra.py), so a field that exists only in a newer transformers fails here, not on the GPUs
(transformers 5.24's ``activation_checkpointing`` is not a TrainingArguments field in 5.20.2).
"""
from __future__ import annotations

import dataclasses

import pytest
import yaml


@pytest.mark.parametrize("path, block, cls", [
    ("configs/patternrm/gpu-zero3.yaml", "sft", "SFTConfig"),
    ("configs/train/patternrl.yaml", "grpo", "GRPOConfig"),
    ("configs/train/baserl.yaml", "grpo", "GRPOConfig"),
    ("configs/train/cpr.yaml", "grpo", "GRPOConfig"),
    ("configs/train/composite.yaml", "grpo", "GRPOConfig"),
])
def test_gpu_recipe_keys_are_fields_of_the_installed_trl(path, block, cls, repo_root):
    import trl

    fields = {f.name for f in dataclasses.fields(getattr(trl, cls))}
    keys = set(yaml.safe_load((repo_root / path).read_text())[block])
    assert keys <= fields, f"{path} {block}: not {cls} fields in trl {trl.__version__}: {sorted(keys - fields)}"
