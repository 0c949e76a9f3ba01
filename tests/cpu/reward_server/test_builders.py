"""The reward server's application builders validate the Serve config's ``args`` once and bind typed config
objects; the deployments refuse a dict (issue 22: no config reaches a stage as a dict).

Each application is built the way ``serve run configs/serve/reward.yaml`` and the KubeRay RayService do it
(Ray Serve's own builder call on the YAML ``args``), without starting Ray.
"""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest
import yaml
from ray import cloudpickle
from ray.serve._private.api import call_user_app_builder_with_args_if_necessary

from howeval.config import ConfigError
from howeval.reward_server.app import PatternRMServer, RewardIngress, StepScorer, build_app, build_patternrm_app
from howeval.reward_server.config import CPRConfig, PatternRMConfig, RewardServerConfig

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray Serve's pydantic-v1-style extras

REPO = Path(__file__).resolve().parents[3]


def serve_configs() -> list:
    """``(source, Serve config)``: ``configs/serve/reward.yaml`` and the RayService of each rendered overlay."""
    out = [("configs/serve/reward.yaml", yaml.safe_load((REPO / "configs/serve/reward.yaml").read_text()))]
    for path in sorted((REPO / "k8s/rendered").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "RayService":
                out.append((f"{path.relative_to(REPO)}:{doc['metadata']['name']}", yaml.safe_load(doc["spec"]["serveConfigV2"])))
    assert len(out) > 1, "no RayService in k8s/rendered"
    return [pytest.param(source, config, id=source) for source, config in out]


def init_args(app) -> tuple:
    return app._bound_deployment.init_args


@pytest.mark.parametrize("source,config", serve_configs())
def test_every_serve_config_builds_to_deployments_bound_to_typed_configs(source, config, monkeypatch):
    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", "test-token")  # build_app fails fast without it
    seen = set()
    for app in config["applications"]:
        module, _, attr = app["import_path"].partition(":")
        built = call_user_app_builder_with_args_if_necessary(getattr(importlib.import_module(module), attr),
                                                             app.get("args") or {})
        name = built._bound_deployment.name
        seen.add(name)
        args = init_args(built)
        if name == "PatternRMServer":
            (rm,) = args
            assert type(rm) is PatternRMConfig and rm == PatternRMConfig.model_validate(app["args"]["patternrm"])
            typed = [rm]
        else:
            assert name == "RewardIngress", f"{source}: unexpected ingress {name}"
            steps, cfg = args
            assert type(cfg) is RewardServerConfig and cfg == RewardServerConfig.model_validate(app["args"])
            assert steps._bound_deployment.name == "StepScorer"
            (cpr,) = init_args(steps)
            assert type(cpr) is CPRConfig and cpr == cfg.cpr
            typed = [cfg, cpr]
        for obj in typed:  # what Serve does to init args on their way to the replicas
            back = cloudpickle.loads(cloudpickle.dumps(obj))
            assert type(back) is type(obj) and back == obj
    assert seen == {"PatternRMServer", "RewardIngress"}, source


def test_builders_name_a_bad_key_before_any_replica(monkeypatch):
    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", "test-token")
    with pytest.raises(ConfigError, match=r"cpr\.tua: unknown key \(got 0\.3\); did you mean 'tau'"):
        build_app({"cpr": {"tua": 0.3}})
    with pytest.raises(ConfigError, match=r"patternrm\.kind"):
        build_patternrm_app({"patternrm": {"kind": "nope"}})


def test_builders_pass_the_validated_objects_down(monkeypatch):
    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", "test-token")
    steps, cfg = init_args(build_app({"cpr": {"tau": 0.5}, "pattern": {"p": 1.0}}))
    assert cfg.cpr.tau == 0.5 and cfg.pattern.p == 1.0
    assert init_args(steps)[0] is cfg.cpr  # the same object, not a dump of it
    (rm,) = init_args(build_patternrm_app({"patternrm": {"kind": "rules"}}))
    assert rm == PatternRMConfig(kind="rules")


@pytest.mark.parametrize("cls,args,name", [
    (PatternRMServer, ({"kind": "rules"},), "patternrm"),
    (StepScorer, (CPRConfig().model_dump(),), "cpr"),
    (RewardIngress, (None, RewardServerConfig(auth={"token_env": None}).model_dump()), "config"),
])
def test_deployments_refuse_a_dumped_dict(cls, args, name):
    user_cls = cls.func_or_class
    if inspect.iscoroutinefunction(user_cls.__init__):  # @serve.ingress's wrapper (async __init__ and __del__)
        user_cls = user_cls.__bases__[0]  # the class as written, whose __init__ the wrapper calls first
    with pytest.raises(TypeError, match=rf"^{name}: expected a \w+Config, got dict"):
        user_cls(*args)


def test_patternrm_server_loads_the_patternrm_its_config_names():
    server = PatternRMServer.func_or_class(PatternRMConfig(kind="rules"))
    assert server.rm.kind == "rules"
