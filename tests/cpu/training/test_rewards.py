"""howeval.training.rewards: the TRL reward function (curriculum switch, rollout log), in-process scoring, reward parts."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.training.config import CurriculumSpec
from howeval.training.rewards import GRPOReward, reward_parts, score_items


def fake_scorer(calls):
    def score(items):
        calls.append(items)
        return [{"reward": 0.5 if it["kind"] == "cpr" else 1.0, "s_ver": 1.0} for it in items]
    return score


def test_curriculum_switch_on_global_step():
    calls = []
    r = GRPOReward(fake_scorer(calls), "cpr", CurriculumSpec(switch_step=2))
    args = dict(prompts=[[{"role": "user", "content": "q"}]], completions=[[{"role": "assistant", "content": "a"}]],
                answer=["1"], answer_type=["integer_number"], reference_steps=[["s"]])
    logged = {}
    assert r(**args, trainer_state=SimpleNamespace(global_step=0), log_metric=logged.__setitem__) == [1.0]
    assert calls[-1][0]["kind"] == "base" and logged["reward_parts/phase"] == 1.0
    assert r(**args, trainer_state=SimpleNamespace(global_step=1)) == [1.0]
    assert r(**args, trainer_state=SimpleNamespace(global_step=2), log_metric=logged.__setitem__) == [0.5]
    assert calls[-1][0]["kind"] == "cpr" and calls[-1][0]["reference_steps"] == ["s"] and logged["reward_parts/phase"] == 2.0
    assert calls[-1][0]["prompt"] == "q" and calls[-1][0]["response"] == "a"


def test_reward_logs_rollouts(tmp_path):
    path = tmp_path / "r.jsonl"
    r = GRPOReward(fake_scorer([]), "base", rollout_log=str(path))
    r(["q1", "q2"], ["\\boxed{1}", "x"], ["1", "1"], ["integer_number"] * 2)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["response"], x["result"]["reward"]) for x in lines] == [("\\boxed{1}", 1.0), ("x", 1.0)]


def test_score_items_matches_reward_functions():
    from howeval.judges.patternrm.format import rollout_key
    from howeval.rewards.functions import bernoulli_gate, cpr_reward, pattern_reward, pattern_score

    pc, cc = PatternConfig(p=0.6, seed=3), CPRConfig()
    labels = {"cot": True, "rep": False, "con": False, "pr": False}
    items = [{"prompt": f"q{i}", "response": f"so \\boxed{{{4 if i % 2 else 5}}}", "answer": "4",
              "answer_type": "integer_number", "kind": "pattern"} for i in range(12)]
    res = score_items(items, pc, cc, label_batch=lambda xs: [{"labels": labels, "error": None} for _ in xs])
    for it, r in zip(items, res):
        z = bernoulli_gate(rollout_key(it["prompt"], it["response"]), 0.6, 3)
        s_ver = 1.0 if it["response"].endswith("{4}") else 0.0
        assert r["z"] == z and r["s_ver"] == s_ver
        assert r["reward"] == pattern_reward(s_ver, pattern_score(labels) if z else None, z)
    assert {r["z"] for r in res} == {0, 1}
    deg = score_items(items[:4], PatternConfig(p=1.0), cc, label_batch=lambda xs: [{"labels": None, "error": "down"}] * len(xs))
    assert all(r["degraded"] and r["reward"] == r["s_ver"] for r in deg)
    cpr_items = [{**items[1], "kind": "cpr", "reference_steps": ["x"], "response": "Step 1: add.\nStep 2: \\boxed{4}"}]
    out = score_items(cpr_items, pc, cc, step_f1=lambda pairs: [0.5] * len(pairs))
    assert out[0]["reward"] == cpr_reward(True, 0.5) and out[0]["step_f1"] == 0.5
    assert score_items([{**cpr_items[0], "response": ""}], pc, cc)[0]["reward"] == 0.0
    assert score_items([{**items[0], "kind": "base"}], pc, cc)[0]["reward"] == 0.0


def test_reward_parts():
    p = reward_parts([
        {"reward": 0.95, "s_ver": 1.0, "z": 1, "s_pat": 0.5, "labels": {"cot": True, "rep": True, "con": False, "pr": False}},
        {"reward": 1.0, "s_ver": 1.0, "z": 1, "s_pat": 1.0, "labels": {"cot": False, "rep": False, "con": False, "pr": False}},
        {"reward": 0.0, "s_ver": 0.0, "z": 0},
    ])
    assert p["accuracy"] == pytest.approx(2 / 3) and p["trigger"] == 0.5 and p["pattern/rep"] == 0.5
    assert p["z"] == pytest.approx(2 / 3) and p["s_pat"] == 0.75 and "step_f1" not in p
