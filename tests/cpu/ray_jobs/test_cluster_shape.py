"""The Ray-reading half of the cluster-shape preflight (``howeval.runtime.cluster.cluster_node_shapes``) on a real local
Ray, with the autoscaler's cluster config written where KubeRay's autoscaler v2 reports it (the GCS internal KV
that ``ray._private.state.state.get_cluster_config()`` reads), and the sweep driver refusing what fits no node."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.ray


@pytest.fixture
def local_ray(tmp_path, monkeypatch):
    import ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if ray.is_initialized():  # a sweep run earlier in this process leaves its local Ray up (init_ray joins it)
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _report_node_groups(groups: list[tuple[str, dict, int]]) -> None:
    """Write an autoscaler ``ClusterConfig`` with these (name, resources, max_count) node groups to the GCS."""
    import ray._raylet as raylet
    from ray.core.generated import autoscaler_pb2
    from ray.experimental.internal_kv import _internal_kv_put

    cfg = autoscaler_pb2.ClusterConfig()
    for name, res, max_count in groups:
        g = cfg.node_group_configs.add(name=name, max_count=max_count, min_count=0)
        for k, v in res.items():
            g.resources[k] = v
    _internal_kv_put(raylet.GCS_AUTOSCALER_CLUSTER_CONFIG_KEY.encode(), cfg.SerializeToString(), overwrite=True,
                     namespace=raylet.GCS_AUTOSCALER_STATE_NAMESPACE.encode())


def test_alive_nodes_and_the_autoscalers_node_groups_are_the_shapes(local_ray):
    from howeval.runtime.cluster import cluster_node_shapes

    shapes = cluster_node_shapes()
    assert len(shapes) == 1 and shapes[0]["CPU"] == 2.0 and "GPU" not in shapes[0]  # no autoscaler: this node
    _report_node_groups([("gpu", {"CPU": 44, "GPU": 4}, 2), ("off", {"CPU": 8, "GPU": 8}, 0)])
    shapes = cluster_node_shapes()
    assert shapes[1:] == [{"CPU": 44.0, "GPU": 4.0}], "a group at max_count 0 can never start a node"


def test_the_sweep_refuses_a_tp8_config_on_4_gpu_nodes_before_generating(local_ray, tmp_path, repo_root):
    """``run_sweep`` on a cluster whose GPU group has 4-GPU nodes: the TP-8 config is refused (ConfigError
    naming it) before any actor is built, instead of pending forever."""
    from howeval.config import ConfigError, SweepConfig
    from howeval.ray_jobs.sweep import run_sweep

    bench = repo_root / "datasets" / "demo" / "manifest.jsonl"
    cfg = SweepConfig.model_validate({
        "output_uri": str(tmp_path / "out"), "benchmarks": [{"path": str(bench)}],
        "models": [{"name": "big", "engine": "vllm", "model": "/models/big", "modes": {"NT": {}},
                    "options": {"tensor_parallel_size": 8}, "resources": {"num_gpus": 8, "num_cpus": 16}}]})
    _report_node_groups([("gpu", {"CPU": 44, "GPU": 4}, 2)])
    with pytest.raises(ConfigError, match=r"models.0 \(config 'big'\): one replica needs 8 GPUs, 16 CPUs on one node, "
                                          r"but the largest node of this cluster offers 4 GPUs, 44 CPUs"):
        run_sweep(cfg)
    assert not (tmp_path / "out" / "responses").exists(), "nothing was generated"
