"""One GRPO step with DeepSpeed ZeRO-2 on CPU, through the project's own Ray Train path (``howeval.ray_jobs.train_grpo.run``).

DeepSpeed's CPU accelerator (no CUDA: "Setting accelerator to CPU") with the gloo process group Ray Train
sets up, ``configs/deepspeed/zero2.json`` (the PatternRL recipe's file, "auto" values filled by transformers),
the tiny test LM, rewards in-process with the rule PatternRM. Measured on the 2-core machine (December 2026,
deepspeed 0.19.8): 107 s wall the first time (Ray start, building DeepSpeed's shm comm op once into
~/.cache/torch_extensions, the step), 123 s in a later run under load; the TRL step itself 2.6 s. The checkpoint is DeepSpeed's
(``global_step1/`` with the ZeRO optimizer shard), which is what shows the engine ran.

The second test resizes a ZeRO-2 run 2 -> 1 -> 2 workers (the same command three times, resume automatic):
each restart at a new size goes through DeepSpeed's universal checkpoint (``howeval.training.deepspeed_resize``);
409 s and 971 s wall in two runs here.

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
    from howeval.ray_jobs.train_grpo import run
    from howeval.training.config import load_train_config

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


def _optim_shards(ckpt_dir: Path) -> list[Path]:
    tag = (ckpt_dir / "latest").read_text().strip()
    return sorted((ckpt_dir / tag).glob("*zero_pp_rank_*_mp_rank_00_optim_states.pt"))


def _adam_steps(shard: Path) -> list[int]:
    """Adam's step count in one ZeRO-2 optimizer shard (the base optimizer's per-group state)."""
    import torch

    sd = torch.load(shard, map_location="cpu", weights_only=False)["optimizer_state_dict"]
    base = sd["base_optimizer_state"]
    states = base["state"].values() if isinstance(base, dict) else [s for g in base for s in g["state"].values()]
    return sorted({int(s["step"]) for s in states})


def test_zero2_run_resizes_2_1_2_workers_through_a_universal_checkpoint(tmp_path, repo_root: Path, monkeypatch):
    """Issue 28: an elastic ZeRO-2 run that restarts at another worker count continues with its optimizer
    state. The same command is run three times (resume is automatic) at 2, 1, then 2 workers, as Ray Train's
    elastic group does after a node loss and a node return: each restart at a new size converts the restored
    checkpoint with ds_to_universal and loads it with ``load_universal`` (DeepSpeed refuses the raw shards)."""
    pytest.importorskip("deepspeed", reason="deepspeed is in the gpu extra; `make test-deepspeed` installs it and runs this")
    from howeval.config import with_changes
    from howeval.ray_jobs.train_grpo import run
    from howeval.training.config import load_train_config
    from howeval.training.deepspeed_resize import saved_dp_world_size

    monkeypatch.setenv("RAY_ADDRESS", os.environ.get("RAY_ADDRESS", "local"))
    cfg = load_train_config(str(repo_root / "configs" / "train" / "smoke.yaml"), overrides={
        "model": "embedded:tiny-lm",
        "reward": {"source": "inprocess", "patternrm": {"kind": "rules"}},
        "scaling": {"resources_per_worker": {"CPU": 1}},
        "storage": {"num_to_keep": 4},
        "grpo": {"deepspeed": str(repo_root / "configs" / "deepspeed" / "zero2.json"), "beta": 0.0},
    })
    storage = str(tmp_path / "ckpt")
    seen = []
    for workers, steps in [(2, 2), (1, 3), (2, 4)]:
        c = with_changes(cfg, "test", scaling=with_changes(cfg.scaling, "test", num_workers=workers))
        result = run(c, storage_path=storage, max_steps=steps)  # resume: automatic after the first
        assert result.metrics["step"] == steps and result.metrics["world_size"] == workers
        with result.checkpoint.as_directory() as d:
            d = Path(d)
            assert saved_dp_world_size(str(d)) == workers  # the shards of the size that saved it
            seen.append(_adam_steps(_optim_shards(d)[0]))
            state = json.loads((d / "trainer_state.json").read_text())
        if steps > 2:  # resumed from the previous phase's last checkpoint, saved by the other worker count
            assert result.metrics["resumed_from_step"] == steps - 1
            assert result.metrics["resumed_from_world_size"] == {1: 2, 2: 1}[workers]
    # Adam's step count runs on across the resizes: the optimizer state came through (a fresh one would
    # restart at 1 after each resize)
    assert seen == [[2], [3], [4]], seen
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2, 3, 4]
