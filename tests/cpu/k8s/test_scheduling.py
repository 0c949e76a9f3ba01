"""Scheduling check: what each overlay's workloads request fits the node shape of its ``hardware.yaml``.

Two levels, both from the rendered manifests (``k8s/rendered/<overlay>.yaml``):

- **Kubernetes**: every pod that must run at once (Ray heads with their autoscaler sidecar, the worker pods a
  workload needs, the RayJob submitter, Redis, the KubeRay operator) is placed first-fit-decreasing on
  ``node.count`` nodes of ``node.gpus`` GPUs, ``node.cpu`` CPUs and ``node.memory`` bytes, by pod *requests*
  (what the scheduler reserves). Worker groups count at the replicas the workload needs, never above
  ``maxReplicas``.
- **Ray**: the GRPO job's ``max_workers`` Ray Train workers (``resources_per_worker`` each) plus its driver
  (``entrypointNumCpus``) pack into its GPU worker pods; the reward endpoint's Serve replicas at
  ``min_replicas`` pack into its CPU worker pods (which sets how many CPU pods it needs).

Workloads: ``patternrl`` = Redis + the LLM verifier (vLLM, one GPU) + the reward RayService + the GRPO RayJob
at the same time; ``sweep`` =
Redis + the sweep RayJob (GPU pods at ``maxReplicas``); ``cluster`` = Redis + the RayCluster at ``maxReplicas``.
"""
from __future__ import annotations

import math

import pytest
import yaml

from kube import OVERLAYS, cluster_spec, hardware_values, load_rendered, quantity

# KubeRay v1.7.0 defaults (ray-operator/controllers/ray/common/job.go: the submitter container requests
# 500m / 200Mi) and the kuberay-operator chart's resources (values.yaml: 100m / 512Mi).
SUBMITTER = {"cpu": 0.5, "memory": 200 * 2**20, "gpu": 0.0}
OPERATOR = {"cpu": 0.1, "memory": 512 * 2**20, "gpu": 0.0}


def pod_request(container_resources: dict) -> dict:
    """``{"cpu": CPUs, "memory": bytes, "gpu": devices}`` of one container's requests (limits if none)."""
    r = container_resources.get("requests") or container_resources.get("limits") or {}
    return {"cpu": quantity(r.get("cpu", 0)), "memory": quantity(r.get("memory", 0)),
            "gpu": quantity(r.get("nvidia.com/gpu", 0))}


def add(*reqs: dict) -> dict:
    return {k: sum(r[k] for r in reqs) for k in ("cpu", "memory", "gpu")}


def head_pod(doc: dict) -> dict:
    spec = cluster_spec(doc)
    head = pod_request(spec["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"])
    sidecar = pod_request(spec["autoscalerOptions"]["resources"]) if spec.get("enableInTreeAutoscaling") else add()
    return add(head, sidecar)


def group(doc: dict, name: str) -> tuple[dict, dict]:
    """(worker group, its pod's request)."""
    g = [w for w in cluster_spec(doc)["workerGroupSpecs"] if w["groupName"] == name][0]
    return g, pod_request(g["template"]["spec"]["containers"][0]["resources"])


def pack_items(items: list[dict], bins: list[dict]) -> list[int] | None:
    """First-fit decreasing of ``items`` into ``bins`` (dicts of capacities); the bin index of each item in
    the original order, or None when one does not fit."""
    free = [dict(b) for b in bins]
    where = [None] * len(items)
    for i in sorted(range(len(items)), key=lambda i: (-items[i].get("gpu", 0), -items[i]["cpu"], -items[i].get("memory", 0))):
        for j, f in enumerate(free):
            if all(items[i].get(k, 0) <= f.get(k, 0) + 1e-9 for k in items[i]):
                for k in items[i]:
                    f[k] -= items[i][k]
                where[i] = j
                break
        else:
            return None
    return where


def grpo_gpu_pods(doc: dict, repo_root) -> tuple[int, dict]:
    """GPU-group pods the GRPO job needs for max_workers Ray Train workers + its driver, and the Ray-level plan."""
    import shlex

    from howeval.ray_jobs.train_grpo import config_from_args, parse_args

    argv = shlex.split(doc["spec"]["entrypoint"])[3:]  # what the job runs: the file plus the entrypoint's flags
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo_root)
        cfg = config_from_args(parse_args(argv))
    g, pod = group(doc, "gpu")
    per_worker = {"cpu": 0.0, "gpu": 0.0}
    for k, v in (cfg.scaling.resources_per_worker or {"CPU": 1}).items():
        per_worker[{"CPU": "cpu", "GPU": "gpu"}[k]] = v
    if cfg.scaling.use_gpu:
        per_worker["gpu"] = max(per_worker["gpu"], 1.0)
    n = cfg.scaling.max_workers or cfg.scaling.num_workers
    driver = {"cpu": float(doc["spec"].get("entrypointNumCpus", 0)), "gpu": 0.0}
    for pods in range(1, g["maxReplicas"] + 1):
        if pack_items([driver] + [per_worker] * n, [{"cpu": pod["cpu"], "gpu": pod["gpu"]}] * pods) is not None:
            return pods, {"workers": n, "per_worker": per_worker, "pods": pods}
    raise AssertionError(f"{n} workers of {per_worker} + driver {driver} do not fit {g['maxReplicas']} pods of {pod}")


def serve_cpu_pods(doc: dict) -> int:
    """CPU-group pods the RayService needs for every deployment at min_replicas (num_cpus per replica)."""
    cfg = yaml.safe_load(doc["spec"]["serveConfigV2"])
    replicas = []
    for app in cfg["applications"]:
        for d in app["deployments"]:
            n = (d.get("autoscaling_config") or {}).get("min_replicas", d.get("num_replicas", 1))
            opts = d.get("ray_actor_options") or {}
            assert not opts.get("num_gpus"), f"{d['name']} asks for a GPU"
            replicas += [{"cpu": float(opts.get("num_cpus", 1))}] * n
    g, pod = group(doc, "cpu")
    for pods in range(max(1, g["minReplicas"]), g["maxReplicas"] + 1):
        if pack_items(replicas, [{"cpu": pod["cpu"]}] * pods) is not None:
            return pods
    raise AssertionError(f"Serve replicas {replicas} do not fit {g['maxReplicas']} CPU pods of {pod}")


def workload_pods(overlay: str, workload: str, repo_root) -> list[tuple[str, dict]]:
    docs = {d["metadata"]["name"]: d for d in load_rendered(overlay) if d["kind"] != "Service"}
    redis = docs["howeval-redis"]["spec"]["template"]["spec"]["containers"][0]["resources"]
    pods = [("operator", OPERATOR), ("redis", pod_request(redis))]
    if workload == "patternrl":
        svc, job = docs["patternrm-reward"], docs["patternrl-grpo"]
        pods += [("reward/head", head_pod(svc))]
        pods += [(f"reward/cpu-{i}", group(svc, "cpu")[1]) for i in range(serve_cpu_pods(svc))]
        verifier = docs["verifier-vllm"]
        pods += [(f"verifier/{i}", pod_request(verifier["spec"]["template"]["spec"]["containers"][0]["resources"]))
                 for i in range(verifier["spec"]["replicas"])]
        n_gpu, _ = grpo_gpu_pods(job, repo_root)
        pods += [("grpo/head", head_pod(job)), ("grpo/submitter", SUBMITTER)]
        pods += [(f"grpo/gpu-{i}", group(job, "gpu")[1]) for i in range(n_gpu)]
        g, cpu = group(job, "cpu")
        pods += [(f"grpo/cpu-{i}", cpu) for i in range(g["minReplicas"])]
    else:
        name = {"sweep": "patterneval-25", "cluster": "howeval"}[workload]
        doc = docs[name]
        pods += [(f"{workload}/head", head_pod(doc))] + ([(f"{workload}/submitter", SUBMITTER)] if workload == "sweep" else [])
        g, cpu = group(doc, "cpu")
        pods += [(f"{workload}/cpu-{i}", cpu) for i in range(max(1, g["minReplicas"]))]
        g, gpu = group(doc, "gpu")
        pods += [(f"{workload}/gpu-{i}", gpu) for i in range(g["maxReplicas"])]
    return pods


def nodes(overlay: str) -> list[dict]:
    n = hardware_values(overlay)["node"]
    return [{"cpu": float(n["cpu"]), "memory": quantity(n["memory"]), "gpu": float(n["gpus"])}] * n["count"]


@pytest.mark.parametrize("workload", ["patternrl", "sweep", "cluster"])
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_workload_fits_the_node_shape(overlay, workload, repo_root):
    pods = workload_pods(overlay, workload, repo_root)
    where = pack_items([p for _, p in pods], nodes(overlay))
    total = add(*[p for _, p in pods])
    assert where is not None, (
        f"{overlay}/{workload} does not fit {nodes(overlay)}: requests total {total}; pods {pods}")


@pytest.mark.parametrize("overlay,train_gpus,verifier_gpus", [("1x8", 7, 1), ("2x4", 6, 1), ("cpu-smoke", 0, 0)])
def test_patternrl_the_verifier_and_the_reward_endpoint_share_the_gpus(overlay, train_gpus, verifier_gpus, repo_root):
    """The 8-GPU accounting: training workers + the verifier's GPU <= the GPUs of the overlay; on 1x8 all 8
    are used (7 + 1); on 2x4 the 8th idles (a 4-GPU training pod does not fit beside the verifier)."""
    pods = dict(workload_pods(overlay, "patternrl", repo_root))
    reward = add(*[p for n, p in pods.items() if n.startswith("reward/")])
    grpo = add(*[p for n, p in pods.items() if n.startswith("grpo/")])
    verifier = add(*[p for n, p in pods.items() if n.startswith("verifier/")])
    assert reward["gpu"] == 0, "PatternRM runs on CPU: the reward endpoint holds no GPU"
    assert grpo["gpu"] == train_gpus and verifier["gpu"] == verifier_gpus
    hw = hardware_values(overlay)
    assert train_gpus + verifier_gpus <= hw["node"]["gpus"] * hw["node"]["count"]
    docs = {d["metadata"]["name"]: d for d in load_rendered(overlay) if d["kind"] != "Service"}
    _, plan = grpo_gpu_pods(docs["patternrl-grpo"], repo_root)
    if train_gpus:
        assert plan["workers"] == train_gpus and plan["per_worker"]["gpu"] == 1, plan


def test_the_verifier_does_not_fit_beside_8_training_gpus_on_1x8(repo_root):
    """Negative control: the verifier's GPU is counted; with the GRPO pod at the node's 8 GPUs it would stay
    Pending (why the overlay gives training 7)."""
    pods = workload_pods("1x8", "patternrl", repo_root)
    eight = [(n, {**p, "gpu": 8.0}) if n.startswith("grpo/gpu-") else (n, p) for n, p in pods]
    assert pack_items([p for _, p in pods], nodes("1x8")) is not None
    assert pack_items([p for _, p in eight], nodes("1x8")) is None


def test_the_old_layout_did_not_fit_one_8_gpu_node(repo_root):
    """Negative control (issue 24): PatternRM on its own 1-GPU pod beside an 8-GPU training pod needs 9 GPUs."""
    pods = [p for _, p in workload_pods("1x8", "patternrl", repo_root)]
    assert pack_items(pods, nodes("1x8")) is not None
    old_reward_gpu_pod = {"cpu": 12.0, "memory": 160 * 2**30, "gpu": 1.0}
    assert pack_items(pods + [old_reward_gpu_pod], nodes("1x8")) is None


def test_2x4_needs_both_nodes_for_patternrl(repo_root):
    pods = workload_pods("2x4", "patternrl", repo_root)
    gpu_pods = [p for n, p in pods if n.startswith("grpo/gpu-")]
    assert len(gpu_pods) == 2 and all(p["gpu"] == 3 for p in gpu_pods)
    assert pack_items([p for _, p in pods], nodes("2x4")[:1]) is None, "one 4-GPU node is not enough"


def test_pack_items_first_fit_decreasing():
    assert pack_items([{"cpu": 1, "gpu": 0}, {"cpu": 2, "gpu": 1}], [{"cpu": 2, "gpu": 1}, {"cpu": 2, "gpu": 0}]) == [1, 0]
    assert pack_items([{"cpu": 3}], [{"cpu": 2}, {"cpu": 2}]) is None
    assert math.isclose(pod_request({"requests": {"cpu": "500m", "memory": "1Gi"}})["memory"], 2**30)
