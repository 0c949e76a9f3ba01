"""PCGrad over a reward's components (CRYSTAL; Yu et al. 2020): the projection on planted gradients, the
per-component advantages, the component reward functions, and one real TRL GRPO step with it on CPU."""
from __future__ import annotations

import pytest
import torch

from howeval.training.pcgrad import component_advantages, project_conflicting


def test_conflicting_gradients_are_projected_to_non_negative_dot_products():
    g1, g2 = torch.tensor([3.0, 1.0, 0.0]), torch.tensor([-2.0, 2.0, 1.0])  # g1·g2 = -4
    (p1, p2), st = project_conflicting([g1, g2])
    # g1 - (-4/9)·g2 and g2 - (-4/10)·g1, by hand
    assert p1.tolist() == pytest.approx([3 - 8 / 9, 1 + 8 / 9, 4 / 9])
    assert p2.tolist() == pytest.approx([-2 + 1.2, 2 + 0.4, 1.0])
    assert float(p1 @ g2) == pytest.approx(0.0, abs=1e-6) and float(p2 @ g1) == pytest.approx(0.0, abs=1e-6)
    assert float(p1 @ p2) >= 0
    assert st.conflicts == 2 and st.cos_before == pytest.approx(-4 / (10**0.5 * 3)) and st.cos_after >= 0


def test_non_conflicting_gradients_are_left_unchanged():
    g1, g2 = torch.tensor([1.0, 2.0]), torch.tensor([2.0, -0.5])  # dot = 1 > 0
    (p1, p2), st = project_conflicting([g1, g2])
    assert torch.equal(p1, g1) and torch.equal(p2, g2) and st.conflicts == 0
    assert st.cos_before == pytest.approx(st.cos_after)
    (z,), st1 = project_conflicting([torch.tensor([1.0, -1.0])])  # one task: nothing to project
    assert z.tolist() == [1.0, -1.0] and st1 == type(st1)(0, 1.0, 1.0)


def test_three_tasks_project_against_the_original_gradients_in_order():
    g = [torch.tensor([1.0, 0.0]), torch.tensor([-1.0, 1.0]), torch.tensor([0.0, 1.0])]
    out, st = project_conflicting(g)
    # task 0 conflicts with task 1 only: [1,0] - (-1/2)[-1,1] = [0.5, 0.5]; task 1 with task 0: [0, 1];
    # task 2 with none (dots 0 and 1)
    assert [x.tolist() for x in out] == [[0.5, 0.5], [0.0, 1.0], [0.0, 1.0]] and st.conflicts == 2
    rev, _ = project_conflicting(g, order=[[2, 1], [2, 0], [1, 0]])
    assert rev[0].tolist() == [0.5, 0.5]
    with pytest.raises(ValueError, match=r"order\[0\]: 0 is not another task's index"):
        project_conflicting(g, order=[[0], [0], [0]])
    with pytest.raises(ValueError, match=r"grads\[1\]: shape \(3,\)"):
        project_conflicting([torch.zeros(2), torch.zeros(3)])


def test_component_advantages_normalize_each_component_within_its_group():
    r = torch.tensor([[1.0, 0.2], [0.0, 0.2], [1.0, 0.0], [1.0, 0.4]])  # 2 prompts x 2 generations, 2 components
    a = component_advantages(r, 2, "group")
    s = 2**0.5 / 2  # the sample std of a pair {x, y} is |x - y| / sqrt(2)
    assert a[:, 0].tolist() == pytest.approx([0.5 / (s + 1e-4), -0.5 / (s + 1e-4), 0.0, 0.0])
    assert a[:, 1].tolist() == pytest.approx([0.0, 0.0, -0.2 / (0.4 * s + 1e-4), 0.2 / (0.4 * s + 1e-4)])
    assert component_advantages(r, 2, "none")[:, 1].tolist() == pytest.approx([0.0, 0.0, -0.2, 0.2])
    nan = component_advantages(torch.tensor([[float("nan")], [1.0]]), 2, "none")
    assert nan.tolist() == [[0.0], [0.0]]
    with pytest.raises(ValueError, match="multiple of num_generations=3"):
        component_advantages(r, 3)


def test_component_reward_functions_split_one_scoring_call():
    from howeval.training.rewards import ComponentRewards, GRPOReward

    calls = []

    def scorer(items):
        calls.append(items)
        return [{"reward": 0.825, "s_ver": 1.0, "components": {"accuracy": 0.65, "reasoning": 0.175}},
                {"reward": 0.0525, "s_ver": 0.0, "components": {"accuracy": 0.0, "reasoning": 0.0525}}]

    comp = ComponentRewards(GRPOReward(scorer, "cpr"))
    kw = dict(prompts=["q", "q"], completions=["a", "b"], answer=["1", "1"], answer_type=["free_form"] * 2,
              reference_steps=[["s"], ["s"]])
    acc, rea = comp.functions
    assert [f.__name__ for f in comp.functions] == ["cpr_accuracy", "cpr_reasoning"]
    assert acc(**kw) == [0.65, 0.0] and rea(**kw) == [0.175, 0.0525] and len(calls) == 1
    with pytest.raises(ValueError, match="asked before the batch was scored"):
        rea(**{**kw, "completions": ["c", "d"]})


def test_pcgrad_config_needs_two_components_and_no_sharded_engine(repo_root):
    from howeval.training.config import load_train_config

    path = str(repo_root / "configs" / "train" / "smoke.yaml")
    assert load_train_config(path, {"pcgrad": True}).pcgrad is True  # kind pattern: accuracy + pattern
    with pytest.raises(ValueError, match=r"pcgrad: true needs a reward with two or more components .*'base'"):
        load_train_config(path, {"pcgrad": True, "reward": {"source": "inprocess", "kind": "base"}})
    # data parallelism (DDP), fixed or elastic: the component gradients are averaged over the workers
    assert load_train_config(path, {"pcgrad": True, "scaling": {"num_workers": 2}}).scaling.num_workers == 2
    elastic = load_train_config(path, {"pcgrad": True, "scaling": {"min_workers": 1, "max_workers": 2}})
    assert elastic.scaling.elastic
    with pytest.raises(ValueError, match=r"pcgrad: true does not run with grpo.deepspeed: .*ZeRO.*Fix: remove grpo.deepspeed"):
        load_train_config(path, {"pcgrad": True, "scaling": {"num_workers": 2},
                                 "grpo": {"deepspeed": {"zero_optimization": {"stage": 2}}}})
    # deepspeed: null is DeepSpeed off (TRL's reading), not a refusal
    assert load_train_config(path, {"pcgrad": True, "scaling": {"num_workers": 2}, "grpo": {"deepspeed": None}}).pcgrad
    with pytest.raises(ValueError, match=r"pcgrad: true does not run with grpo.fsdp: .*Fix: remove grpo.fsdp"):
        load_train_config(path, {"pcgrad": True, "grpo": {"fsdp": "full_shard"}})
    with pytest.raises(ValueError, match="remove grpo.reward_weights"):
        load_train_config(path, {"pcgrad": True, "grpo": {"reward_weights": [1.0, 1.0]}})


def test_two_processes_project_the_averaged_component_gradients_and_agree(tmp_path):
    """DDP on 2 CPU processes (gloo, ``torch.multiprocessing.spawn``; the worker is tests/pcgrad_ddp.py): each rank
    holds half of a 4-row batch. The update every rank applies is the single-process PCGrad of the component
    gradients averaged over the ranks (= those of the whole batch), the same on both ranks; DDP's own sync adds
    nothing (0 buckets reduced, where a plain DDP backward reduces one). Rank 0's local gradients do not conflict
    and rank 1's do, so projecting locally and averaging would be another update."""
    import pcgrad_ddp as w
    import torch.multiprocessing as mp

    mp.spawn(w.worker, args=(2, str(tmp_path / "pg_init"), str(tmp_path)), nprocs=2, join=True)
    r = [torch.load(tmp_path / f"rank{k}.pt") for k in (0, 1)]
    full = w.component_grads(slice(0, 4))  # one process on the whole batch
    assert full[0].tolist() == [0.75, 1.0, 0.0, 0.0] and full[1].tolist() == [-0.5, -1.25, -0.25, 1.0]
    (p0, p1), st = project_conflicting(full)
    expected = p0 + p1
    assert st.conflicts == 2 and float(full[0] @ full[1]) == pytest.approx(-1.625)
    assert float(p0 @ full[1]) >= -1e-6 and float(p1 @ full[0]) >= -1e-6  # the conflicting pair, after: no conflict
    for k in (0, 1):
        assert torch.allclose(r[k]["grad"], expected, atol=1e-6), (k, r[k]["grad"], expected)
        assert torch.equal(r[k]["total"], r[k]["grad"])
        assert r[k]["stats"][0] == 2 and r[k]["stats"][1] == pytest.approx(st.cos_before) and r[k]["stats"][2] >= 0
        assert r[k]["buckets_after_pcgrad"] == 0
        assert torch.load(tmp_path / f"rank{k}.plain.pt")["buckets_after_plain"] == 1
    assert torch.equal(r[0]["grad"], r[1]["grad"])  # bit for bit: both ranks step the same way
    assert float(r[0]["local"][0] @ r[0]["local"][1]) > 0 > float(r[1]["local"][0] @ r[1]["local"][1])
    local = [sum(project_conflicting(r[k]["local"])[0]) for k in (0, 1)]
    assert not torch.allclose((local[0] + local[1]) / 2, expected, atol=1e-3)  # PCGrad-then-DDP-average differs


def _pcgrad_trainer(tmp_path, reward_funcs, beta=0.0, pcgrad=True):
    import warnings

    from transformers import AutoModelForCausalLM

    from datasets import Dataset
    from howeval.engines.tiny_vlm import tiny_lm_checkpoint
    from howeval.training.config import build_grpo_args
    from howeval.training.pcgrad import pcgrad_trainer_class

    args = build_grpo_args(dict(max_steps=1, per_device_train_batch_size=4, num_generations=4, max_completion_length=8,
                                learning_rate=1e-2, beta=beta, logging_steps=1, save_strategy="no", use_cpu=True,
                                report_to="none", disable_tqdm=True, seed=0, dataloader_num_workers=0), str(tmp_path))
    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "What is 2+2?"}]}] * 4)
    model = AutoModelForCausalLM.from_pretrained(tiny_lm_checkpoint())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from trl import GRPOTrainer

        cls = pcgrad_trainer_class() if pcgrad else GRPOTrainer
        return cls(model=model, reward_funcs=reward_funcs, args=args, train_dataset=data)


def _length(completions, **_):
    return [float(len(c[0]["content"])) for c in completions]


@pytest.mark.slow
def test_a_grpo_step_with_opposed_components_projects_them_and_logs_it(tmp_path):
    """Planted conflict: component B = −A/2, so after each component's group normalization the policy gradients
    are exactly opposed (cosine −1). PCGrad projects each onto the other's normal plane: both become 0 and the
    step leaves the weights as they were, where TRL's summed reward (A/2) moves them."""
    def neg_half_length(completions, **kw):
        return [-x / 2 for x in _length(completions)]

    tr = _pcgrad_trainer(tmp_path, [_length, neg_half_length])
    tr.train()
    logs = [h for h in tr.state.log_history if "pcgrad/conflicts" in h]
    assert logs, tr.state.log_history
    assert logs[0]["pcgrad/conflicts"] == 2 and logs[0]["pcgrad/cos_before"] == pytest.approx(-1.0, abs=1e-4)
    assert logs[0]["pcgrad/cos_after"] >= 0

    plain = _pcgrad_trainer(tmp_path / "plain", [_length, neg_half_length], pcgrad=False)  # same data and seed
    plain.train()
    assert not any("pcgrad/conflicts" in h for h in plain.state.log_history)
    # what is left after the projection is rounding (the +1e-4 of each normalization): ~1/1000 of the plain step's
    assert logs[0]["grad_norm"] < 0.01 * plain.state.log_history[0]["grad_norm"], (logs, plain.state.log_history)


@pytest.mark.slow
def test_a_grpo_step_with_aligned_components_is_not_projected_and_trains(tmp_path):
    def half_length(completions, **kw):
        return [x / 2 for x in _length(completions)]

    tr = _pcgrad_trainer(tmp_path, [_length, half_length], beta=0.04)  # beta > 0: the KL gradient is added apart
    before = [p.detach().clone() for p in tr.model.parameters()]
    tr.train()
    log = next(h for h in tr.state.log_history if "pcgrad/conflicts" in h)
    assert log["pcgrad/conflicts"] == 0 and log["pcgrad/cos_before"] == pytest.approx(1.0, abs=1e-4)
    assert log["pcgrad/cos_after"] == pytest.approx(log["pcgrad/cos_before"])
    assert not all(torch.allclose(a, b) for a, b in zip(before, tr.model.parameters()))


@pytest.mark.slow
def test_a_real_grpo_step_on_two_ddp_processes_projects_global_gradients(tmp_path):
    """TRL's GRPO step with PCGrad on 2 CPU processes (tests/pcgrad_ddp.py::trainer_worker; accelerate's
    MULTI_CPU, the model wrapped in DDP): opposed components are projected (2 conflicts, cosine −1, the step
    about 0); aligned ones with β > 0 train, and both ranks end with the same weights bit for bit although each
    saw its own prompt (their local gradients differ: without the all_reduce, and with DDP's sync bypassed by
    ``torch.autograd.grad``, the ranks would drift apart)."""
    import pcgrad_ddp as w
    import torch.multiprocessing as mp

    mp.spawn(w.trainer_worker, args=(2, str(tmp_path / "pg_init"), str(tmp_path)), nprocs=2, join=True)
    r = [torch.load(tmp_path / f"trainer.rank{k}.pt") for k in (0, 1)]
    for k in (0, 1):
        for name in ("opposed", "aligned"):
            run = r[k][name]
            assert (run["wrapper"], run["distributed"], run["processes"]) == ("DistributedDataParallel", "MULTI_CPU", 2)
            assert len(run["prompts"]) == 1, run["prompts"]
        opp, ali = r[k]["opposed"]["log"], r[k]["aligned"]["log"]
        assert opp["pcgrad/conflicts"] == 2 and opp["pcgrad/cos_before"] == pytest.approx(-1.0, abs=1e-4)
        assert opp["pcgrad/cos_after"] >= 0 and opp["grad_norm"] < 0.05, opp
        assert ali["pcgrad/conflicts"] == 0 and ali["pcgrad/cos_before"] == pytest.approx(1.0, abs=1e-4)
        assert ali["grad_norm"] > 0.1, ali
    assert r[0]["aligned"]["prompts"] != r[1]["aligned"]["prompts"]  # one prompt each: their local gradients differ
    assert torch.equal(r[0]["aligned"]["params"], r[1]["aligned"]["params"])
    assert torch.equal(r[0]["opposed"]["params"], r[1]["opposed"]["params"])
    print({name: {k: r[0][name]["log"][k] for k in ("pcgrad/conflicts", "pcgrad/cos_before", "pcgrad/cos_after",
                                                    "grad_norm")} for name in ("opposed", "aligned")})
