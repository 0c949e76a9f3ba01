"""The reward server with the trained PatternRM gives a rollout the reward the GRPO trainer's in-process
scorer gives it (same pipeline, same gate, same PatternRM), through the TRL adapter the trainer uses."""
from __future__ import annotations

import pytest

from fakes.reward_server import running_reward_server

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TOKEN_ENV = "HOWEVAL_TEST_REWARD_TOKEN"
TOKEN = "trained-rm-token"


def test_grpo_reward_equals_server_reward_with_trained_patternrm():
    from howeval.judges.patternrm.head import embedded_patternrm
    from howeval.rewards.client import RewardClient
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


def test_load_64_clients_with_the_trained_patternrm_no_row_degrades_while_it_can_scale():
    """Issue 21: at 64 clients with no fault, 80 pattern rows came back degraded (PatternRM past
    patternrm_timeout_s: its one replica never scaled). Now PatternRM autoscales (MODEL_AUTOSCALING) before
    the timeout bites: 64 clients x HOWEVAL_LOAD_TEST_SECONDS (20 s), p = 1 (every item labelled by the
    trained PatternRM), every answer 200 and no row degraded."""
    import asyncio
    import os
    import time

    import httpx
    from ray import serve

    from howeval.judges.patternrm.head import embedded_patternrm

    embedded_patternrm()
    seconds = float(os.environ.get("HOWEVAL_LOAD_TEST_SECONDS", "20"))
    args = {"pattern": {"p": 1.0, "seed": 0, "mode": "mean"}, "limits": {"patternrm_timeout_s": 20.0}}
    out: list[tuple[int, dict | None]] = []
    with running_reward_server(TOKEN_ENV, TOKEN, args, patternrm={"kind": "trained"}) as url:
        async def drive() -> None:
            stop = time.monotonic() + seconds

            async def client(c: httpx.AsyncClient, k: int) -> None:
                j = 0
                while time.monotonic() < stop:
                    items = [{"prompt": f"What is {k} + {j}?", "response": f"{k} + {j} = {k + j}. Wait, let me re-check: "
                              f"{k} + {j} = {k + j}. The answer is \\boxed{{{k + j}}}.", "answer": str(k + j),
                              "answer_type": "free_form", "kind": "pattern"},
                             {"prompt": f"What is {k} * 2?", "response": f"By analyzing it carefully, the answer is {2 * k}.",
                              "answer": str(2 * k), "answer_type": "free_form", "kind": "pattern"}]
                    r = await c.post(url + "/v1/rewards", json={"items": items},
                                     headers={"Authorization": f"Bearer {TOKEN}"})
                    out.append((r.status_code, r.json() if r.status_code == 200 else None))
                    j += 1

            limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
            async with httpx.AsyncClient(timeout=120, limits=limits) as c:
                await asyncio.gather(*(client(c, k) for k in range(64)))

        asyncio.run(drive())
        status = serve.status().applications["patternrm"].deployments["PatternRMServer"]
        replicas = sum(status.replica_states.values()) if getattr(status, "replica_states", None) else None
    codes = [c for c, _ in out]
    assert len(codes) >= 64 and codes.count(200) == len(codes), {c: codes.count(c) for c in set(codes)}
    rows = [r for _, body in out for r in body["rewards"]]
    degraded = [r["error"] for r in rows if r["degraded"]]
    assert not degraded, (len(degraded), len(rows), degraded[:3])
    assert all(r["labels"] is not None for r in rows)
    print(f"{len(out)} requests, {len(rows)} rows, 0 degraded; PatternRM replicas at the end: {replicas}")
