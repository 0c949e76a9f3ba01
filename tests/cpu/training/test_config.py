"""howeval.training.config: the training config's validation, TRL's GRPOConfig built at load, scaling."""
from __future__ import annotations

import json

import pytest

from howeval.training.config import ScalingSpec, TrainConfig, load_train_config

RECIPES = ["smoke", "baserl", "patternrl", "cpr", "cpr-curriculum", "composite", "crystal"]


def cfg(**kw):
    base = {"name": "t", "reward": {"kind": "base"}, "grpo": {"num_generations": 2}}
    base.update(kw)
    return TrainConfig.model_validate(base)


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipes_validate(recipe, repo_root):
    c = load_train_config(str(repo_root / "configs" / "train" / f"{recipe}.yaml"))
    assert c.name == recipe.replace("smoke", "grpo-smoke")
    assert c.data.path.endswith("datasets/demo/manifest.jsonl")
    kinds = {"smoke": "pattern", "baserl": "base", "patternrl": "pattern", "cpr": "cpr", "cpr-curriculum": "cpr",
             "composite": "composite", "crystal": "cpr"}
    assert c.reward.kind == kinds[recipe]
    assert (c.curriculum is not None) == (recipe in ("cpr-curriculum", "crystal"))
    assert c.pcgrad == (recipe == "crystal")
    if recipe == "crystal":  # the paper's recipe: Qwen2.5-VL-3B, 2,800 steps, PCGrad; one GPU, no DeepSpeed (PCGrad refuses it)
        assert "Qwen2.5-VL-3B" in c.model and c.grpo["max_steps"] == 2800 and c.scaling.num_workers == 1
        assert c.scaling.use_gpu and c.grpo["use_vllm"] and "deepspeed" not in c.grpo
    elif recipe != "smoke":
        assert c.scaling.use_gpu and c.grpo["use_vllm"] and (repo_root / c.grpo["deepspeed"]).exists()
        json.loads((repo_root / c.grpo["deepspeed"]).read_text())


@pytest.mark.parametrize("kw, msg", [
    ({"grpo": {"num_generationz": 2}}, "unknown GRPOConfig field"),
    ({"grpo": {"output_dir": "x"}}, "set by the job"),
    ({"grpo": {"use_vllm": True}}, "needs scaling.use_gpu"),
    ({"grpo": {"num_generations": 1}}, "num_generations"),
    ({"grpo": {"beta": "much"}}, r"grpo\.beta: Input should be a valid number"),
    ({"grpo": {"num_generations": 3, "per_device_train_batch_size": 4}},
     r"grpo \(num_generations=3, per_device_train_batch_size=4\): TRL's GRPOConfig refused it: generation_batch_size"),
    ({"grpo": {"lr_scheduler_type": "sideways"}}, "lr_scheduler_type=.*sideways is not a valid SchedulerType"),
    ({"grpo": {"report_to": "carrier-pigeon"}}, "report_to='carrier-pigeon'.*not supported"),
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


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipes_accept_a_vlm_policy_with_image_prompts(recipe, repo_root):
    c = load_train_config(str(repo_root / "configs" / "train" / f"{recipe}.yaml"),
                          overrides={"model": "embedded:tiny-vlm", "data": {"images": True}})
    assert c.model == "embedded:tiny-vlm" and c.data.images is True


def test_image_prompts_need_a_vlm_policy():
    with pytest.raises(ValueError, match="data.images=true needs a VLM policy"):
        cfg(data={"images": True})


def test_grpo_config_is_trls_own_built_at_load():
    c = cfg(grpo={"num_generations": 2, "learning_rate": "1e-5"})  # YAML reads 1e-5 as a string
    assert c.grpo == {"num_generations": 2, "learning_rate": 1e-5}  # only what was given: no copied defaults
    args = c.grpo_args()
    from trl import GRPOConfig

    default = GRPOConfig(output_dir="unused", use_cpu=True)
    assert isinstance(args, GRPOConfig) and args.learning_rate == 1e-5 and args.beta == default.beta
    assert c.prompts_per_step(1) == default.per_device_train_batch_size * default.gradient_accumulation_steps // 2
    assert c.report_to == [] and cfg(grpo={"num_generations": 2, "report_to": "tensorboard"}).report_to == ["tensorboard"]


def test_load_names_a_bad_grpo_value_before_ray(tmp_path):
    from howeval.config import ConfigError

    p = tmp_path / "t.yaml"
    p.write_text("name: t\nreward: {kind: base}\ngrpo: {num_generations: 2, max_steps: soon}\n")
    with pytest.raises(ConfigError, match=r"grpo\.max_steps: Input should be a valid integer"):
        load_train_config(str(p))


def test_with_changes_checks_the_change():
    from howeval.config import ConfigError, with_changes

    c = cfg(reward={"kind": "cpr"}, curriculum={"switch_step": 2})
    c2 = with_changes(c, "--max-steps", grpo={**c.grpo, "max_steps": 5})
    assert c2.grpo["max_steps"] == 5 and c2.curriculum is c.curriculum  # typed objects kept, not dumped
    with pytest.raises(ConfigError, match=r"(?s)--max-steps.*switch_step=2 must be < grpo.max_steps=2"):
        with_changes(c, "--max-steps", grpo={**c.grpo, "max_steps": 2})
