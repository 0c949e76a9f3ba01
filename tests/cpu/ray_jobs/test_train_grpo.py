"""GRPO on Ray Train, end to end on CPU: 2 steps scored by a live reward server, a checkpoint, a resume to step 3.

Also checks that the reward a rollout received in training is what the server (and the in-process
scorer, the same ``howeval.rewards.pipeline``) returns for the same text, with the trained PatternRM.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fakes.reward_server import running_reward_server


TOKEN_ENV = "HOWEVAL_TEST_REWARD_TOKEN"
TOKEN = "grpo-smoke-token"
URL_ENV = "HOWEVAL_TEST_REWARD_URL"


def test_scratch_dir_removes_what_dead_workers_left_and_keeps_live_ones(tmp_path):
    from ray_jobs.train_grpo import scratch_dir

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs (reaped)
    root = tmp_path / "howeval-grpo-r1"
    (root / f"rank0-pid{dead.pid}" / "checkpoint-3").mkdir(parents=True)
    (root / "rank1-pid1").mkdir()  # pid 1 is alive
    (root / "notes").mkdir()       # not a worker folder
    out = scratch_dir("r1", 0, parent=str(tmp_path))
    assert out == str(root / f"rank0-pid{os.getpid()}")
    assert sorted(p.name for p in root.iterdir()) == sorted([f"rank0-pid{os.getpid()}", "rank1-pid1", "notes"])
    (root / f"rank0-pid{os.getpid()}" / "x").write_text("stale")
    scratch_dir("r1", 0, parent=str(tmp_path))  # our own pid again: a fresh, empty folder
    assert list((root / f"rank0-pid{os.getpid()}").iterdir()) == []


def test_tensorboard_logs_go_to_the_run_folder_not_the_scratch(monkeypatch):
    from howeval.training.config import TrainConfig
    from ray_jobs.train_grpo import tensorboard_env

    def cfg(**grpo):
        return TrainConfig.model_validate({"name": "t", "reward": {"kind": "base"}, "grpo": {"num_generations": 2, **grpo}})

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    assert tensorboard_env(cfg(), "/runs") == {}  # default report_to: none
    assert tensorboard_env(cfg(report_to="tensorboard"), "/runs") == {"TENSORBOARD_LOGGING_DIR": "/runs/t/tensorboard"}
    with pytest.raises(ValueError, match="TENSORBOARD_LOGGING_DIR"):
        tensorboard_env(cfg(report_to=["tensorboard"]), "s3://bucket/runs")
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", "/shared/tb")
    assert tensorboard_env(cfg(report_to="tensorboard"), "s3://bucket/runs") == {"TENSORBOARD_LOGGING_DIR": "/shared/tb"}


@pytest.fixture(scope="module")
def reward_server():
    for k, v in {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}.items():
        os.environ.setdefault(k, v)
    from howeval.judges.patternrm.head import embedded_patternrm

    embedded_patternrm()  # trained once and cached before any replica loads it
    args = {"pattern": {"p": 0.6, "seed": 0, "mode": "mean"}}
    with running_reward_server(TOKEN_ENV, TOKEN, args, log_to_driver=True, patternrm={"kind": "trained"}) as url:
        os.environ[URL_ENV] = url
        yield url


@pytest.mark.ray
@pytest.mark.slow
def test_grpo_smoke_server_checkpoint_resume(reward_server, tmp_path, repo_root):
    from howeval.training.config import load_train_config
    from howeval.training.rewards import InProcessScorer
    from howeval.rewards.client import RewardClient
    from ray_jobs.train_grpo import run

    logs = tmp_path / "rollouts"
    cfg = load_train_config(str(repo_root / "configs" / "train" / "smoke.yaml"), overrides={
        "model": "embedded:tiny-lm",  # the real TRL + Ray Train path with ~40 MB checkpoints (SmolLM2's are 1.6 GB)
        "reward": {"source": "server", "url_env": URL_ENV, "token_env": TOKEN_ENV, "rollout_log_dir": str(logs)},
        "scaling": {"resources_per_worker": {"CPU": 2}},
    })
    storage = str(tmp_path / "ckpt")

    first = run(cfg, storage_path=storage, max_steps=2)
    assert first.checkpoint is not None and first.metrics["step"] == 2
    with first.checkpoint.as_directory() as d:
        assert json.load(open(os.path.join(d, "trainer_state.json")))["global_step"] == 2
    with pytest.raises(FileExistsError, match="--resume"):
        run(cfg, storage_path=storage, max_steps=3)

    second = run(cfg, storage_path=storage, max_steps=3, resume=True)
    assert second.metrics["resumed_from_step"] == 2 and second.metrics["step"] == 3
    with second.checkpoint.as_directory() as d:
        state = json.load(open(os.path.join(d, "trainer_state.json")))
    assert state["global_step"] == 3
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2, 3]  # steps 1-2 came from the checkpoint
    metrics = [json.loads(x) for x in open(os.path.join(storage, cfg.run_name, "metrics.jsonl"))]
    step_logs = [m for m in metrics if "loss" in m]
    for key in ("reward", "reward_parts/accuracy", "reward_parts/z", "kl", "completions/mean_length"):
        assert all(key in m for m in step_logs), key

    rollouts = [json.loads(x) for x in open(logs / "rollouts.rank0.jsonl")]
    assert sorted({r["step"] for r in rollouts}) == [0, 1, 2]  # 2 steps, then the resumed third
    items = [{k: r[k] for k in ("prompt", "response", "answer", "answer_type", "kind") + (("options",) if "options" in r else ())}
             for r in rollouts]
    with RewardClient(reward_server, token_env=TOKEN_ENV) as client:
        again = client.score(items)
    assert [a["reward"] for a in again] == [r["result"]["reward"] for r in rollouts]
    local = InProcessScorer(cfg.reward)(items)  # same p/seed/mode and PatternRM as the server: the same pipeline
    assert [x["reward"] for x in local] == pytest.approx([a["reward"] for a in again])
    assert [x["z"] for x in local] == [a["z"] for a in again]
    assert [x["labels"] for x in local] == [a["labels"] for a in again]
    assert cfg.reward.patternrm.kind == "trained" and not any(a["degraded"] for a in again)
