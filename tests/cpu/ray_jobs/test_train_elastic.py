"""Elastic GRPO: the resize bookkeeping by hand, and a real run on a simulated 3-node cluster (slow)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from howeval.ray_jobs.train_elastic import check_steps, committed_steps, parse_start, resizes

REPO = Path(__file__).resolve().parents[3]


def test_parse_start_reads_only_start_lines():
    line = '(RayTrainWorker pid=1) [train_grpo] start {"world_size": 2, "resumed_from": null, "time": 5.0}\n'
    assert parse_start(line) == {"world_size": 2, "resumed_from": None, "time": 5.0}
    assert parse_start('[train_grpo] {"step": 3, "world_size": 1}') is None
    assert parse_start("INFO something else") is None


def test_resizes_pairs_consecutive_starts():
    starts = [{"world_size": 2, "resumed_from": None, "time": 1.0},
              {"world_size": 1, "resumed_from": 2, "time": 9.0},
              {"world_size": 2, "resumed_from": 4, "time": 20.0}]
    assert resizes(starts) == [{"time": 9.0, "before": 2, "after": 1, "resumed_from": 2},
                               {"time": 20.0, "before": 1, "after": 2, "resumed_from": 4}]
    assert resizes(starts[:1]) == []


def test_check_steps_accepts_exactly_one_of_each():
    hist = [{"step": 1, "loss": 0.1}, {"step": 2}, {"step": 3}, {"step": 3, "train_runtime": 9.0}]
    assert check_steps(hist, 3) == [1, 2, 3]
    with pytest.raises(ValueError, match=r"missing \[2\]"):
        check_steps([{"step": 1}, {"step": 3}], 3)
    with pytest.raises(ValueError, match=r"twice \[2\]"):
        check_steps([{"step": 1}, {"step": 2}, {"step": 2}, {"step": 3}], 3)


def test_committed_steps_reads_the_controller_snapshot_not_the_folders(tmp_path):
    (tmp_path / "checkpoint_0000003").mkdir()  # written by a worker, not registered yet
    assert committed_steps(tmp_path) == []
    snap = {"ray_version": "2.60.0", "checkpoint_results": [
        {"version": 0, "checkpoint_dir_name": "checkpoint_0000002", "metrics": {"step": 2}},
        {"version": 0, "checkpoint_dir_name": "checkpoint_0000001", "metrics": {"step": 1}}]}
    (tmp_path / "checkpoint_manager_snapshot.json").write_text(json.dumps(snap))
    assert committed_steps(tmp_path) == [1, 2]
    (tmp_path / "checkpoint_manager_snapshot.json").write_text('{"checkpoint_results": [')  # mid-rewrite
    assert committed_steps(tmp_path) == []


@pytest.mark.ray
@pytest.mark.slow
def test_elastic_run_shrinks_continues_and_keeps_every_step_once(tmp_path):
    """A worker node is removed after step 2's checkpoint and one is added after step 4: the run ends at 6.

    Checked on the job's own output and on ``metrics.jsonl`` (the final checkpoint's TRL log history):
    one shrink 2 -> 1 that resumed from a checkpoint, steps 1..6 each exactly once.
    """
    storage = tmp_path / "train"
    # Ray's own temp folder must stay short: its socket paths have to fit in 107 bytes (pytest's tmp_path does not)
    ray_tmp = tempfile.mkdtemp(prefix="ray-el-", dir="/tmp")
    scratch = tmp_path / "scratch"  # the workers' TRL folders (TMPDIR): a killed worker's is left there, not in /tmp
    scratch.mkdir()
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "TMPDIR": str(scratch), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.run([sys.executable, "-m", "howeval.ray_jobs.train_elastic", "--storage-path", str(storage),
                               "--steps", "6", "--kill-at", "2", "--add-at", "4", "--timeout-s", "1500",
                               "--model", "embedded:tiny-lm"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-3000:]
    lines = [x for x in out.splitlines() if x.startswith("resize ")]
    shrinks = [x for x in lines if "workers 2 -> 1" in x]
    assert shrinks, out[-3000:]
    resumed = int(shrinks[0].rsplit("resumed from step ", 1)[1])
    removal = [x for x in out.splitlines() if x.startswith("event") and "removing worker node" in x]
    latest = int(removal[0].rsplit("latest checkpoint: step ", 1)[1].rstrip(")"))
    # resumed from the checkpoint registered when the node went, or a later one: the workers train on until the
    # node is gone, so the next step's checkpoint can land between this line and the kill (no step is lost)
    assert 2 <= latest <= resumed < 6
    assert not list(scratch.glob("howeval-grpo-*/rank*"))  # every worker's TRL folder removed (the killed one's too)
    assert "elastic run done: final step 6" in out
    history = [json.loads(x) for x in (storage / "grpo-elastic" / "metrics.jsonl").read_text().splitlines() if x.strip()]
    steps = [h["step"] for h in history if "train_runtime" not in h]
    assert steps == [1, 2, 3, 4, 5, 6]
