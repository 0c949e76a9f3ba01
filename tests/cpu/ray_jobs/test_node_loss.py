"""A worker node lost mid-sweep: on a simulated 3-node cluster (``ray.cluster_utils.Cluster``, 127.0.0.1),
the node is removed (no graceful drain) once the sweep has written responses; the same run finishes with
every key exactly once in responses and in judgments."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from howeval.records import KEY

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(tmp: Path, repo_root: Path, n: int) -> Path:
    rows = [json.loads(line) for line in (repo_root / "datasets" / "demo" / "manifest.jsonl").open()][:n]
    recorded = tmp / "recorded.jsonl"
    recorded.write_text("".join(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n"
                                for r in rows))
    models = [{"name": f"cfg{i}", "engine": "replay", "options": {"path": str(recorded), "delay_s": 0.3},
               "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 4}}
              for i in range(3)]
    cfg = {"name": "node-loss", "output_uri": str(tmp / "run"),
           "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": n}],
           "models": models, "judges": {"pattern": [{"name": "rules"}], "num_cpus": 0.2}}
    p = tmp / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_worker_node_removed_mid_sweep_loses_and_duplicates_nothing(tmp_path, repo_root):
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # keep 127.0.0.1 (see howeval.ray_jobs.train_elastic)
    import ray.cluster_utils

    n = 12
    cfg = _config(tmp_path, repo_root, n)
    out = tmp_path / "run"
    ray_tmp = tempfile.mkdtemp(prefix="ray-nl-", dir="/tmp")  # short: socket paths must fit in 107 bytes
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "RAY_USAGE_STATS_ENABLED": "0"}
    os.environ["RAY_TMPDIR"] = ray_tmp
    # the head (the driver's node) runs no stage: every engine and judge actor lives on a worker node
    cluster = ray.cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "node_ip_address": "127.0.0.1", "include_dashboard": False, "gcs_server_port": _free_port()})
    try:
        nodes = [cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1") for _ in range(2)]
        cluster.wait_for_nodes()
        env["RAY_ADDRESS"] = "127.0.0.1:" + cluster.address.rsplit(":", 1)[1]
        proc = subprocess.Popen([sys.executable, "-m", "howeval.ray_jobs.sweep", "--config", str(cfg)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=repo_root)
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if len(list((out / "responses").rglob("*.parquet"))) >= 2 if (out / "responses").exists() else False:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before the node could be removed"
        written = len(list((out / "responses").rglob("*.parquet")))
        cluster.remove_node(nodes[0], allow_graceful=False)
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.1")  # a replacement joins, as an autoscaler would
        stdout, _ = proc.communicate(timeout=400)
    finally:
        cluster.shutdown()
        os.environ.pop("RAY_TMPDIR", None)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert proc.returncode == 0, "\n".join(ln for ln in stdout.splitlines() if "[state-dump]" not in ln)[-6000:]
    assert written < 18, f"generation was over when the node went ({written} of 18 batches written)"
    rows = [json.loads(line) for line in (repo_root / "datasets" / "demo" / "manifest.jsonl").open()][:n]
    want = sorted((r["uid"], f"cfg{i}", m) for r in rows for i in range(3) for m in ("NT", "T"))
    responses = pq.read_table(out / "responses").to_pylist()
    judgments = pq.read_table(out / "judgments").to_pylist()
    assert sorted(tuple(r[k] for k in KEY) for r in responses) == want  # 0 lost, 0 duplicated
    assert sorted(tuple(j[k] for k in KEY) for j in judgments) == want
    assert all(r["error"] is None for r in responses) and all(j["judge_error"] is None for j in judgments)
    assert json.loads((out / "failures.json").read_text()) == {}
