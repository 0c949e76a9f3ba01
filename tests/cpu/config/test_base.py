"""The one strict base, loader and error formatter (howeval.config.base), and the typed crystal/adapt blocks."""
from __future__ import annotations

import pytest
from pydantic import Field, ValidationError

from howeval.config import (
    AdaptConfig,
    ConfigError,
    CrystalConfig,
    StrictModel,
    load_sweep_config,
    load_yaml_config,
    merge_overrides,
    resolve_path,
    validate,
)


class _Tiny(StrictModel):
    n: int = Field(1, ge=1)
    name: str = "x"
    sub: dict = Field(default_factory=dict)


def test_every_config_class_derives_from_the_one_base():
    from howeval.config import SweepConfig
    from howeval.config.engines import ENGINE_OPTIONS
    from howeval.config.rewards import PatternConfig
    from howeval.ray_jobs.train_patternrm import TrainPatternRMConfig
    from howeval.reward_server.config import RewardServerConfig
    from howeval.training.config import TrainConfig

    # vllm's options are vLLM's own EngineArgs passed through (open by design, checked against EngineArgs)
    engines = [cls for name, cls in ENGINE_OPTIONS.items() if name != "vllm"]
    for cls in (SweepConfig, PatternConfig, TrainConfig, RewardServerConfig, TrainPatternRMConfig, *engines):
        assert issubclass(cls, StrictModel), cls


def test_strict_base_forbids_unknown_keys_and_is_frozen():
    with pytest.raises(ConfigError) as e:
        validate(_Tiny, {"n": 0, "colour": "red"}, "t.yaml")
    assert str(e.value) == ("t.yaml: 2 config error(s):\n"
                            "  n: Input should be greater than or equal to 1 (got 0)\n"
                            "  colour: unknown key (got 'red'); Accepted: n, name, sub")
    t = _Tiny()
    with pytest.raises(ValidationError, match="frozen"):
        t.n = 3


def test_loader_reads_yaml_merges_overrides_one_level_and_names_the_file(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("n: 2\nsub: {a: 1, b: 2}\n")
    got = load_yaml_config(p, _Tiny, overrides={"sub": {"b": 3}, "name": "y"})
    assert (got.n, got.name, got.sub) == (2, "y", {"a": 1, "b": 3})
    p.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match=r"c.yaml: the top level must be a mapping of config keys, got list"):
        load_yaml_config(p, _Tiny)
    p.write_text("n: -1\n")
    with pytest.raises(ConfigError, match=r"c.yaml: 1 config error\(s\):\n  n: Input should be greater than or equal to 1 \(got -1\)"):
        load_yaml_config(p, _Tiny)
    with pytest.raises(FileNotFoundError):
        load_yaml_config(tmp_path / "missing.yaml", _Tiny)


def test_merge_overrides_and_resolve_path(tmp_path):
    assert merge_overrides({"a": {"x": 1}, "b": 1}, {"a": {"y": 2}, "b": {"z": 3}}) == {"a": {"x": 1, "y": 2}, "b": {"z": 3}}
    assert resolve_path("d/m.jsonl", tmp_path) == str((tmp_path / "d" / "m.jsonl").resolve())
    assert resolve_path("/abs/m.jsonl", tmp_path) == "/abs/m.jsonl"
    assert resolve_path("s3://b/m.jsonl", tmp_path) == "s3://b/m.jsonl"


BASE = """
output_uri: out
benchmarks: [{path: m.jsonl}]
models: [{name: a, engine: hf, modes: {NT: {}}}]
"""


def test_crystal_and_adapt_blocks_are_typed_and_validated_at_load(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(BASE + "crystal: {tau: 0.5}\nadapt: {}\n")
    cfg = load_sweep_config(p)
    assert cfg.crystal == CrystalConfig(tau=0.5) and cfg.crystal.alpha == 0.5 and cfg.crystal.order == "lis"
    assert cfg.adapt == AdaptConfig() and cfg.adapt.modes == ["text", "adaptive", "oracle"]
    assert cfg.adapt.for_engine("hf").tool_format == "text" and cfg.adapt.for_engine("vllm").tool_format == "openai"
    assert AdaptConfig(tool_format="openai").for_engine("hf").tool_format == "openai"
    p.write_text(BASE + "crystal: {tau: 0.5, taus: 1}\nadapt: {modes: [text, zoom], max_turns: 0}\n")
    with pytest.raises(ConfigError) as e:
        load_sweep_config(p)
    msg = str(e.value)
    assert ("crystal.taus: unknown key (got 1); did you mean 'tau'? Accepted: tau, alpha, order, embedder, replicas, "
            "num_cpus") in msg
    assert "adapt.modes.1: Input should be 'text', 'adaptive' or 'oracle' (got 'zoom')" in msg
    assert "adapt.max_turns: Input should be greater than or equal to 1 (got 0)" in msg


def test_crystal_settings_accepts_the_typed_block():
    from howeval.benchmarks.crystal import CRYSTAL_DEFAULTS, crystal_settings

    assert crystal_settings(None) == CRYSTAL_DEFAULTS
    assert CRYSTAL_DEFAULTS.model_dump() == {"tau": 0.35, "alpha": 0.5, "order": "lis", "embedder": None,
                                             "replicas": 1, "num_cpus": 0.75}
    typed = CrystalConfig(order="kendall")
    assert crystal_settings(typed) is typed and crystal_settings(typed).order == "kendall"  # the object, not a dump
    assert crystal_settings({"alpha": 0.25}).alpha == 0.25
    with pytest.raises(ConfigError, match="crystal: 1 config error"):
        crystal_settings({"tua": 0.3})


def test_every_unknown_key_gets_the_closest_accepted_one_at_its_full_path(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(BASE.replace("modes: {NT: {}}", "modes: {NT: {systm_prompt: x}}, sampling: {temperture: 0.7}, "
                              "options: {batch_sise: 2}")
                 + "judges: {primry: rules, verifier: {llm_fallback: {model: m, options: {base_ur: x}}}}\n")
    with pytest.raises(ConfigError) as e:
        load_sweep_config(p)
    lines = str(e.value).splitlines()[1:]
    assert [ln.split(";")[0] for ln in lines] == [
        "  models.0.options.batch_sise: unknown hf option",
        "  models.0.modes.NT.systm_prompt: unknown key (got 'x')",
        "  models.0.sampling.temperture: unknown key (got 0.7)",
        "  judges.verifier.llm_fallback.options.base_ur: unknown key (got 'x')",
        "  judges.primry: unknown key (got 'rules')"]
    assert lines[2].endswith("did you mean 'temperature'? Accepted: max_tokens, temperature, top_p, top_k, min_p, "
                             "presence_penalty, repetition_penalty, seed")
    assert "did you mean 'base_url'? Accepted: base_url, base_url_env, api_key_env," in lines[3]
    assert lines[0].startswith("  models.0.options.batch_sise: unknown hf option; did you mean 'batch_size'? ")
    assert "did you mean 'primary'?" in lines[4] and "did you mean 'system_prompt'?" in lines[1]


def test_unknown_keys_inside_a_judge_kind_name_that_kinds_accepted_keys(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(BASE + "judges: {pattern: [{name: r, kind: rules, versoin: 2}, "
                        "{name: l, kind: llm, llm: {model: m, options: {qsp: 1}}}]}\n")
    with pytest.raises(ConfigError) as e:
        load_sweep_config(p)
    lines = str(e.value).splitlines()[1:]
    assert lines[0] == "  judges.pattern.0.rules.versoin: unknown key (got 2); did you mean 'version'? Accepted: name, kind, version"
    assert lines[1].startswith("  judges.pattern.1.llm.llm.options.qsp: unknown key (got 1); did you mean 'qps'? Accepted: base_url,")
