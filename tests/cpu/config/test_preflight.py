"""Fail-fast checks before Ray starts (howeval.config.preflight): each problem names the key and the fix."""
from __future__ import annotations

import pytest

from howeval.config import ConfigError, SweepConfig, preflight, require_ready
from howeval.config.preflight import check_endpoint


def _cfg(tmp_path, models, benchmarks=None, judges=None) -> SweepConfig:
    bench = tmp_path / "m.jsonl"
    bench.write_text("")
    raw = {"output_uri": str(tmp_path / "out"), "benchmarks": benchmarks or [{"path": str(bench)}], "models": models}
    if judges is not None:
        raw["judges"] = judges
    return SweepConfig.model_validate(raw)


def _openai(name, **options):
    return {"name": name, "engine": "openai", "model": "m", "modes": {"NT": {}}, "options": options}


def test_a_clean_config_has_no_problems(tmp_path):
    cfg = _cfg(tmp_path, [{"name": "a", "engine": "hf", "modes": {"NT": {}}},
                          _openai("b", api_key_env="MY_KEY"), _openai("local", base_url="http://127.0.0.1:8001/v1")])
    assert preflight(cfg, env={"MY_KEY": "sk-1"}) == []
    require_ready(cfg, env={"MY_KEY": "sk-1"})  # no stored run: nothing stale either


def test_missing_model_path_and_gguf_file(tmp_path):
    (tmp_path / "model").mkdir()
    cfg = _cfg(tmp_path, [
        {"name": "gone", "engine": "vllm", "model": str(tmp_path / "nope"), "modes": {"NT": {}}},
        {"name": "gg", "engine": "hf", "model": str(tmp_path / "model"), "options": {"gguf_file": "x.gguf"}, "modes": {"NT": {}}},
        {"name": "hub", "engine": "vllm", "model": "Qwen/Qwen3-VL-8B-Instruct", "modes": {"NT": {}}},
    ])
    assert preflight(cfg, env={}) == [
        f"models.0.model: model path '{tmp_path}/nope' does not exist (config 'gone', engine vllm). Fix: point it at the "
        "model folder (mounted on every node that runs the engine), or leave it unset for the embedded default (hf).",
        f"models.1.options.gguf_file: 'x.gguf' is not in '{tmp_path}/model' (config 'gg'). Fix: give the GGUF file's "
        "name inside the model folder, or drop gguf_file for a regular checkpoint.",
    ]


def test_unset_api_key_names_the_key_and_the_variable(tmp_path):
    cfg = _cfg(tmp_path, [_openai("gpt", api_key_env="OPENAI_API_KEY")])
    (p,) = preflight(cfg, env={})
    assert p == ("models.0.options.api_key_env: environment variable OPENAI_API_KEY is not set (config 'gpt' calls "
                 "the OpenAI default endpoint). Fix: export OPENAI_API_KEY=<key> before starting the job (on a cluster: "
                 "in the head's and workers' environment, e.g. a Kubernetes secretKeyRef), or set "
                 "models.0.options.api_key_env to the variable that holds the key (for a server without auth, any "
                 "value, e.g. OPENAI_API_KEY=EMPTY).")
    assert preflight(cfg, env={"OPENAI_API_KEY": ""}) == [p]  # empty counts as unset


@pytest.mark.parametrize("url, ok", [
    ("http://127.0.0.1:8001/v1", True), ("https://api.example.com/v1", True),
    ("127.0.0.1:8001/v1", False), ("http:///v1", False), ("ftp://host/v1", False), ("http://host:80a/v1", False),
])
def test_endpoint_urls_must_parse(url, ok):
    got = check_endpoint({"base_url": url, "api_key_env": "K"}, "models.0.options", "config 'x'", {"K": "k"})
    if ok:
        assert got == []
    else:
        assert got == [f"models.0.options.base_url: endpoint URL {url!r} does not parse as http(s)://host[:port]/path "
                       "(config 'x'). Fix: give the server's full URL, e.g. http://127.0.0.1:8000/v1."]


def test_base_url_env_must_be_set_and_a_local_server_needs_no_key():
    assert check_endpoint({"base_url_env": "VLLM_URL"}, "k.options", "config 'x'", {"VLLM_URL": "http://localhost:8000/v1"}) == []
    (p, q) = check_endpoint({"base_url_env": "VLLM_URL"}, "k.options", "config 'x'", {})
    assert p == ("k.options.base_url_env: environment variable VLLM_URL is not set (config 'x' reads its endpoint URL "
                 "from it). Fix: export VLLM_URL=https://host/v1, or give k.options.base_url instead.")
    assert q.startswith("k.options.api_key_env: environment variable OPENAI_API_KEY is not set")


def test_judges_and_the_verifier_fallback_are_checked(tmp_path):
    judges = {"verifier": {"llm_fallback": {"model": "v", "options": {"api_key_env": "VERIFIER_API_KEY",
                                                                       "base_url": "https://dashscope.example/v1"}}},
              "pattern": [{"name": "rules"},
                          {"name": "gpt-judge", "kind": "llm", "llm": {"model": "g", "options": {"api_key_env": "JUDGE_KEY"}}}]}
    cfg = _cfg(tmp_path, [{"name": "a", "engine": "hf", "modes": {"NT": {}}}], judges=judges)
    got = preflight(cfg, env={})
    assert [p.split(":")[0] for p in got] == ["judges.verifier.llm_fallback.options.api_key_env",
                                              "judges.pattern.1.llm.options.api_key_env"]
    assert "VERIFIER_API_KEY is not set (the verifier's LLM fallback calls https://dashscope.example/v1)" in got[0]
    assert "JUDGE_KEY is not set (pattern judge 'gpt-judge' calls the OpenAI default endpoint)" in got[1]
    with pytest.raises(ConfigError) as e:  # the re-judging job checks its judges only
        require_ready(cfg.judges, "judges.yaml", env={"JUDGE_KEY": "k"})
    assert str(e.value).splitlines()[0] == "judges.yaml: 1 problem(s) found before starting:"


def test_benchmark_formats_and_existence(tmp_path):
    cfg = _cfg(tmp_path, [{"name": "a", "engine": "hf", "modes": {"NT": {}}}],
               benchmarks=[{"path": str(tmp_path / "data.csv")}, {"path": str(tmp_path / "gone.parquet")},
                           {"path": "s3://bucket/m.jsonl"}])
    assert preflight(cfg, env={}) == [
        f"benchmarks.0.path: '{tmp_path}/data.csv' is not a benchmark file this project reads (formats read: .jsonl, "
        ".parquet: a manifest in JSON lines or Parquet). Fix: convert it, or give the manifest.jsonl / .parquet file "
        "itself (not its folder).",
        f"benchmarks.1.path: benchmark file '{tmp_path}/gone.parquet' does not exist. Fix: correct the path (relative "
        "paths in a config resolve against the config file's folder; --data paths against the current directory).",
    ]


def test_require_ready_lists_every_problem_at_once(tmp_path):
    cfg = _cfg(tmp_path, [_openai("a", api_key_env="KA"), _openai("b", api_key_env="KB")],
               benchmarks=[{"path": str(tmp_path / "x.txt")}])
    with pytest.raises(ConfigError) as e:
        require_ready(cfg, "sweep.yaml", env={})
    lines = str(e.value).splitlines()
    assert lines[0] == "sweep.yaml: 3 problem(s) found before starting:"
    assert [ln.split(":")[0].strip() for ln in lines[1:]] == ["benchmarks.0.path", "models.0.options.api_key_env",
                                                              "models.1.options.api_key_env"]


def test_rejudging_checks_only_the_judges_it_runs(tmp_path):
    judges = {"pattern": [{"name": "rules"},
                          {"name": "gpt-judge", "kind": "llm", "llm": {"model": "g", "options": {"api_key_env": "JUDGE_KEY"}}}]}
    cfg = _cfg(tmp_path, [{"name": "a", "engine": "hf", "modes": {"NT": {}}}], judges=judges)
    require_ready(cfg.judges, "run_config.json", env={}, only=["rules"])
    with pytest.raises(ConfigError, match="judges.pattern.1.llm.options.api_key_env: environment variable JUDGE_KEY"):
        require_ready(cfg.judges, "run_config.json", env={}, only=["gpt-judge"])


# ------------------------------------------------------------------ the cluster's shape ------------------
NODE_1X8 = {"CPU": 96.0, "GPU": 8.0, "memory": 8e11}          # a 1x8 GPU worker pod as Ray sees it
NODE_2X4 = {"CPU": 44.0, "GPU": 4.0, "memory": 4e11}
CPU_POD = {"CPU": 8.0, "memory": 3e10}
HEAD = {"memory": 1.6e10, "node:__internal_head__": 1.0}      # num-cpus 0


def _vllm(name, tp, **res):
    return {"name": name, "engine": "vllm", "model": "/models/m", "modes": {"NT": {}},
            "options": {"tensor_parallel_size": tp}, "resources": {"num_gpus": tp, "num_cpus": 16, **res}}


def test_replica_demand_counts_tensor_parallel_gpus_on_one_node(tmp_path):
    from howeval.config.preflight import replica_demand

    cfg = _cfg(tmp_path, [_vllm("tp8", 8), _vllm("under", 4, num_gpus=1), _vllm("h100", 1, accelerator_type="H100"),
                          {"name": "hf", "engine": "hf", "modes": {"NT": {}}}])
    assert [replica_demand(m) for m in cfg.models] == [
        {"CPU": 16.0, "GPU": 8.0},
        {"CPU": 16.0, "GPU": 4.0},  # num_gpus 1 but TP 4: the engine's 4 workers share the actor's node
        {"CPU": 16.0, "GPU": 1.0, "accelerator_type:H100": 0.001},
        {"CPU": 0.75},
    ]


def test_a_tp8_config_is_refused_on_2x4_with_its_name_and_the_fix(tmp_path):
    from howeval.config.preflight import check_cluster_fit

    cfg = _cfg(tmp_path, [_vllm("small", 1), _vllm("qwen3.5-397b", 8), _vllm("mid", 4), _vllm("kimi", 8)])
    assert check_cluster_fit(cfg, [HEAD, CPU_POD, NODE_1X8]) == []
    problems = check_cluster_fit(cfg, [HEAD, CPU_POD, NODE_2X4, NODE_2X4], where="cluster 2x4")
    assert problems == [
        "models.1 (config 'qwen3.5-397b'): one replica needs 8 GPUs, 16 CPUs on one node, but the largest node of "
        "cluster 2x4 offers 4 GPUs, 44 CPUs: its actors would stay pending forever. Fix: lower "
        "models.1.resources.num_gpus (and options.tensor_parallel_size) to <= 4; or run it on a cluster whose node "
        "has enough GPUs (k8s/overlays/1x8)",
        "models.3 (config 'kimi'): one replica needs 8 GPUs, 16 CPUs on one node, but the largest node of cluster "
        "2x4 offers 4 GPUs, 44 CPUs: its actors would stay pending forever. Fix: lower models.3.resources.num_gpus "
        "(and options.tensor_parallel_size) to <= 4; or run it on a cluster whose node has enough GPUs "
        "(k8s/overlays/1x8)",
        "to run the other configs without these, add the overrides ~models.3 ~models.1 (highest index first)",
    ]


def test_cluster_fit_needs_everything_on_one_node_and_checks_cpus_and_accelerators(tmp_path):
    from howeval.config.preflight import check_cluster_fit

    cfg = _cfg(tmp_path, [_vllm("one", 1, num_cpus=32), _vllm("h100", 1, accelerator_type="H100")])
    # 32 CPUs and a GPU exist, never on one node
    split = check_cluster_fit(cfg, [{"CPU": 64.0}, {"CPU": 8.0, "GPU": 1.0, "accelerator_type:H200": 1.0}])
    assert split[0].startswith("models.0 (config 'one'): one replica needs 1 GPUs, 32 CPUs on one node")
    assert "Fix: lower models.0.resources.num_cpus to <= 8" in split[0]
    assert split[1].startswith("models.1 (config 'h100'): one replica needs 1 GPUs, 16 CPUs, H100 on one node")
    assert "models.1.resources.accelerator_type" in split[1]
    assert check_cluster_fit(cfg, [{"CPU": 32.0, "GPU": 1.0, "accelerator_type:H100": 1.0}]) == []
    assert check_cluster_fit(cfg, []) == [], "shape unknown: nothing is refused"


def test_the_2x4_overlay_refuses_the_tp8_configs_of_the_25_config_sweep(repo_root):
    """The real sweep config against the GPU pod shapes of the rendered overlays (what KubeRay's autoscaler
    reports as node groups): 1x8 runs all 25, 2x4 refuses exactly the tensor-parallel-8 ones."""
    from howeval.config import load_sweep_config
    from howeval.config.preflight import check_cluster_fit

    from kube import load_rendered, quantity

    cfg = load_sweep_config(repo_root / "configs" / "sweeps" / "patterneval-25.yaml")

    def shapes(overlay):
        job = {d["metadata"]["name"]: d for d in load_rendered(overlay)}["patterneval-25"]
        out = []
        for g in job["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
            r = g["template"]["spec"]["containers"][0]["resources"]["requests"]
            out.append({"CPU": quantity(r["cpu"]), "GPU": quantity(r.get("nvidia.com/gpu", 0)), "memory": quantity(r["memory"])})
        return out

    assert check_cluster_fit(cfg, shapes("1x8")) == []
    refused = check_cluster_fit(cfg, shapes("2x4"))
    tp8 = [m.name for m in cfg.models if m.resources.num_gpus > 4]
    assert len(tp8) == 3 and len(refused) == 4, refused
    assert all(f"config {n!r}" in p for n, p in zip(tp8, refused))
