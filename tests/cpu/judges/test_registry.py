"""Tests for howeval.judges.registry: pattern judges built by kind; new kinds register with a decorator."""
from __future__ import annotations

import pytest

from howeval.config import PATTERN_JUDGE_CONFIGS, PatternRMJudgeConfig, RulesJudgeConfig, pattern_judge_config
from howeval.judges import registry
from howeval.judges.llm import LLMPatternJudge
from howeval.judges.registry import PATTERN_JUDGES, build_pattern_judge, register_pattern_judge
from howeval.judges.rules import RuleJudge


class _Engine:
    name = "fake"

    def generate(self, requests):
        return []


def test_builtin_kinds():
    assert {"rules", "llm"} <= set(PATTERN_JUDGES)
    assert isinstance(build_pattern_judge(RulesJudgeConfig(name="rules")), RuleJudge)
    seen = []
    cfg = pattern_judge_config(
        {"name": "j1", "kind": "llm", "version": "7", "with_image": False,
         "llm": {"model": "m", "options": {"base_url": "http://127.0.0.1:1/v1"}, "max_tokens": 64}})
    judge = build_pattern_judge(cfg, lambda model, options: seen.append((model, options)) or _Engine())
    assert isinstance(judge, LLMPatternJudge)
    assert (judge.name, judge.version.split("|")[0], judge.with_image, judge.max_tokens) == ("j1", "7", False, 64)
    assert seen == [("m", {"base_url": "http://127.0.0.1:1/v1"})]


def test_register_a_new_kind_and_reject_duplicates(monkeypatch):
    monkeypatch.setattr(registry, "PATTERN_JUDGES", registry.Registry("pattern judge kind"))
    registry.PATTERN_JUDGES.update(PATTERN_JUDGES)

    @register_pattern_judge("const")
    def _const(cfg, engine_builder):
        return RuleJudge()

    assert registry.PATTERN_JUDGES["const"] is _const and "const" not in PATTERN_JUDGES
    assert isinstance(build_pattern_judge(RulesJudgeConfig(name="c").model_copy(update={"kind": "const"})), RuleJudge)
    with pytest.raises(ValueError, match=r"kind 'const' already registered; registered: \[.*'const'.*\]"):
        register_pattern_judge("const")(_const)


def test_registry_doctests():
    import doctest

    assert doctest.testmod(registry).failed == 0


def test_unknown_kind_lists_registered():
    cfg = RulesJudgeConfig(name="x").model_copy(update={"kind": "oracle"})  # bypasses the config's Literal
    with pytest.raises(ValueError, match=r"judge 'x': unknown pattern judge kind 'oracle'; registered: \['llm', 'patternrm', 'rules'"):
        build_pattern_judge(cfg)


def test_patternrm_kind_builds_a_protocol_judge():
    from howeval.judges.base import PatternJudge

    cfg = PatternRMJudgeConfig(name="prm", patternrm={"kind": "rules"})
    j = build_pattern_judge(cfg)
    assert isinstance(j, PatternJudge) and j.name == "prm" and j.version.startswith("1:rules@")
    (v,) = j.judge_batch([{"question": "q", "response": "Wait, no. The answer is 3."}])
    assert v.ok and v.labels["cot"] and v.judge == "prm"
    with pytest.raises(ValueError, match="needs kind 'patternrm'"):
        pattern_judge_config({"name": "x", "kind": "rules", "patternrm": {"kind": "rules"}})
    with pytest.raises(ValueError, match="kind"):
        pattern_judge_config({"name": "x", "kind": "patternrm", "patternrm": {"kind": "oracle"}})


def test_one_config_model_per_kind_and_a_builder_for_each():
    assert set(PATTERN_JUDGE_CONFIGS) == set(PATTERN_JUDGES) == {"rules", "llm", "patternrm"}
    for kind, cls in PATTERN_JUDGE_CONFIGS.items():
        assert cls.model_fields["kind"].default == kind
    with pytest.raises(ValueError, match=r"unknown pattern judge kind; registered: \['llm', 'patternrm', 'rules'\]"):
        pattern_judge_config({"name": "x", "kind": "oracle"})
    with pytest.raises(ValueError, match="kind 'llm' needs an 'llm:' block"):
        pattern_judge_config({"name": "x", "kind": "llm"})


def test_a_run_config_stored_before_per_kind_models_still_loads():
    old = {"name": "x", "kind": "rules", "llm": None, "patternrm": None, "with_image": True, "version": "2"}
    assert pattern_judge_config(old) == RulesJudgeConfig(name="x", version="2")
    assert pattern_judge_config({**old, "kind": "patternrm"}) == PatternRMJudgeConfig(name="x", version="2")
