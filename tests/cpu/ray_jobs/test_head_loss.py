"""A head lost mid-sweep (issue 40): the sweep is submitted to a local ``ray start --head`` with token auth and a
``working_dir`` (as KubeRay's submitter does with the RayJob's ``runtimeEnvYAML``), the head's whole process tree
is killed once rows are written and the paid judge is being called, a new head (a new cluster: another session,
other ports) is started over the same output folder, and the same entrypoint is submitted again. It must finish
with every expected row once (the counting of ``make cluster-smoke``: ``k8s/image/cluster_smoke.py``
``count_rows``) and no judge answer paid twice (its ``MeteredJudge``: calls after the loss checked against the
answers the run's write-ahead judge cache had stored). Also: the job API refuses a submission without the token.

The engine is ``replay`` (recorded answers, no model) so the test stays near a minute of Ray start-ups.
"""
from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.ray]


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _smoke(repo_root: Path):
    spec = importlib.util.spec_from_file_location("k8s_image_cluster_smoke", repo_root / "k8s" / "image" / "cluster_smoke.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Head:
    """``ray start --head --block`` on 127.0.0.1 with its own temp dir and ports (a one-node cluster: 2 CPUs)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.temp = tempfile.mkdtemp(prefix="ray-hl-", dir="/tmp")  # short: socket paths must fit in 107 bytes
        gcs, dash, nm, om, agent, agent_grpc, rt_env, metrics, client, lo = _free_ports(10)
        self.dashboard = f"http://127.0.0.1:{dash}"
        ray = str(Path(sys.executable).parent / "ray")
        self.proc = subprocess.Popen(
            [ray, "start", "--head", "--block", f"--temp-dir={self.temp}", "--node-ip-address=127.0.0.1",
             f"--port={gcs}", "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", f"--node-manager-port={nm}",
             f"--object-manager-port={om}", f"--dashboard-agent-listen-port={agent}",
             f"--dashboard-agent-grpc-port={agent_grpc}", f"--runtime-env-agent-port={rt_env}",
             f"--metrics-export-port={metrics}", f"--ray-client-server-port={client}", "--num-cpus=2",
             "--disable-usage-stats"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.env = env

    def ray(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(Path(sys.executable).parent / "ray"), *args], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def wait_up(self, timeout: float = 120) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            assert self.proc.poll() is None, "ray start exited"
            if self.ray("job", "list", "--address", self.dashboard, timeout=60).returncode == 0:
                return
            time.sleep(1)
        raise AssertionError(f"the head at {self.dashboard} did not answer in {timeout} s")

    def status(self, sub_id: str) -> str:
        code = ("import sys; from ray.job_submission import JobSubmissionClient as C; "
                "print(C(sys.argv[1]).get_job_status(sys.argv[2]).value)")
        out = subprocess.run([sys.executable, "-c", code, self.dashboard, sub_id], env=self.env, capture_output=True,
                             text=True, timeout=60).stdout.split()
        return out[-1] if out else "UNKNOWN"

    def kill(self) -> None:
        """The head lost: its whole process tree (GCS, raylet, dashboard, the job's driver and workers) SIGKILLed."""
        import psutil

        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for p in procs:
            try:
                p.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(procs, timeout=30)
        self.proc.wait(timeout=30)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        shutil.rmtree(self.temp, ignore_errors=True)


def _job_folder(tmp: Path, repo_root: Path, n: int) -> Path:
    """What the job uploads as its working_dir: a config, a manifest of n demo rows with their images, and
    recorded answers for the replay engine; every path in the config relative (to the config file, the cwd)."""
    work = tmp / "job"
    data = work / "data"
    (data / "images").mkdir(parents=True)
    demo = repo_root / "datasets" / "demo"
    rows = [json.loads(line) for line in (demo / "manifest.jsonl").open()][:n]
    for r in rows:
        shutil.copy(demo / r["image"], data / r["image"])
    (data / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (data / "recorded.jsonl").write_text("".join(
        json.dumps({"sample_id": r["uid"], "response": f"Let me count. The answer is \\boxed{{{r['answer']}}}."}) + "\n"
        for r in rows))
    cfg = {"name": "head-loss", "output_uri": "runs/head-loss",  # replaced by --output
           "benchmarks": [{"path": "data/manifest.jsonl", "name": "demo"}],
           "models": [{"name": "replayed", "engine": "replay", "options": {"path": "data/recorded.jsonl", "delay_s": 0.2},
                       "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 2}}],
           "judges": {"pattern": [
               {"name": "rules", "kind": "rules"},
               {"name": "metered", "kind": "llm", "with_image": False,
                "llm": {"model": "metered-judge", "max_tokens": 64,
                        "options": {"base_url_env": "SMOKE_JUDGE_URL", "api_key_env": "SMOKE_JUDGE_KEY",
                                    "max_concurrency": 2}}}],
               "num_cpus": 0.2},
           "ray": {"num_cpus": 2}}
    (work / "sweep.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return work


def test_head_lost_mid_sweep_new_cluster_same_entrypoint_loses_duplicates_and_repays_nothing(tmp_path, repo_root):
    smoke = _smoke(repo_root)
    n = 4
    work = _job_folder(tmp_path, repo_root, n)
    out = tmp_path / "run"
    judge = smoke.MeteredJudge(latency_s=0.5)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32), RAY_USAGE_STATS_ENABLED="0",
               RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S="0")
    runtime_env = json.dumps({"working_dir": str(work), "env_vars": {
        "SMOKE_JUDGE_URL": judge.base_url, "SMOKE_JUDGE_KEY": "k", "PYTHONUNBUFFERED": "1"}})
    entrypoint = [sys.executable, "-m", "howeval.ray_jobs.sweep", "--config", "sweep.yaml", "--output", str(out)]
    heads: list[Head] = []
    try:
        first = Head(env)
        heads.append(first)
        first.wait_up()
        # a stranger's submission (no token) is refused and runs nothing
        req = urllib.request.Request(f"{first.dashboard}/api/jobs/", method="POST",
                                     data=json.dumps({"entrypoint": f"touch {tmp_path / 'intruder'}"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        assert refused.value.code == 401

        sub = first.ray("job", "submit", "--address", first.dashboard, "--submission-id", "sweep-1", "--no-wait",
                        "--runtime-env-json", runtime_env, "--", *entrypoint)
        assert sub.returncode == 0, sub.stderr[-3000:]
        t0 = time.time()
        while not (judge.calls and (out / "responses").exists() and any((out / "responses").rglob("*.parquet"))):
            assert first.status("sweep-1") in ("PENDING", "RUNNING"), first.ray(
                "job", "logs", "--address", first.dashboard, "sweep-1").stdout[-3000:]
            assert time.time() - t0 < 240, "no rows and judge calls within 240 s"
            time.sleep(0.2)
        time.sleep(1.0)  # some answers stored, others in flight
        assert first.status("sweep-1") == "RUNNING", "the sweep ended before the head could be lost"
        first.kill()
        calls_before = len(judge.calls)
        stored = smoke.MeteredJudge.stored_calls(out / "judge_cache")
        assert stored, "the judge cache held no answer at the loss: the loss came too early to test re-payment"

        second = Head(env)  # a new cluster over the same output folder
        heads.append(second)
        second.wait_up()
        sub = second.ray("job", "submit", "--address", second.dashboard, "--submission-id", "sweep-2", "--no-wait",
                         "--runtime-env-json", runtime_env, "--", *entrypoint)
        assert sub.returncode == 0, sub.stderr[-3000:]
        t0 = time.time()
        while (status := second.status("sweep-2")) not in ("SUCCEEDED", "FAILED", "STOPPED"):
            assert time.time() - t0 < 300, "the re-submitted sweep did not finish in 300 s"
            time.sleep(1)
        logs = second.ray("job", "logs", "--address", second.dashboard, "sweep-2").stdout
        assert status == "SUCCEEDED", logs[-4000:]
    finally:
        for h in heads:
            h.close()
        judge.close()

    samples, required = smoke.expected_samples(str(work / "sweep.yaml"), n)
    counts = smoke.count_rows(smoke.read_tables(out), samples, required)
    assert set(counts["tables"]) == {"responses", "judgments", "samples"}
    assert (counts["lost"], counts["duplicated"], counts["unexpected"]) == (0, 0, 0), counts["tables"]
    assert counts["tables"]["judgments"]["rows"] == n * 2 * 2  # 2 modes x 2 judges
    assert judge.paid_twice(stored, calls_before) == 0, (judge.calls, stored, calls_before)
    assert len(judge.calls) >= n * 2  # every response judged by the metered judge at least once
