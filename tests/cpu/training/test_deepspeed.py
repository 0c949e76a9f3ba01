"""One GRPO step with DeepSpeed ZeRO-2 on CPU, through the project's own Ray Train path (``ray_jobs.train_grpo.run``).

DeepSpeed's CPU accelerator (no CUDA: "Setting accelerator to CPU") with the gloo process group Ray Train
sets up, ``configs/deepspeed/zero2.json`` (the PatternRL recipe's file, "auto" values filled by transformers),
the tiny test LM, rewards in-process with the rule PatternRM. Measured on the 2-core machine (December 2026,
deepspeed 0.19.8): 107 s wall the first time (Ray start, building DeepSpeed's shm comm op once into
~/.cache/torch_extensions, the step), 123 s in a later run under load; the TRL step itself 2.6 s. The checkpoint is DeepSpeed's
(``global_step1/`` with the ZeRO optimizer shard), which is what shows the engine ran.

deepspeed is in the ``gpu`` extra, not in ``make install``: without it the test skips (``make test-deepspeed``
installs deepspeed==0.19.8 into .venv, ~15 s, ``pip check`` clean, and runs it). On a GPU machine
``make check-gpu`` runs the same step on CUDA.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_one_grpo_step_with_deepspeed_zero2_on_cpu(tmp_path, repo_root: Path, monkeypatch):
    pytest.importorskip("deepspeed", reason="deepspeed is in the gpu extra; `make test-deepspeed` installs it and runs this")
    from howeval.training.config import load_train_config
    from ray_jobs.train_grpo import run

    monkeypatch.setenv("RAY_ADDRESS", os.environ.get("RAY_ADDRESS", "local"))
    zero2 = repo_root / "configs" / "deepspeed" / "zero2.json"
    cfg = load_train_config(str(repo_root / "configs" / "train" / "smoke.yaml"), overrides={
        "model": "embedded:tiny-lm",
        "reward": {"source": "inprocess", "patternrm": {"kind": "rules"}},
        "scaling": {"resources_per_worker": {"CPU": 2}},
        "grpo": {"deepspeed": str(zero2), "beta": 0.0},
    })
    result = run(cfg, storage_path=str(tmp_path / "ckpt"), max_steps=1)
    assert result.metrics["step"] == 1
    with result.checkpoint.as_directory() as d:
        d = Path(d)
        assert json.loads((d / "trainer_state.json").read_text())["global_step"] == 1
        assert (d / "latest").read_text().strip() == "global_step1"  # DeepSpeed's checkpoint tag file
        shards = sorted(p.name for p in (d / "global_step1").iterdir())
    assert "mp_rank_00_model_states.pt" in shards
    assert any(s.endswith("zero_pp_rank_0_mp_rank_00_optim_states.pt") for s in shards), shards
