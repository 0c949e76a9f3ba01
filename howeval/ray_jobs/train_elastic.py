"""Job: elastic GRPO shown on a simulated multi-node Ray cluster — a node leaves, another joins, training goes on.

    python -m howeval.ray_jobs.train_elastic [--config configs/train/elastic.yaml] [--storage-path runs/train-elastic]
                                     [--steps 8] [--kill-at 2] [--add-at 4] [--model embedded:tiny-lm]
                                     [key.path=value ...]   # passed to train_grpo, e.g. grpo.deepspeed=configs/deepspeed/zero2.json

What it does, all on 127.0.0.1 (``ray.cluster_utils.Cluster``: a head node for the Ray Train controller
and two worker nodes, each with one ``grpo_slot`` so one training worker lands on each):

1. starts ``python -m howeval.ray_jobs.train_grpo`` against that cluster (``RAY_ADDRESS``) with the elastic config
   (``scaling.min_workers: 1, max_workers: 2``, a checkpoint every step);
2. once Ray Train has registered the checkpoint of step ``--kill-at`` (or a later one; read from its
   ``checkpoint_manager_snapshot.json``), removes one worker node without grace (its
   raylet and worker processes are killed, as when a spot node is reclaimed): Ray Train sees the worker
   group fail, and (``FailureConfig``) restarts it on the one node left, from the latest checkpoint;
3. once the shrunk group has written the checkpoint of step ``--add-at``, adds a worker node: the elastic
   scaling policy sees the capacity at its next monitor tick and restarts the group with 2 workers,
   again from the latest checkpoint;
4. waits for the run to finish its steps and checks the per-step metrics (``<run>/metrics.jsonl``,
   written from the final checkpoint's TRL log history): steps 1..N, strictly increasing, none missing.

Output: one line per worker-group resize ``resize  t=<s>  workers <before> -> <after>  resumed from step <k>``,
then ``elastic run done: final step <N>, <R> resizes, steps 1..N present once each`` (exit 0), or the
reason it failed (exit 1). Growing is supported by the installed Ray Train (2.60's ``ElasticScalingPolicy``
resizes a running group when more workers fit); on a Ray without it, the run continues at the shrunk
size and the summary says no grow happened.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

from howeval.store import read_jsonl

START = "[train_grpo] start "


def parse_start(line: str) -> dict | None:
    """The worker-group start record printed by ``train_grpo`` rank 0, or None for any other line.

    Returns ``{"world_size": int, "resumed_from": int | None, "time": float}``.
    """
    if START not in line:
        return None
    return json.loads(line.split(START, 1)[1])


def resizes(starts: list[dict]) -> list[dict]:
    """Worker-group restarts from the ordered start records: each start after the first is one.

    Returns one ``{"time", "before", "after", "resumed_from"}`` per restart (``before == after`` for a
    restart at the same size, e.g. after a failure with no capacity change).
    """
    return [{"time": b["time"], "before": a["world_size"], "after": b["world_size"], "resumed_from": b["resumed_from"]}
            for a, b in zip(starts, starts[1:])]


def check_steps(history: list[dict], steps: int) -> list[int]:
    """Training steps of a TRL log history; raises ValueError unless they are exactly 1..``steps`` once each.

    ``history`` is ``trainer_state.json``'s ``log_history`` (one entry per logged step with ``step``; the
    final summary entry has ``train_runtime`` and is ignored).
    """
    got = [int(h["step"]) for h in history if "train_runtime" not in h and "step" in h]
    if got != list(range(1, steps + 1)):
        missing = sorted(set(range(1, steps + 1)) - set(got))
        dup = sorted({s for s in got if got.count(s) > 1})
        raise ValueError(f"per-step metrics are not steps 1..{steps} once each: got {got} (missing {missing}, twice {dup})")
    return got


def committed_steps(run_dir: Path) -> list[int]:
    """Steps whose checkpoint Ray Train has registered: ``checkpoint_<step>`` names in the controller's
    ``checkpoint_manager_snapshot.json``, sorted. A ``checkpoint_*`` folder alone is not enough: a worker
    writes it before the controller registers it, and a node lost in between leaves the run resuming from
    an older one. Returns ``[]`` while the snapshot is absent or being rewritten (not valid JSON yet)."""
    try:
        snap = json.loads((run_dir / "checkpoint_manager_snapshot.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return []
    names = [c.get("checkpoint_dir_name", "") for c in snap.get("checkpoint_results", [])]
    return sorted(int(n.rsplit("_", 1)[1]) for n in names if n.rsplit("_", 1)[-1].isdigit())


def _reader(proc: subprocess.Popen, lines: queue.Queue) -> None:
    for line in proc.stdout:
        lines.put(line)
    lines.put(None)


def run_elastic(config: str, storage: str, steps: int, kill_at: int, add_at: int, timeout_s: float,
                verbose: bool = False, model: str | None = None, overrides: list[str] | None = None) -> dict:
    """Run the scenario above; returns ``{"final_step", "resizes": [...], "steps": [...], "grew": bool}``.

    ``model`` overrides the config's policy (``train_grpo --model``), e.g. ``embedded:tiny-lm``; ``overrides``
    are dot-list items passed on to ``train_grpo`` (e.g. ``grpo.deepspeed=configs/deepspeed/zero2.json``: a
    ZeRO-2 run resized through a universal checkpoint).

    Raises:
        RuntimeError: the training process failed, timed out, or never shrank.
        ValueError: the per-step metrics have a missing or repeated step.
    """
    # Everything stays on 127.0.0.1: Ray otherwise rewrites a loopback address to the machine's first
    # interface (``resolve_ip_for_localhost``), where this cluster does not listen. Set before Ray is imported.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray.cluster_utils

    if not 0 < kill_at < add_at < steps:
        raise ValueError(f"need 0 < --kill-at ({kill_at}) < --add-at ({add_at}) < --steps ({steps})")
    storage = os.path.abspath(storage)
    from howeval.training.config import load_train_config

    cfg = load_train_config(config, dotlist=overrides or ())
    run_dir = Path(storage) / cfg.run_name
    if run_dir.exists():
        raise FileExistsError(f"{run_dir} exists: remove it or pass another --storage-path")

    cluster = ray.cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False})
    nodes = [cluster.add_node(num_cpus=1, resources={"grpo_slot": 1}, node_ip_address="127.0.0.1") for _ in range(2)]
    cluster.wait_for_nodes()
    address = "127.0.0.1:" + cluster.address.rsplit(":", 1)[1]
    env = {**os.environ, "RAY_ADDRESS": address, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "howeval.ray_jobs.train_grpo", "--config", config, "--storage-path", storage,
           "--max-steps", str(steps)] + (["--model", model] if model else []) + list(overrides or [])
    t0 = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc, lines), daemon=True).start()
    starts, removed, added, tail = [], False, False, []
    try:
        while True:
            if time.time() - t0 > timeout_s:
                raise RuntimeError(f"elastic run did not finish in {timeout_s:.0f} s; last output:\n" + "".join(tail[-20:]))
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if line:
                tail = (tail + [line])[-50:]
                if verbose:
                    print(line, end="", flush=True)
                rec = parse_start(line)
                # on a one-machine cluster every node's log monitor tails the same worker logs: drop repeats
                if rec is not None and rec not in starts:
                    starts.append(rec)
                    if len(starts) > 1:
                        r = resizes(starts)[-1]
                        print(f"resize  t={r['time'] - t0:6.1f}s  workers {r['before']} -> {r['after']}  "
                              f"resumed from step {r['resumed_from']}", flush=True)
            done = committed_steps(run_dir)  # [] while the snapshot is being rewritten: the next tick acts
            cur = starts[-1]["world_size"] if starts else None
            if not removed and cur == 2 and done and done[-1] >= kill_at:
                print(f"event   t={time.time() - t0:6.1f}s  removing worker node {nodes[1].node_id[:8]} "
                      f"(latest checkpoint: step {done[-1]})", flush=True)
                cluster.remove_node(nodes[1], allow_graceful=False)
                removed = True
            if removed and not added and cur == 1 and done and done[-1] >= add_at:
                print(f"event   t={time.time() - t0:6.1f}s  adding a worker node (latest checkpoint: step {done[-1]})",
                      flush=True)
                nodes.append(cluster.add_node(num_cpus=1, resources={"grpo_slot": 1}, node_ip_address="127.0.0.1"))
                added = True
        rc = proc.wait()
        if rc != 0:
            raise RuntimeError(f"train_grpo exited {rc}; last output:\n" + "".join(tail[-30:]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        cluster.shutdown()
    rs = resizes(starts)
    if not any(r["after"] < r["before"] for r in rs):
        raise RuntimeError(f"the worker group never shrank (starts: {starts}); was a node removed? {removed}")
    history = read_jsonl(run_dir / "metrics.jsonl")
    got = check_steps(history, steps)
    return {"final_step": got[-1], "resizes": rs, "steps": got, "grew": any(r["after"] > r["before"] for r in rs),
            "seconds": time.time() - t0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m howeval.ray_jobs.train_elastic", description=__doc__.split("\n")[0])
    p.add_argument("--config", default="configs/train/elastic.yaml", help="an elastic training config (min/max workers)")
    p.add_argument("--storage-path", default="runs/train-elastic", help="checkpoint storage (must not hold this run yet)")
    p.add_argument("--steps", type=int, default=8, help="GRPO steps to finish")
    p.add_argument("--kill-at", type=int, default=2, help="remove a worker node once this step's checkpoint exists")
    p.add_argument("--add-at", type=int, default=4, help="add a worker node once the shrunk group checkpointed this step")
    p.add_argument("--timeout-s", type=float, default=1200, help="give up after this many seconds")
    p.add_argument("--model", help="override the config's policy (a folder, or embedded:tiny-lm)")
    p.add_argument("--verbose", action="store_true", help="echo the training job's output")
    p.add_argument("overrides", nargs="*", metavar="KEY.PATH=VALUE",
                   help="config overrides passed to train_grpo, e.g. grpo.deepspeed=configs/deepspeed/zero2.json")
    a = p.parse_intermixed_args(argv)
    try:
        res = run_elastic(a.config, a.storage_path, a.steps, a.kill_at, a.add_at, a.timeout_s, a.verbose, a.model,
                          a.overrides)
    except (RuntimeError, ValueError, FileExistsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    grew = "" if res["grew"] else " (no grow: the group stayed at the shrunk size)"
    print(f"elastic run done: final step {res['final_step']}, {len(res['resizes'])} resizes, "
          f"steps 1..{res['final_step']} present once each, {res['seconds']:.0f} s{grew}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
