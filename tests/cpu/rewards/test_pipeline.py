"""The one reward pipeline: prepare -> model parts -> assemble, and score_batch's failure handling."""
from __future__ import annotations

import pytest

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.judges.patternrm.format import rollout_key
from howeval.rewards.functions import bernoulli_gate
from howeval.rewards.pipeline import (
    PatternRMUnavailable,
    RewardItemError,
    assemble,
    prepare,
    rollout_items,
    score_batch,
)

L = lambda *b: dict(zip(("cot", "rep", "con", "pr"), b))  # noqa: E731
ONE_PATTERN = L(True, False, False, False)  # s_pat = 0.75 (mean)


def item(response="The answer is \\boxed{4}.", answer="4", kind="pattern", prompt="2+2?", **kw):
    return {"prompt": prompt, "response": response, "answer": answer, "answer_type": "free_form", "kind": kind, **kw}


def labeller(labels=ONE_PATTERN):
    calls = []

    def f(xs):
        calls.append(list(xs))
        return [{"labels": labels, "error": None} for _ in xs]
    f.calls = calls
    return f


def test_pattern_rewards_hand_computed():
    pc, cc = PatternConfig(p=1.0), CPRConfig()
    out = score_batch([item(), item(response="\\boxed{5}")], pc, cc, labeller())
    # correct: 1 * (0.9 + 0.1 * 0.75) = 0.975; wrong: 0
    assert out[0]["reward"] == pytest.approx(0.975) and out[0]["s_pat"] == 0.75 and out[0]["z"] == 1
    assert out[1]["reward"] == 0.0 and out[1]["s_ver"] == 0.0 and not out[0]["degraded"]


def test_gate_zero_skips_patternrm_and_gives_s_ver():
    f = labeller()
    out = score_batch([item()], PatternConfig(p=0.0), CPRConfig(), f)
    assert out[0] == {**out[0], "reward": 1.0, "z": 0, "labels": None, "s_pat": None, "degraded": False}
    assert f.calls == []


def test_gate_is_the_servers_gate():
    it = item()
    plan = prepare([it], PatternConfig(p=0.6, seed=3))
    assert plan.z[0] == bernoulli_gate(rollout_key(it["prompt"], it["response"]), 0.6, 3)


def test_patternrm_down_degrades_with_reason_or_raises():
    def dead(xs):
        raise ConnectionError("replica died")

    out = score_batch([item(), item(kind="base")], PatternConfig(p=1.0), CPRConfig(), dead)
    assert out[0]["degraded"] and out[0]["reward"] == 1.0 and "replica died" in out[0]["error"]
    assert out[1] == {**out[1], "degraded": False, "reward": 1.0}
    with pytest.raises(PatternRMUnavailable, match="replica died"):
        score_batch([item()], PatternConfig(p=1.0), CPRConfig(), dead, on_failure="error")
    # a row-level error (unparseable output) degrades only that row
    rows = score_batch([item(), item(prompt="x")], PatternConfig(p=1.0), CPRConfig(),
                       lambda xs: [{"labels": None, "error": "parse"}, {"labels": ONE_PATTERN, "error": None}])
    assert rows[0]["degraded"] and rows[0]["error"] == "patternrm: parse" and not rows[1]["degraded"]


def test_cpr_rewards_and_dead_step_scorer():
    cc = CPRConfig()
    steps = "Step 1: add two and two.\nStep 2: that gives four, so \\boxed{4}."
    out = score_batch([item(steps, kind="cpr", reference_steps=["add", "four"])], PatternConfig(), cc,
                      step_f1=lambda pairs: [0.5] * len(pairs))
    assert out[0]["reward"] == pytest.approx(0.65 + 0.35 * 0.5) and out[0]["step_f1"] == 0.5

    def dead(pairs):
        raise TimeoutError("no answer")

    deg = score_batch([item(steps, kind="cpr", reference_steps=["add"])], PatternConfig(), cc, step_f1=dead)
    assert deg[0]["degraded"] and deg[0]["step_f1"] is None and deg[0]["reward"] == pytest.approx(0.65)
    # no predicted steps: F1 = 0 without calling the scorer
    assert score_batch([item("", kind="cpr", reference_steps=["a"])], PatternConfig(), cc)[0]["reward"] == 0.0


def test_composite_reward_is_additive_and_wrong_answers_keep_full_step_credit():
    """Issue 31: CRYSTAL's additive "Composite" ablation beside CPR: R = a_w·1[correct] + s_w·F1 (no λ)."""
    cc = CPRConfig()
    steps = "Step 1: add two and two.\nStep 2: that gives four, so \\boxed{4}."
    wrong = steps.replace("boxed{4}", "boxed{5}")
    f1 = lambda pairs: [0.5] * len(pairs)  # noqa: E731
    rows = score_batch([item(steps, kind="composite", reference_steps=["add", "four"]),
                        item(wrong, kind="composite", reference_steps=["add", "four"]),
                        item(wrong, kind="cpr", reference_steps=["add", "four"])], PatternConfig(), cc, step_f1=f1)
    assert [r["reward"] for r in rows] == pytest.approx([0.825, 0.175, 0.0525])  # 0.65+0.175; 0.35*0.5; *0.3 under CPR
    assert rows[0]["components"] == pytest.approx({"accuracy": 0.65, "reasoning": 0.175})
    assert rows[1]["components"] == pytest.approx({"accuracy": 0.0, "reasoning": 0.175})
    assert rows[2]["components"] == pytest.approx({"accuracy": 0.0, "reasoning": 0.0525})
    with pytest.raises(RewardItemError, match="items.0: kind 'composite' needs non-empty reference_steps"):
        prepare([item(kind="composite")], PatternConfig())
    assert rollout_items(["p"], ["c"], ["1"], ["free_form"], "composite", [["a"]])[0]["reference_steps"] == ["a"]


def test_every_row_carries_components_that_sum_to_its_reward():
    pc, cc = PatternConfig(p=1.0), CPRConfig(a_w=0.6, s_w=0.4)
    rows = score_batch([item(), item(kind="base"), item(response="\\boxed{5}")], pc, cc, labeller())
    assert rows[0]["components"] == pytest.approx({"accuracy": 0.9, "pattern": 0.075})
    assert rows[1]["components"] == {"accuracy": 1.0}
    assert rows[2]["components"] == {"accuracy": 0.0, "pattern": 0.0}
    cpr = score_batch([item("Step 1: add.\nSo \\boxed{4}.", kind="cpr", reference_steps=["add"])], pc, cc,
                      step_f1=lambda pairs: [1.0] * len(pairs))[0]
    assert cpr["components"] == pytest.approx({"accuracy": 0.6, "reasoning": 0.4})  # the config's a_w, not 0.65
    for r in (*rows, cpr):
        assert sum(r["components"].values()) == pytest.approx(r["reward"])


def test_bad_items_name_the_index():
    with pytest.raises(RewardItemError, match="items.1: kind"):
        prepare([item(), item(kind="nope")], PatternConfig())
    with pytest.raises(RewardItemError, match="items.0: kind 'cpr' needs"):
        prepare([item(kind="cpr")], PatternConfig())
    with pytest.raises(RewardItemError, match="items.0: the verifier refused this item: multiple_choice needs options"):
        prepare([{**item(answer="A"), "answer_type": "multiple_choice"}], PatternConfig())


def test_assemble_checks_lengths():
    plan = prepare([item()], PatternConfig(p=1.0))
    with pytest.raises(ValueError, match="1 requests"):
        assemble(plan, [], [], PatternConfig(p=1.0), CPRConfig())


def test_rollout_items_from_trl_columns():
    prompts = [[{"role": "system", "content": "s"}, {"role": "user", "content": "2+2?"}]]
    comps = [[{"role": "assistant", "content": "\\boxed{4}"}]]
    assert rollout_items(prompts, comps, [4], ["free_form"], "pattern") == [
        {"prompt": "2+2?", "response": "\\boxed{4}", "answer": "4", "answer_type": "free_form", "kind": "pattern"}]
    with pytest.raises(ValueError, match="answer has 2 values for 1"):
        rollout_items(["p"], ["c"], ["1", "2"], ["free_form"], "base")
    with pytest.raises(ValueError, match="reference_steps"):
        rollout_items(["p"], ["c"], ["1"], ["free_form"], "cpr")


def test_prepare_stops_when_its_request_is_abandoned():
    """Issue 21: the server sets ``stop`` when a request's answer can no longer be used (its timeout, the
    client gone); the worker thread then verifies no further item (no more math-verify children)."""
    import threading

    from howeval.rewards.pipeline import RequestAbandoned

    seen = []

    class Stop:
        def __init__(self):
            self.ev = threading.Event()

        def is_set(self):
            seen.append(len(seen))
            if len(seen) == 3:  # set while the third item is about to start
                self.ev.set()
            return self.ev.is_set()

    with pytest.raises(RequestAbandoned, match="before items.2 of 5"):
        prepare([item()] * 5, PatternConfig(p=0.0), "zero", Stop())
    assert len(seen) == 3
    assert len(prepare([item()] * 2, PatternConfig(p=0.0), "zero", threading.Event()).verdicts) == 2


class _CountingEmbedder:
    """Step-embedder double: similarity 1.0 between identical texts, else 0.0; records what it embedded."""

    def __init__(self):
        self.seen: list[str] = []

    def add(self, texts):
        self.seen.extend(texts)

    def similarity(self, pred, ref):
        import numpy as np

        return np.array([[1.0 if p == r else 0.0 for r in ref] for p in pred], dtype=float).reshape(len(pred), len(ref))


def test_cpr_item_predicted_steps_are_capped_and_the_rest_count_as_unmatched():
    """Issue 21: a valid ~180 KB cpr item made 2,500 steps and held the step scorer 20-38 s. Past
    ``cpr.max_pred_steps`` steps are not embedded, count as unmatched, and the row says so."""
    from howeval.rewards.pipeline import step_f1_batch

    cc = CPRConfig(max_pred_steps=10, max_step_chars=100)
    refs = [f"Step text number {i} adds {i} and {i}." for i in range(10)]
    long = " ".join(refs + [f"Filler sentence number {i} says nothing {'x' * 300}." for i in range(590)]) + " \\boxed{4}"
    plan = prepare([item(long, kind="cpr", reference_steps=refs)], PatternConfig(), cpr=cc)
    assert len(plan.steps[0]) == 10 and plan.n_pred[0] > 590
    assert "over max_pred_steps=10" in plan.truncated[0]
    (req,) = plan.step_requests()
    assert req["n_pred"] == plan.n_pred[0] and len(req["pred"]) == 10
    emb = _CountingEmbedder()
    (f1,) = step_f1_batch(emb, [req], cc)
    n = plan.n_pred[0]
    p, r = 10 / n, 1.0  # the 10 embedded steps match the 10 references; the others are unmatched
    assert f1 == pytest.approx(2 * p * r / (p + r))
    assert len([s for s in emb.seen if s.startswith("Filler")]) == 0 and max(len(s) for s in emb.seen) <= 100
    # a direct caller sending more than max_pred_steps gets the same cap
    emb2 = _CountingEmbedder()
    (f1b,) = step_f1_batch(emb2, [{"pred": refs + ["other"] * 50, "ref": refs}], cc)
    assert f1b == pytest.approx(2 * (10 / 60) / (10 / 60 + 1)) and len(emb2.seen) == 20
    rows = score_batch([item(long, kind="cpr", reference_steps=refs), item(kind="cpr", reference_steps=["add"])],
                       PatternConfig(), cc, step_f1=lambda pairs: step_f1_batch(_CountingEmbedder(), pairs, cc))
    assert "max_pred_steps=10" in rows[0]["truncated"] and not rows[0]["degraded"] and rows[0]["error"] is None
    assert rows[0]["step_f1"] == pytest.approx(f1) and "truncated" not in rows[1]
    # an item under the cap: nothing cut, nothing recorded
    assert prepare([item(kind="cpr", reference_steps=["a"])], PatternConfig(), cpr=cc).truncated == {}


def test_boxed_power_against_integer_gold_is_resolved_correct():
    plan = prepare([{"prompt": "2 cubed?", "response": "\\boxed{2^{3}}", "answer": "8",
                     "answer_type": "integer_number", "kind": "base"}], PatternConfig())
    assert plan.verdicts == [(True, "rule")]
