"""The reward server with the trained PatternRM gives a rollout the reward the GRPO trainer's in-process
scorer gives it (same pipeline, same gate, same PatternRM), through the TRL adapter the trainer uses."""
from __future__ import annotations

import pytest

from fakes.reward_server import running_reward_server

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TOKEN_ENV = "HOWEVAL_TEST_REWARD_TOKEN"
TOKEN = "trained-rm-token"


def test_grpo_reward_equals_server_reward_with_trained_patternrm():
    from howeval.rewards.client import RewardClient
    from howeval.judges.patternrm.head import embedded_patternrm
    from howeval.training.config import RewardSpec
    from howeval.training.rewards import GRPOReward, InProcessScorer

    embedded_patternrm()  # trained once and cached before a replica loads it
    spec = RewardSpec.model_validate({"source": "inprocess", "kind": "pattern", "pattern": {"p": 0.6, "seed": 0},
                                      "patternrm": {"kind": "trained"}})
    prompts = [[{"role": "user", "content": f"What is {k} + {k}?"}] for k in range(12)]
    completions = [[{"role": "assistant", "content": t}] for t in (
        [f"{k} + {k} = {2 * k}, so the answer is \\boxed{{{2 * k}}}." for k in range(4)]
        + [f"Wait, let me re-check. {k} + {k} is {2 * k}. {k} + {k} is {2 * k}. \\boxed{{{2 * k}}}" for k in range(4, 8)]
        + [f"By analyzing it carefully, it is clear that the answer is \\boxed{{{2 * k + (k % 2)}}}." for k in range(8, 12)])]
    answers = [str(2 * k) for k in range(12)]
    local = GRPOReward(InProcessScorer(spec), "pattern")
    want = local(prompts=prompts, completions=completions, answer=answers, answer_type=["free_form"] * 12)
    args = {"pattern": {"p": 0.6, "seed": 0, "mode": "mean"}}
    with running_reward_server(TOKEN_ENV, TOKEN, args, patternrm={"kind": "trained"}) as url:
        with RewardClient(url, token_env=TOKEN_ENV) as client:
            remote = GRPOReward(client.score, "pattern")
            got = remote(prompts=prompts, completions=completions, answer=answers, answer_type=["free_form"] * 12)
            rows = client.score([{"prompt": f"What is {k} + {k}?", "response": completions[k][0]["content"],
                                  "answer": answers[k], "answer_type": "free_form", "kind": "pattern"} for k in range(12)])
    assert got == pytest.approx(want)
    assert not any(r["degraded"] for r in rows) and {r["z"] for r in rows} == {0, 1}
    assert any(r["labels"] and any(r["labels"].values()) for r in rows)  # the trained PatternRM labelled something
