"""Every KubeRay overlay renders, validates against the vendored CRDs (schema and CEL rules) and names things
that exist in the repo.

The tests read ``k8s/rendered/<overlay>.yaml`` (``make k8s-render``: ``kubectl kustomize`` of
``k8s/overlays/<overlay>``), and check that those files are what kustomize renders today where kubectl is
installed. Schema conversion, CEL evaluation and rendering helpers: ``tests/kube.py``.
"""
from __future__ import annotations

import copy
import re
import shlex
from pathlib import Path

import pytest
import tomllib
import yaml

from kube import (
    KUBERAY_VERSION,
    OVERLAYS,
    RAY_KINDS,
    K8sValidator,
    cel_errors,
    cel_rules,
    cluster_spec,
    crd_v1_schema,
    hardware_values,
    k8s_to_jsonschema,
    kustomize,
    load_rendered,
    pod_specs,
    quantity,
    rendered_path,
    schema_errors,
)

RAY_VERSION = "2.60.0"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
RAY_NAMES = {("RayCluster", "howeval"), ("RayJob", "patterneval-25"), ("RayJob", "patternrl-grpo"),
             ("RayService", "patternrm-reward")}
COMPONENTS = {"network", "redis", "cluster", "sweep", "train-grpo", "reward-server", "verifier"}


@pytest.fixture(scope="module")
def raw_schemas(repo_root: Path) -> dict:
    crds = repo_root / "k8s" / "crds"
    assert (crds / "SOURCE.md").exists() and (crds / "LICENSE").exists(), "vendored CRDs need SOURCE.md and LICENSE"
    return {kind: crd_v1_schema(crds / fname) for kind, fname in RAY_KINDS.items()}


@pytest.fixture(scope="module")
def validators(raw_schemas) -> dict:
    out = {}
    for kind, raw in raw_schemas.items():
        schema = k8s_to_jsonschema(raw)
        K8sValidator.check_schema(schema)
        out[kind] = K8sValidator(schema)
    return out


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    return {o: load_rendered(o) for o in OVERLAYS}


def ray_docs(rendered, overlay: str) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in rendered[overlay] if d["kind"] in RAY_KINDS}


# ------------------------------------------------------------------ rendering ---------------------------
def test_crds_are_the_pinned_kuberay_release(repo_root: Path):
    text = (repo_root / "k8s" / "crds" / "SOURCE.md").read_text()
    assert f"**v{KUBERAY_VERSION}**" in text
    doc = (repo_root / "docs" / "cluster.md").read_text()
    assert f"KUBERAY_VERSION={KUBERAY_VERSION}" in doc, "docs/cluster.md installs the release the CRDs come from"
    values = yaml.safe_load((repo_root / "k8s" / "kuberay-operator-values.yaml").read_text())
    gates = {g["name"]: g["enabled"] for g in values["featureGates"]}
    assert gates["RayJobDeletionPolicy"] is True, "the RayJobs' deletionRules need this gate"
    assert "-f k8s/kuberay-operator-values.yaml" in doc


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rendered_overlay_is_what_kustomize_renders(overlay):
    text = kustomize(overlay)
    if text is None:
        pytest.skip("kubectl is not on PATH: cannot re-render; the committed k8s/rendered files are checked below")
    committed = rendered_path(overlay).read_text()
    assert committed.split("\n", 1)[1] == text, f"k8s/rendered/{overlay}.yaml is stale: run make k8s-render"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_renders_every_object_once_and_no_local_values(overlay, rendered):
    got = sorted((d["kind"], d["metadata"]["name"]) for d in rendered[overlay])
    assert set(RAY_NAMES) <= set(got), got
    assert len(got) == len(set(got)), f"duplicate objects: {got}"
    assert not [d for d in rendered[overlay] if d["kind"] == "HardwareValues"], "hardware.yaml is local-config"
    comps = {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in rendered[overlay]}
    assert comps == COMPONENTS, "each object carries the component label docs/cluster.md applies it by"


# ------------------------------------------------------------------ schema and CEL ----------------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_validates_against_crd_v1_schema(overlay, rendered, validators):
    for name, doc in ray_docs(rendered, overlay).items():
        assert doc.get("apiVersion") == "ray.io/v1", f"{name}: apiVersion {doc.get('apiVersion')!r}"
        errs = schema_errors(validators[doc["kind"]], doc)
        assert not errs, f"{overlay}/{name} does not validate against the {doc['kind']} CRD (v1):\n" + "\n".join(errs)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_passes_the_crd_cel_rules(overlay, rendered, raw_schemas):
    pytest.importorskip("celpy", reason="cel-python is in the test extra (pip install -e '.[test]')")
    evaluated = 0
    for name, doc in ray_docs(rendered, overlay).items():
        errs, n = cel_errors(cel_rules(raw_schemas[doc["kind"]]), doc)
        assert not errs, f"{overlay}/{name} breaks CEL rules of the {doc['kind']} CRD:\n" + "\n".join(errs)
        evaluated += n
    # the RayJobs' deletionStrategy (2 rules) and each of their 3 deletion rules' conditions (2 rules): 2 x 8
    assert evaluated == 16, evaluated


def test_cel_rules_catch_bad_deletion_strategies(rendered, raw_schemas):
    """Negative controls: the CEL rules (not the schema) reject these."""
    pytest.importorskip("celpy", reason="cel-python is in the test extra")
    rules = cel_rules(raw_schemas["RayJob"])
    assert len(rules) == 9, [r[1] for r in rules]  # 3 transition rules (oldSelf) + 2 managedBy + 4 deletion
    good = ray_docs(rendered, "1x8")["patternrl-grpo"]
    both = copy.deepcopy(good)
    both["spec"]["deletionStrategy"]["onSuccess"] = {"policy": "DeleteCluster"}
    cond = copy.deepcopy(good)
    cond["spec"]["deletionStrategy"]["deletionRules"][0]["condition"]["jobDeploymentStatus"] = "Failed"
    empty = copy.deepcopy(good)
    empty["spec"]["deletionStrategy"]["deletionRules"][0]["condition"] = {"ttlSeconds": 5}
    managed = copy.deepcopy(good)
    managed["spec"]["managedBy"] = "someone-else"
    for bad, words in [(both, "legacy policies"), (cond, "cannot be used"), (empty, "requires either"),
                       (managed, "managedBy")]:
        errs, _ = cel_errors(rules, bad)
        assert any(words in e for e in errs), (words, errs)


def test_validator_rejects_unknown_fields_wrong_types_and_duplicate_keys(rendered, validators):
    """Negative controls: the converted schemas do catch the mistakes they are here to catch."""
    v = validators["RayCluster"]
    good = ray_docs(rendered, "1x8")["howeval"]
    assert not schema_errors(v, good)

    typo = copy.deepcopy(good)
    typo["spec"]["headGroupSpec"]["rayStartParam"] = typo["spec"]["headGroupSpec"].pop("rayStartParams")
    assert any("rayStartParam" in e for e in schema_errors(v, typo))

    wrong_type = copy.deepcopy(good)
    wrong_type["spec"]["workerGroupSpecs"][0]["maxReplicas"] = "eight"
    assert any("maxReplicas" in e for e in schema_errors(v, wrong_type))

    not_a_string = copy.deepcopy(good)
    not_a_string["spec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] = 0  # must be "0"
    assert any("num-cpus" in e for e in schema_errors(v, not_a_string))

    dup_env = copy.deepcopy(good)
    env = dup_env["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"]
    env.append(dict(env[0]))
    assert any("list-map key" in e for e in schema_errors(v, dup_env))

    bad_ft = copy.deepcopy(good)
    bad_ft["spec"]["gcsFaultToleranceOptions"]["backend"] = "etcd"
    assert any("backend" in e for e in schema_errors(v, bad_ft))

    quantities = copy.deepcopy(good)  # int-or-string: both 8 and "500m" are quantities
    quantities["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = 8
    assert not schema_errors(v, quantities)
    quantities["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = [8]
    assert schema_errors(v, quantities)


def test_validator_rejects_bad_rayjob_lifecycle_fields(rendered, validators):
    """Negative controls for the RayJob fields: the CRD schema catches these mistakes."""
    v = validators["RayJob"]
    good = ray_docs(rendered, "1x8")["patterneval-25"]
    assert not schema_errors(v, good)
    for path, value, where in [
        (("preRunningDeadlineSeconds",), 0, "preRunningDeadlineSeconds"),           # minimum 1
        (("submitterConfig", "backoffLimit"), "2", "backoffLimit"),                 # an integer
        (("submitterConfig", "backoffLimt"), 2, "backoffLimt"),                     # a typo: closed object
        (("deletionStrategy", "deletionRules"), [], "deletionRules"),               # minItems 1
        (("deletionStrategy", "deletionRules", 0, "policy"), "DeleteAll", "policy"),  # not an enum value
        (("deletionStrategy", "deletionRules", 0, "condition", "jobStatus"), "RUNNING", "jobStatus"),
    ]:
        bad = copy.deepcopy(good)
        node = bad["spec"]
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        assert any(where in e for e in schema_errors(v, bad)), (path, value)


# ------------------------------------------------------------------ hardware values ----------------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_hardware_values_reach_every_gpu_group_and_the_train_entrypoint(overlay, rendered):
    hw = hardware_values(overlay)
    docs = ray_docs(rendered, overlay)
    gpu_groups = 0
    for name, doc in docs.items():
        for group, is_head, pod in pod_specs(doc):
            c = pod["containers"][0]
            if is_head:
                assert c["resources"] == hw["headPod"]["resources"], f"{overlay}/{name}/head"
            elif group == "cpu":
                assert c["resources"] == hw["cpuPod"]["resources"], f"{overlay}/{name}/cpu"
            else:
                assert group == "gpu", f"{overlay}/{name}: unexpected group {group}"
                gpu_groups += 1
                pod_hw = hw["train"]["gpuPod"] if name == "patternrl-grpo" else hw["gpuPod"]  # beside the verifier
                assert c["resources"] == pod_hw["resources"] and c["image"] == hw["gpuPod"]["image"]
                assert pod["nodeSelector"] == hw["gpuPod"]["nodeSelector"]
                dshm = {v["name"]: v for v in pod["volumes"]}["dshm"]
                assert dshm["emptyDir"]["sizeLimit"] == hw["gpuPod"]["shmSizeLimit"]
                g = [w for w in cluster_spec(doc)["workerGroupSpecs"] if w["groupName"] == "gpu"][0]
                assert g["maxReplicas"] == hw["gpuNodes"]
    assert gpu_groups == 3, "RayCluster, sweep RayJob and GRPO RayJob each have one gpu group; the RayService none"
    train = shlex.split(docs["patternrl-grpo"]["spec"]["entrypoint"])
    assert train == ["python", "-m", "howeval.ray_jobs.train_grpo", "--config", hw["train"]["config"],
                     "--accelerator-type", hw["train"]["rayAcceleratorType"], "--data", hw["train"]["data"],
                     "--max-workers", str(hw["train"]["maxWorkers"])]
    assert "--resume" not in train and "--no-resume" not in train, "re-applied as is, the job continues by itself"
    verifier = {(d["kind"], d["metadata"]["name"]): d for d in rendered[overlay]}[("Deployment", "verifier-vllm")]
    assert verifier["spec"]["replicas"] == hw["verifierPod"]["replicas"]
    assert verifier["spec"]["template"]["spec"]["containers"][0]["resources"] == hw["verifierPod"]["resources"]
    sweep = shlex.split(docs["patterneval-25"]["spec"]["entrypoint"])
    assert sweep == ["python", "-m", "howeval.ray_jobs.sweep", "--config", hw["sweep"]["config"], "--output", hw["sweep"]["output"]]
    assert hw["sweep"]["output"].startswith("/data/"), "outputs go to the shared howeval-data PVC"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_train_config_of_the_overlay_loads_with_its_accelerator(overlay, rendered, repo_root: Path):
    from howeval.ray_jobs.train_grpo import cli_overrides
    from howeval.training.config import load_train_config

    hw = hardware_values(overlay)
    cfg = load_train_config(str(repo_root / hw["train"]["config"]),
                            overrides=cli_overrides(None, hw["train"]["rayAcceleratorType"]))
    assert cfg.scaling.elastic, "the cluster recipes are elastic (min_workers/max_workers)"
    acc = hw["train"]["rayAcceleratorType"]
    assert cfg.scaling.accelerator_type == (None if acc == "any" else acc)
    # what the RayJob runs: the entrypoint's flags on top of the file (howeval.ray_jobs.train_grpo's own parser)
    from howeval.ray_jobs.train_grpo import config_from_args, parse_args

    argv = shlex.split(ray_docs(rendered, overlay)["patternrl-grpo"]["spec"]["entrypoint"])[3:]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(repo_root)  # the job's working_dir: the image's /app, a copy of the repository
        job = config_from_args(parse_args(argv))
    assert job.data.path == str((repo_root / hw["train"]["data"]) if not hw["train"]["data"].startswith("/")
                                else hw["train"]["data"])
    gpus = hw["node"]["gpus"] * hw["node"]["count"]
    verifier_gpus = quantity(hw["verifierPod"]["resources"]["requests"].get("nvidia.com/gpu", 0)) * hw["verifierPod"]["replicas"]
    pod_gpus = quantity(hw["train"]["gpuPod"]["resources"]["requests"].get("nvidia.com/gpu", 0))
    if gpus:
        assert job.scaling.use_gpu and job.scaling.max_workers == hw["train"]["maxWorkers"] == pod_gpus * hw["gpuNodes"]
        assert job.scaling.max_workers + verifier_gpus <= gpus, "the verifier's GPU is not training's"
        assert job.scaling.min_workers <= job.scaling.max_workers
    else:
        assert not job.scaling.use_gpu and verifier_gpus == 0


# ------------------------------------------------------------------ cluster layout ----------------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_ray_version_matches_the_pinned_ray(overlay, rendered, repo_root: Path):
    deps = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"^ray(\[.*\])?==", d)]
    assert pins and all(p.endswith("==" + RAY_VERSION) for p in pins), f"pyproject ray pin {pins}"
    for name, doc in ray_docs(rendered, overlay).items():
        assert cluster_spec(doc)["rayVersion"] == RAY_VERSION, name
        n = doc["metadata"]["name"]
        assert DNS_1035.match(n) and len(n) <= 50, f"metadata.name {n!r}: KubeRay derives Service names from it"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gcs_fault_tolerance_uses_the_redis_of_the_overlay(overlay, rendered):
    objs = {(d["kind"], d["metadata"]["name"]): d for d in rendered[overlay]}
    svc = objs[("Service", "howeval-redis")]
    port = svc["spec"]["ports"][0]["port"]
    redis = objs[("Deployment", "howeval-redis")]["spec"]["template"]["spec"]["containers"][0]
    assert "--requirepass" in redis["command"] and "--appendonly" in redis["command"]
    secret = [e for e in redis["env"] if e["name"] == "REDIS_PASSWORD"][0]["valueFrom"]["secretKeyRef"]
    for name, doc in ray_docs(rendered, overlay).items():
        spec = cluster_spec(doc)
        ft = spec["gcsFaultToleranceOptions"]
        assert ft["redisAddress"] == f"howeval-redis:{port}", name
        assert ft["redisPassword"]["valueFrom"]["secretKeyRef"] == secret, name
        # what KubeRay's ValidateRayClusterSpec refuses next to gcsFaultToleranceOptions
        head = spec["headGroupSpec"]
        assert "redis-password" not in head["rayStartParams"] and "redis-username" not in head["rayStartParams"]
        env = {e["name"] for e in head["template"]["spec"]["containers"][0].get("env", [])}
        assert not env & {"REDIS_PASSWORD", "RAY_REDIS_ADDRESS", "REDIS_USERNAME"}, name
        assert "ray.io/ft-enabled" not in (doc["metadata"].get("annotations") or {}), name


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_cpu_head_runs_no_tasks_and_groups_autoscale(overlay, rendered):
    for name, doc in ray_docs(rendered, overlay).items():
        spec = cluster_spec(doc)
        assert spec["enableInTreeAutoscaling"] is True
        assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
        head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
        assert "nvidia.com/gpu" not in head["resources"].get("limits", {}), "the head is CPU-only"
        for g in spec["workerGroupSpecs"]:
            assert g["minReplicas"] <= g.get("replicas", 0) <= g["maxReplicas"], (name, g["groupName"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_containers_pin_resources_images_and_gpu_scheduling(overlay, rendered):
    for name, doc in ray_docs(rendered, overlay).items():
        for group, _, pod in pod_specs(doc):
            for c in pod["containers"]:
                lim, req = c["resources"].get("limits", {}), c["resources"].get("requests", {})
                assert lim.get("cpu") and lim.get("memory"), f"{name}/{group}: set cpu and memory limits"
                assert req == lim, f"{name}/{group}: requests equal limits (Guaranteed QoS, predictable fit)"
                assert c["image"].startswith("registry.example.com/howeval:"), f"{name}/{group}: image {c['image']!r}"
                if lim.get("nvidia.com/gpu"):
                    assert c["image"].endswith("-gpu"), f"{name}/{group}: GPU pods need the gpu image"
                    assert any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])), f"{name}/{group}"
                else:
                    assert c["image"].endswith("-cpu"), f"{name}/{group}: CPU pods use the cpu image"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_keys_come_from_secrets_never_literals(overlay, rendered):
    text = rendered_path(overlay).read_text()
    assert not re.search(r"\bsk-[A-Za-z0-9]{8,}", text), "looks like a literal API key"
    for name, doc in ray_docs(rendered, overlay).items():
        for group, _, pod in pod_specs(doc):
            for c in pod["containers"]:
                for e in c.get("env", []):
                    if re.search(r"(_API_KEY|_TOKEN|_SECRET|_PASSWORD)$", e["name"]):
                        assert "value" not in e, f"{name}/{group}: {e['name']} has a literal value"
                        ref = e["valueFrom"]["secretKeyRef"]
                        assert ref["name"] and ref["key"], f"{name}/{group}: {e['name']}"
                        # provider keys: a pod starts without them (configs that need one are refused at submit
                        # by the preflight, naming the variable); the reward token and Redis password are required
                        assert ref.get("optional", False) is (ref["name"] == "howeval-api-keys"), \
                            f"{name}/{group}: {e['name']} optional={ref.get('optional')}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_model_weights_are_mounted_read_only(overlay, rendered):
    for name, doc in ray_docs(rendered, overlay).items():
        for group, _, pod in pod_specs(doc):
            vols = {v["name"]: v for v in pod.get("volumes", [])}
            for c in pod["containers"]:
                mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
                assert mounts.get("/models", {}).get("readOnly") is True, f"{name}/{group}: /models must be read-only"
                assert vols[mounts["/models"]["name"]]["persistentVolumeClaim"].get("readOnly") is True


# ------------------------------------------------------------------ what the manifests name -------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_rayjob_entrypoints_name_modules_and_configs_that_exist(overlay, rendered, repo_root: Path):
    for name in ("patterneval-25", "patternrl-grpo"):
        argv = shlex.split(ray_docs(rendered, overlay)[name]["spec"]["entrypoint"])
        assert argv[:2] == ["python", "-m"] and "--config" in argv, argv
        module, config = argv[2], argv[argv.index("--config") + 1]
        assert (repo_root / (module.replace(".", "/") + ".py")).exists(), f"{name}: module {module} does not exist"
        assert (repo_root / config).exists(), f"{name}: config {config} does not exist"


@pytest.mark.parametrize("name", ["patterneval-25", "patternrl-grpo"])
def test_rayjob_runtime_env_driver_and_lifecycle(name, rendered, repo_root: Path):
    """What the operator checks beyond the schema (KubeRay v1.7.0 ``utils/validation.go``:
    ``ValidateRayJobSpec``, ``validateDeletionConfiguration``, ``validateDeletionRules``)."""
    spec = ray_docs(rendered, "1x8")[name]["spec"]
    env = yaml.safe_load(spec["runtimeEnvYAML"])
    assert isinstance(env, dict) and set(env) <= {"working_dir", "env_vars", "pip", "py_modules"}, env
    assert f"WORKDIR {env['working_dir']}" in (repo_root / "k8s" / "Dockerfile").read_text()
    assert spec["entrypointNumCpus"] >= 1, "the driver needs a CPU: off the num-cpus-0 head, so a head restart spares it"
    assert spec["submissionMode"] == "K8sJobMode" and spec["submitterConfig"]["backoffLimit"] >= 1
    assert 0 < spec["preRunningDeadlineSeconds"] < spec["activeDeadlineSeconds"]
    rules = spec["deletionStrategy"]["deletionRules"]
    assert spec["shutdownAfterJobFinishes"] is False and not spec.get("ttlSecondsAfterFinished"), \
        "deletionRules and shutdownAfterJobFinishes (and its TTL) are mutually exclusive"
    seen = {}
    for r in rules:
        cond = r["condition"]
        assert r["policy"] != "DeleteWorkers", "DeleteWorkers is refused with autoscaling"
        key = (cond.get("jobStatus", ""), r["policy"])
        assert key not in seen, f"duplicate rule {key}"
        seen[key] = cond.get("ttlSeconds", 0)
    by_status = {cond: t for (cond, p), t in seen.items() if p == "DeleteCluster"}
    assert set(by_status) == {"SUCCEEDED", "FAILED", ""}, "the cluster goes away on every outcome"
    assert by_status["FAILED"] > by_status["SUCCEEDED"], "a failed cluster stays longer (its logs)"


def _serve_config(rendered) -> dict:
    return yaml.safe_load(ray_docs(rendered, "1x8")["patternrm-reward"]["spec"]["serveConfigV2"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray Serve's own pydantic-v1-style Field extras
def test_rayservice_serve_config_is_valid_and_serves_the_embedded_patternrm_on_cpu(rendered, repo_root: Path):
    from ray.serve.schema import ServeDeploySchema

    cfg = _serve_config(rendered)
    ServeDeploySchema.model_validate(cfg)
    apps = {a["name"]: a for a in cfg["applications"]}
    routed = [a for a in apps.values() if a.get("route_prefix") == "/"]
    assert len(routed) == 1 and routed[0]["import_path"].startswith("howeval.reward_server.app:"), "one app at /"
    assert cfg["http_options"]["host"] == "0.0.0.0", "inside a pod the proxy must listen beyond loopback"
    prm = apps["patternrm"]
    # the default trained head shipped inside the package: nothing outside a clone is needed to build the image
    assert prm["args"]["patternrm"] == {"kind": "trained", "device": "cpu"}
    for app in apps.values():
        for d in app["deployments"]:
            assert not d.get("ray_actor_options", {}).get("num_gpus"), f"{d['name']} asks for a GPU"


def test_rayservice_import_paths_exist_and_name_real_deployments(rendered, repo_root: Path):
    for app in _serve_config(rendered)["applications"]:
        module, _, attr = app["import_path"].partition(":")
        path = repo_root / (module.replace(".", "/") + ".py")
        assert path.exists(), f"serveConfigV2 import_path {app['import_path']}: {path.relative_to(repo_root)} does not exist"
        source = path.read_text()
        assert re.search(rf"^(def {attr}\(|{attr}\s*[:=])", source, re.M), f"{path.name} defines no module-level {attr!r}"
        defined = set(re.findall(r"@serve\.deployment\([^)]*\bname=[\"'](\w+)[\"']", source))
        defined |= set(re.findall(r"^class (\w+)", source, re.M))
        for d in app["deployments"]:
            assert d["name"] in defined, f"app {app['name']!r} configures {d['name']!r}, not defined in {path.name}"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_rayservice_builders_accept_their_args(rendered, monkeypatch):
    """Each application builds from the manifest's ``args`` (the server's own config validation)."""
    import importlib
    import inspect

    from ray import serve

    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", "test-token")  # the builder fails fast without it
    for app in _serve_config(rendered)["applications"]:
        module, _, attr = app["import_path"].partition(":")
        target = getattr(importlib.import_module(module), attr)
        built = target(app.get("args")) if inspect.isfunction(target) else target
        assert isinstance(built, serve.Application), f"{app['import_path']}: not a Serve Application"


def test_dockerfile_base_pins_and_copies(repo_root: Path):
    text = (repo_root / "k8s" / "Dockerfile").read_text()
    assert re.search(r"^ARG BASE=python:3\.11-slim$", text, re.M) and re.search(r"^FROM \$\{BASE\}$", text, re.M)
    assert "constraints/cpu.txt" in text and "--extra gpu" in text
    assert "torch==2.13.0" in (repo_root / "constraints" / "cpu.txt").read_text()
    lines = re.sub(r"\\\n", " ", text).splitlines()
    copies = [ln.split()[1:-1] for ln in lines if ln.startswith("COPY ") and "--from" not in ln]
    missing = [src for srcs in copies for src in srcs if not (repo_root / src).exists()]
    assert not missing, f"k8s/Dockerfile copies paths that do not exist in a clone: {missing}"
    assert not [src for srcs in copies for src in srcs if src.startswith("build")], "the image is built from a clone alone"


# ------------------------------------------------------------------ the LLM verifier ---------------------
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_reward_server_reaches_the_verifier_by_its_short_service_name(overlay, rendered):
    """The RayService's llm_verifier URL names the verifier-vllm Service of the same manifests: short name (no
    namespace, so it resolves in whatever namespace they are applied to), the Service's port, the served name."""
    from urllib.parse import urlsplit

    objs = {(d["kind"], d["metadata"]["name"]): d for d in rendered[overlay]}
    cfg = yaml.safe_load(objs[("RayService", "patternrm-reward")]["spec"]["serveConfigV2"])
    reward = {a["name"]: a for a in cfg["applications"]}["reward"]["args"]
    assert reward["on_unresolved"] == "llm"
    url = urlsplit(reward["llm_verifier"]["base_url"])
    svc, dep = objs[("Service", "verifier-vllm")], objs[("Deployment", "verifier-vllm")]
    assert url.hostname == svc["metadata"]["name"] and "." not in url.hostname, "short Service name: no namespace"
    assert url.port == svc["spec"]["ports"][0]["port"] and url.path == "/v1"
    pod = dep["spec"]["template"]
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "the Service selects the verifier pods"
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    c = pod["spec"]["containers"][0]
    args = c["args"]
    assert args[args.index("--served-model-name") + 1] == reward["llm_verifier"]["model"]
    assert args[args.index("--port") + 1] == str(svc["spec"]["ports"][0]["targetPort"])
    assert args[args.index("--model") + 1].startswith("/models/"), "weights from the read-only models PVC"
    assert c["readinessProbe"]["httpGet"]["port"] == svc["spec"]["ports"][0]["targetPort"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/models"]["readOnly"] is True
    if dep["spec"]["replicas"]:
        assert c["image"].endswith("-gpu") and quantity(c["resources"]["requests"]["nvidia.com/gpu"]) >= 1
    text = rendered_path(overlay).read_text()
    assert "namespace:" not in text and ".svc" not in text, "no namespace is written: apply into any namespace"


# ------------------------------------------------------------------ who may reach the clusters ----------
def _selects(selector: dict, labels: dict) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions In/NotIn/Exists/DoesNotExist) against labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values", [])
        ok = {"In": k in labels and labels[k] in vals, "NotIn": labels.get(k) not in vals,
              "Exists": k in labels, "DoesNotExist": k not in labels}[op]
        if not ok:
            return False
    return True


# labels KubeRay 1.7.0 puts on the pods it makes (common/pod.go labelPod; rayjob_controller.go getSubmitterTemplate;
# raycluster_controller.go buildRedisCleanupJob), beside the template's own
def _ray_pod_labels(template_labels: dict, node_type: str) -> dict:
    return {"ray.io/is-ray-node": "yes", "ray.io/node-type": node_type, "app.kubernetes.io/name": "kuberay",
            "app.kubernetes.io/created-by": "kuberay-operator", **template_labels}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_ray_cluster_turns_on_token_auth_from_one_secret(overlay, rendered):
    """Ray 2.60 token auth through KubeRay 1.7.0's authOptions: the operator sets RAY_AUTH_MODE/RAY_AUTH_TOKEN on
    every Ray container and the submitter from the named Secret; nothing in the pods turns it off again."""
    for name, doc in ray_docs(rendered, overlay).items():
        assert cluster_spec(doc).get("authOptions") == {"mode": "token", "secretName": "howeval-ray-auth"}, name
        for group, _, pod in pod_specs(doc):
            for c in pod["containers"]:
                env = {e["name"]: e for e in c.get("env", [])}
                assert "RAY_AUTH_MODE" not in env and "RAY_AUTH_TOKEN" not in env, \
                    f"{name}/{group}: the operator sets the auth env from authOptions; a pod's own value would win"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_network_policies_admit_the_projects_pods_and_no_one_else(overlay, rendered):
    policies = {d["metadata"]["name"]: d["spec"] for d in rendered[overlay] if d["kind"] == "NetworkPolicy"}
    ray = policies["howeval-ray-ingress"]
    assert ray["policyTypes"] == ["Ingress"]
    # every Ray pod of every project cluster is selected (heads and workers)
    ray_pods = []
    for doc in ray_docs(rendered, overlay).values():
        spec = cluster_spec(doc)
        ray_pods.append(_ray_pod_labels(spec["headGroupSpec"]["template"]["metadata"]["labels"], "head"))
        ray_pods += [_ray_pod_labels(g["template"]["metadata"]["labels"], "worker") for g in spec["workerGroupSpecs"]]
    assert all(_selects(ray["podSelector"], p) for p in ray_pods)

    def admitted(policy: dict, peer: dict, port: int) -> bool:
        for rule in policy["ingress"]:
            ports = [p["port"] for p in rule.get("ports", [])]
            if ports and port not in ports:
                continue
            if any(_selects(f.get("podSelector", {}), peer) for f in rule["from"]):
                return True
        return False

    for p in ray_pods:
        assert admitted(ray, p, 6379) and admitted(ray, p, 8000) and admitted(ray, p, 10002)
    submitters = [{"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": d["metadata"]["name"],
                   "app.kubernetes.io/created-by": "kuberay-operator"}
                  for d in rendered[overlay] if d["kind"] == "RayJob"]
    assert len(submitters) == 2
    for s in submitters:
        assert admitted(ray, s, 8265) and not admitted(ray, s, 6379), "submitters reach the job API only"
    operator = {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator"}
    assert admitted(ray, operator, 8265) and not admitted(ray, operator, 6379)
    strangers = [{}, {"app": "other"}, {"ray.io/is-ray-node": "yes", "app.kubernetes.io/name": "kuberay"},
                 {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "someone-elses-job"}]
    for s in strangers:
        assert not any(admitted(ray, s, port) for port in (6379, 8265, 8000, 10001, 52365)), s
    # Redis: the heads (and KubeRay's Redis clean-up pod) only; the verifier: the Ray pods only
    deploys = {d["metadata"]["name"]: d for d in rendered[overlay] if d["kind"] == "Deployment"}
    redis, verifier = policies["howeval-redis-ingress"], policies["howeval-verifier-ingress"]
    assert _selects(redis["podSelector"], deploys["howeval-redis"]["spec"]["template"]["metadata"]["labels"])
    assert _selects(verifier["podSelector"], deploys["verifier-vllm"]["spec"]["template"]["metadata"]["labels"])
    heads = [p for p in ray_pods if p["ray.io/node-type"] == "head"]
    assert all(admitted(redis, h, 6379) for h in heads)
    assert admitted(redis, {**heads[0], "ray.io/node-type": "redis-cleanup"}, 6379)
    assert not any(admitted(redis, p, 6379) for p in ray_pods if p["ray.io/node-type"] == "worker")
    assert all(admitted(verifier, p, 8000) for p in ray_pods) and not admitted(verifier, {"app": "other"}, 8000)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_reward_workers_are_ready_only_when_healthz_says_so_and_liveness_stays_kuberays(overlay, rendered):
    """Issue 40: every reward-serving worker's readiness probe asks the reward app's /healthz (503 until
    PatternRM and the step scorer answer) after KubeRay's own raylet and Serve-proxy checks; no probe sets a
    liveness on /healthz (KubeRay's raylet liveness stays, so a slowly loading PatternRM kills no pod)."""
    doc = ray_docs(rendered, overlay)["patternrm-reward"]
    serve_port = yaml.safe_load(doc["spec"]["serveConfigV2"])["http_options"]["port"]
    workers = [spec for _, is_head, spec in pod_specs(doc) if not is_head]
    assert workers
    for spec in workers:
        c = spec["containers"][0]
        cmd = " ".join(c["readinessProbe"]["exec"]["command"])
        assert "api/local_raylet_healthz" in cmd and f"localhost:{serve_port}/-/healthz" in cmd
        assert f"localhost:{serve_port}/healthz" in cmd.split("&&")[-1]
        assert c["readinessProbe"]["timeoutSeconds"] >= 2 + 2 + 4  # the three wget timeouts fit in one probe
        assert "livenessProbe" not in c and "startupProbe" not in c
    for _, _, spec in pod_specs(doc):
        for c in spec["containers"]:
            assert "/healthz" not in str(c.get("livenessProbe", "")), "a liveness probe must not wait on the models"
