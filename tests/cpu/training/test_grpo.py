"""howeval.training.grpo: training config validation, the hash split, prompt rows, curriculum order and switch, rewards."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from howeval.training.grpo import (
    CurriculumSpec,
    GRPOReward,
    ScalingSpec,
    TrainConfig,
    build_rows,
    curriculum_rows,
    difficulty,
    load_train_config,
    reward_parts,
    score_items,
    train_split,
)
from reward_server.config import CPRConfig, PatternConfig

RECIPES = ["smoke", "baserl", "patternrl", "cpr", "cpr-curriculum"]


def cfg(**kw):
    base = {"name": "t", "reward": {"kind": "base"}, "grpo": {"num_generations": 2}}
    base.update(kw)
    return TrainConfig.model_validate(base)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipes_validate(recipe, repo_root):
    c = load_train_config(str(repo_root / "configs" / "train" / f"{recipe}.yaml"))
    assert c.name == recipe.replace("smoke", "grpo-smoke")
    assert c.data.path.endswith("datasets/demo/manifest.jsonl")
    kinds = {"smoke": "pattern", "baserl": "base", "patternrl": "pattern", "cpr": "cpr", "cpr-curriculum": "cpr"}
    assert c.reward.kind == kinds[recipe]
    assert (c.curriculum is not None) == (recipe == "cpr-curriculum")
    if recipe != "smoke":
        assert c.scaling.use_gpu and c.grpo["use_vllm"] and (repo_root / c.grpo["deepspeed"]).exists()
        json.loads((repo_root / c.grpo["deepspeed"]).read_text())


@pytest.mark.parametrize("kw, msg", [
    ({"grpo": {"num_generationz": 2}}, "unknown GRPOConfig field"),
    ({"grpo": {"output_dir": "x"}}, "set by the job"),
    ({"grpo": {"use_vllm": True}}, "needs scaling.use_gpu"),
    ({"grpo": {"num_generations": 1}}, "num_generations"),
    ({"curriculum": {"switch_step": 5}}, "needs reward.kind='cpr'"),
    ({"reward": {"kind": "cpr"}, "curriculum": {"switch_step": 5}, "grpo": {"max_steps": 5}}, "switch_step=5 must be < grpo.max_steps=5"),
    ({"reward": {"kind": "cpr"}, "curriculum": {"switch_step": 5}, "grpo": {"shuffle_dataset": True}}, "shuffle_dataset"),
    ({"reward": {"kind": "nope"}}, "kind"),
    ({"scaling": {"min_workers": 2}}, "both min_workers and max_workers"),
    ({"scaling": {"min_workers": 4, "max_workers": 2}}, "min_workers=4 must be <= max_workers=2"),
    ({"surprise": 1}, "surprise"),
])
def test_config_errors_name_the_rule(kw, msg):
    with pytest.raises(ValueError, match=msg):
        cfg(**kw)


def test_grpo_kwargs_and_scaling():
    c = cfg(grpo={"num_generations": 2, "beta": 0.04}, scaling={"min_workers": 1, "max_workers": 4, "use_gpu": True})
    assert c.grpo_kwargs() == {"num_generations": 2, "beta": 0.04, "use_cpu": False, "report_to": "none"}
    assert c.scaling.ray_kwargs()["num_workers"] == (1, 4)
    assert ScalingSpec(num_workers=3).ray_kwargs()["num_workers"] == 3
    cc = cfg(reward={"kind": "cpr"}, curriculum={"switch_step": 2})
    assert cc.grpo_kwargs()["shuffle_dataset"] is False
    assert cfg(grpo={"num_generations": 4, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 2}).prompts_per_step(2) == 8


def samples(n=50):
    return [{"sample_id": f"s{i}", "question": "q" * (i % 7 + 1), "answer": str(i), "answer_type": "integer_number",
             "options": None, "reference_steps": ["a"] * (i % 5)} for i in range(n)]


def test_train_split_is_deterministic_and_disjoint():
    s = samples(200)
    tr, ho = train_split(s, 0.8, 0), train_split(s, 0.8, 0, side="heldout")
    assert {x["sample_id"] for x in tr}.isdisjoint({x["sample_id"] for x in ho}) and len(tr) + len(ho) == 200
    assert 130 < len(tr) < 190
    assert [x["sample_id"] for x in train_split(list(reversed(s)), 0.8, 0)] == [x["sample_id"] for x in reversed(tr)]
    assert {x["sample_id"] for x in train_split(s[:10], 0.8, 0)} == {x["sample_id"] for x in tr if x in s[:10]}
    assert train_split(s, 0.8, 1) != tr
    assert len(train_split(s, 1.0, 0)) == 200 and train_split(s, 0.5, side="all") == s
    with pytest.raises(ValueError):
        train_split(s, 0.0)


def test_build_rows_uses_question_text():
    rows = build_rows(samples(3), system_prompt="sys", kind="base")
    assert rows[0]["prompt"][0] == {"role": "system", "content": "sys"}
    assert rows[0]["prompt"][1]["content"].endswith("Put your final answer in \\boxed{}.")
    assert rows[2]["reference_steps"] == ["a", "a"] and rows[2]["difficulty"] == 2 and rows[0]["options"] == []
    with pytest.raises(ValueError, match="lack them"):
        build_rows(samples(3), kind="cpr")  # s0 has no reference steps


def test_curriculum_order():
    rows = build_rows(samples(20))
    out = curriculum_rows(rows, switch_step=3, prompts_per_step=2)
    assert len(out) == 6 + 20
    phase2 = out[6:]
    keys = [difficulty({"reference_steps": r["reference_steps"], "question": r["prompt"][-1]["content"],
                        "sample_id": r["sample_id"]}) for r in phase2]
    assert [k[0] for k in keys] == sorted(k[0] for k in keys)  # increasing difficulty
    assert sorted(r["sample_id"] for r in phase2) == sorted(r["sample_id"] for r in rows)
    assert curriculum_rows(rows[:2], 3, 2)[:6] == curriculum_rows(rows[:2], 3, 2)[:6]  # cycles, deterministic
    assert len({r["sample_id"] for r in curriculum_rows(rows[:2], 3, 2)[:6]}) == 2


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


# ------------------------------------------------------------------ image prompts (VLM policies, issue 16)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipes_accept_a_vlm_policy_with_image_prompts(recipe, repo_root):
    c = load_train_config(str(repo_root / "configs" / "train" / f"{recipe}.yaml"),
                          overrides={"model": "embedded:tiny-vlm", "data": {"images": True}})
    assert c.model == "embedded:tiny-vlm" and c.data.images is True


def test_image_prompts_need_a_vlm_policy():
    with pytest.raises(ValueError, match="data.images=true needs a VLM policy"):
        cfg(data={"images": True})


def test_build_rows_with_images_and_dataset_decodes_them():
    import io

    from PIL import Image

    from howeval.training.grpo import images_dataset

    buf = io.BytesIO()
    Image.new("RGB", (8, 6), (255, 0, 0)).save(buf, format="PNG")
    png = buf.getvalue()
    s = {"sample_id": "a", "question": "Colour?", "options": None, "answer": "red", "answer_type": "extractive_text",
         "images": [png, png]}
    rows = build_rows([s], "sys", "base", images=True)
    assert rows[0]["images"] == [png, png]
    assert rows[0]["prompt"][1] == {"role": "user", "content": "Colour?\nPut your final answer in \\boxed{}."}
    ds = images_dataset(rows)
    imgs = ds[0]["images"]
    assert [im.size for im in imgs] == [(8, 6), (8, 6)] and imgs[0].convert("RGB").getpixel((0, 0)) == (255, 0, 0)
    assert "images" not in build_rows([s], None, "base")[0]
    with pytest.raises(ValueError, match="no image"):
        build_rows([{**s, "images": []}], None, "base", images=True)
