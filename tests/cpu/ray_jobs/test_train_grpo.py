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
    from howeval.ray_jobs.train_grpo import scratch_dir

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
    from howeval.ray_jobs.train_grpo import tensorboard_env
    from howeval.training.config import TrainConfig

    def cfg(**grpo):
        return TrainConfig.model_validate({"name": "t", "reward": {"kind": "base"}, "grpo": {"num_generations": 2, **grpo}})

    monkeypatch.delenv("TENSORBOARD_LOGGING_DIR", raising=False)
    assert tensorboard_env(cfg(), "/runs") == {}  # default report_to: none
    assert tensorboard_env(cfg(report_to="tensorboard"), "/runs") == {"TENSORBOARD_LOGGING_DIR": "/runs/t/tensorboard"}
    with pytest.raises(ValueError, match="TENSORBOARD_LOGGING_DIR"):
        tensorboard_env(cfg(report_to=["tensorboard"]), "s3://bucket/runs")
    monkeypatch.setenv("TENSORBOARD_LOGGING_DIR", "/shared/tb")
    assert tensorboard_env(cfg(report_to="tensorboard"), "s3://bucket/runs") == {"TENSORBOARD_LOGGING_DIR": "/shared/tb"}


def test_resume_is_automatic_and_the_flags_force_a_side(tmp_path):
    """``decide_resume``: the same command continues when a checkpoint is registered, starts when none is;
    --resume without a checkpoint and --no-resume on an existing run are errors naming the fix."""
    from howeval.training.resume import checkpoint_steps, decide_resume

    snap = json.dumps({"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_0000004"},
                                              {"checkpoint_dir_name": "checkpoint_0000003"}]})
    assert checkpoint_steps(snap) == [3, 4] and checkpoint_steps('{"checkpoint_res') == []
    assert decide_resume("auto", "r", folder_exists=False, steps=[]) is None
    assert decide_resume("auto", "r", folder_exists=True, steps=[]) is None  # killed before its first checkpoint
    assert decide_resume("auto", "r", folder_exists=True, steps=[3, 4]) == 4
    assert decide_resume("resume", "r", folder_exists=True, steps=[3, 4]) == 4
    assert decide_resume("fresh", "r", folder_exists=False, steps=[]) is None
    with pytest.raises(FileNotFoundError, match="drop --resume"):
        decide_resume("resume", "s/r", folder_exists=False, steps=[])
    with pytest.raises(FileExistsError, match=r"checkpoints of steps \[3, 4\].*drop --no-resume"):
        decide_resume("fresh", "s/r", folder_exists=True, steps=[3, 4])


def test_run_state_reads_the_registered_checkpoints(tmp_path):
    from howeval.ray_jobs.train_grpo import run_state

    assert run_state(str(tmp_path), "r") == (False, [])
    (tmp_path / "r").mkdir()
    assert run_state(str(tmp_path), "r") == (False, [])  # an empty folder is no run
    (tmp_path / "r" / "checkpoint_0000002").mkdir()  # a folder alone: written, not registered
    assert run_state(str(tmp_path), "r") == (True, [])
    (tmp_path / "r" / "checkpoint_manager_snapshot.json").write_text(
        json.dumps({"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_0000002"}]}))
    assert run_state(str(tmp_path), "r") == (True, [2])


def test_resume_flag_on_a_run_with_no_checkpoint_fails_before_ray_starts(tmp_path, repo_root):
    from howeval.ray_jobs.train_grpo import config_from_args, parse_args, run

    a = parse_args(["--config", str(repo_root / "configs" / "train" / "smoke.yaml"), "--resume"])
    with pytest.raises(FileNotFoundError, match="no checkpoint to continue from"):
        run(config_from_args(a), storage_path=str(tmp_path), resume=a.resume)


def test_command_line_overrides_reach_the_config(tmp_path, repo_root, monkeypatch):
    """Dot-list overrides (howeval.ray_jobs.sweep's mechanism), --set, and the short forms --data / --max-workers."""
    from howeval.config import ConfigError
    from howeval.ray_jobs.train_grpo import config_from_args, parse_args

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.jsonl").write_text("")
    cfg_file = str(repo_root / "configs" / "train" / "elastic.yaml")
    a = parse_args(["--config", cfg_file, "grpo.report_to=tensorboard", "--data", "mine.jsonl", "--max-workers", "3",
                    "--set", "grpo.save_steps=5", "reward.pattern.p=0.5"])
    assert a.resume is None
    cfg = config_from_args(a)
    assert cfg.data.path == str(tmp_path / "mine.jsonl")  # relative to the current folder, as on the command line
    assert cfg.scaling.max_workers == 3 and cfg.grpo["save_steps"] == 5 and cfg.reward.pattern.p == 0.5
    assert cfg.report_to == ["tensorboard"]
    assert parse_args(["--config", cfg_file, "--no-resume"]).resume is False
    with pytest.raises(ConfigError, match="did you mean 'max_workers'"):
        config_from_args(parse_args(["--config", cfg_file, "scaling.max_worker=3"]))
    with pytest.raises(ConfigError, match="max_workers"):  # min 1 > max 0 is refused like in the file
        config_from_args(parse_args(["--config", cfg_file, "--max-workers", "0"]))


def test_a_missing_training_manifest_names_the_key_and_the_fix(tmp_path, repo_root):
    from howeval.ray_jobs.train_grpo import build_rows_for, config_from_args, parse_args

    cfg = config_from_args(parse_args(["--config", str(repo_root / "configs" / "train" / "smoke.yaml"),
                                       "--data", str(tmp_path / "nope.jsonl")]))
    with pytest.raises(FileNotFoundError, match=r"data.path: training manifest .*nope.jsonl' does not exist. Fix: .*--data"):
        build_rows_for(cfg)


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
    from howeval.ray_jobs.train_grpo import run
    from howeval.rewards.client import RewardClient
    from howeval.training.config import load_train_config
    from howeval.training.rewards import InProcessScorer

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
    with pytest.raises(FileExistsError, match="--no-resume"):
        run(cfg, storage_path=storage, max_steps=3, resume=False)

    second = run(cfg, storage_path=storage, max_steps=3)  # the same call again: resume is automatic
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


@pytest.mark.ray
@pytest.mark.slow
def test_killed_run_continues_when_the_same_command_is_run_again(tmp_path, repo_root):
    """Issue 28, resume by re-apply: the job is killed (SIGKILL to its whole process group, as a lost pod)
    once its first checkpoint is registered; the *same* command line, run again, continues from the latest
    registered checkpoint and finishes with every step logged once."""
    import shutil
    import signal
    import tempfile
    import time

    from howeval.store import read_jsonl
    from howeval.training.resume import checkpoint_steps

    storage = tmp_path / "ckpt"
    run_dir = storage / "grpo-smoke"
    cmd = [sys.executable, "-m", "howeval.ray_jobs.train_grpo", "--config", "configs/train/smoke.yaml", "--storage-path",
           str(storage), "--max-steps", "3", "--model", "embedded:tiny-lm", "reward.source=inprocess",
           "reward.patternrm.kind=rules", "grpo.beta=0.0", "scaling.resources_per_worker.CPU=2"]
    ray_tmp = tempfile.mkdtemp(prefix="ray-rs-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)

    def registered() -> list[int]:
        snap = run_dir / "checkpoint_manager_snapshot.json"
        return checkpoint_steps(snap.read_text()) if snap.exists() else []

    try:
        first = subprocess.Popen(cmd, cwd=repo_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, start_new_session=True)
        deadline = time.time() + 1200
        while not registered() and first.poll() is None and time.time() < deadline:
            time.sleep(1)
        os.killpg(first.pid, signal.SIGKILL)  # the driver, its local Ray cluster and the training worker
        out1 = first.communicate()[0]
        time.sleep(10)  # a registration already in flight when the group died may still land
        steps_at_kill = registered()
        assert steps_at_kill and steps_at_kill[-1] < 3, out1[-3000:]
        assert "no checkpoint, starting from step 0" in out1

        second = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=1500)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out2 = second.stdout + second.stderr
    assert second.returncode == 0, out2[-3000:]
    latest = steps_at_kill[-1]
    lines = [x for x in out2.splitlines() if "[train_grpo] run " in x or "resuming from" in x]
    assert any(f"continuing from its checkpoint of step {latest}" in x for x in lines), lines
    assert any(f"(global step {latest})" in x for x in lines), lines  # what the worker restored
    history = read_jsonl(run_dir / "metrics.jsonl")
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3]  # none lost, none twice


def _pcgrad_smoke(tmp_path, repo_root, *overrides):
    """One GRPO step of the job with ``pcgrad: true`` on the tiny policy; returns (the step line, metrics.jsonl)."""
    import tempfile

    storage = tmp_path / "ckpt"
    cmd = [sys.executable, "-m", "howeval.ray_jobs.train_grpo", "--config", "configs/train/smoke.yaml", "--storage-path",
           str(storage), "--max-steps", "1", "--model", "embedded:tiny-lm", "reward.source=inprocess",
           "reward.patternrm.kind=rules", "reward.pattern.p=1.0", "pcgrad=true", *overrides]
    ray_tmp = tempfile.mkdtemp(prefix="ray-pc-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    try:
        res = subprocess.run(cmd, cwd=repo_root, env=env, capture_output=True, text=True, timeout=1200)
    finally:
        import shutil

        shutil.rmtree(ray_tmp, ignore_errors=True)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    steps = {}
    for x in out.splitlines():  # the step line (Ray may echo a worker's line twice)
        if "[train_grpo] {" in x and '"pcgrad/conflicts"' in x:
            d = json.loads(x.split("[train_grpo] ", 1)[1])
            steps[d["step"]] = d
    assert list(steps) == [1], out[-3000:]
    line = steps[1]
    for key in ("pcgrad/conflicts", "pcgrad/cos_before", "pcgrad/cos_after",
                "rewards/pattern_accuracy/mean", "rewards/pattern_pattern/mean"):
        assert key in line, (key, sorted(line))
    assert line["reward"] == pytest.approx(line["rewards/pattern_accuracy/mean"] + line["rewards/pattern_pattern/mean"])
    # the tiny random policy answers nothing right (every component 0, so no gradient, nothing to project): the
    # projection itself on real TRL steps is tests/cpu/training/test_pcgrad.py's planted conflict
    assert 0 <= line["pcgrad/conflicts"] <= 2 and line["pcgrad/cos_after"] >= min(line["pcgrad/cos_before"], 0.0)
    history = [json.loads(x) for x in open(storage / "grpo-smoke" / "metrics.jsonl")]
    assert any("pcgrad/conflicts" in h for h in history)
    return line, history


@pytest.mark.ray
@pytest.mark.slow
def test_pcgrad_smoke_step_logs_the_projection_per_step(tmp_path, repo_root):
    """Issue 31: a GRPO step with ``pcgrad: true`` through the job (Ray Train + TRL, CPU, the tiny policy): the
    reward's components are TRL reward functions of their own and every step line carries PCGrad's figures."""
    line, _ = _pcgrad_smoke(tmp_path, repo_root, "scaling.resources_per_worker.CPU=2")
    assert line["world_size"] == 1


@pytest.mark.ray
@pytest.mark.slow
def test_pcgrad_smoke_step_with_two_ddp_workers(tmp_path, repo_root):
    """Issue 31: the same step with 2 Ray Train workers (DDP over gloo, as TRL's accelerate sets it up): the
    component forwards under ``no_sync`` and the per-component all_reduce run inside TRL's real training step
    without a DDP error or a hang, and the step line carries PCGrad's figures (the averaging itself:
    tests/cpu/training/test_pcgrad.py::test_two_processes_project_the_averaged_component_gradients_and_agree)."""
    line, _ = _pcgrad_smoke(tmp_path, repo_root, "scaling.num_workers=2", "scaling.resources_per_worker.CPU=1")
    assert line["world_size"] == 2


def test_train_job_refuses_a_bad_config_in_one_line_before_ray(tmp_path, repo_root, capsys):
    """A missing file, broken YAML and a refused combination (pcgrad with DeepSpeed) exit 2 with one ``error:``
    line naming the fix, not a traceback; ``deepspeed: null`` is not DeepSpeed."""
    from howeval.ray_jobs.train_grpo import main

    assert main(["--config", str(tmp_path / "nope.yaml")]) == 2
    assert "error: config file not found" in capsys.readouterr().err
    (tmp_path / "b.yaml").write_text("grpo: {max_steps: 1\n")
    assert main(["--config", str(tmp_path / "b.yaml")]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    smoke = str(repo_root / "configs" / "train" / "smoke.yaml")
    assert main(["--config", smoke, "pcgrad=true", "grpo.deepspeed={zero_optimization: {stage: 2}}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Fix: remove grpo.deepspeed" in err and "Traceback" not in err
