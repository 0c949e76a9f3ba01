"""Reward server on a local Serve instance (127.0.0.1): rewards, auth, limits, load, bad input, degraded.

One module-scoped fixture starts Ray + Serve and both applications once (PatternRM = the rule judge:
deterministic labels to hand-compute rewards). The tests that need other settings, or break something,
deploy their own pair of applications beside it (``app_pair``, or the degraded test's own), so the shared
server is never changed and the tests run in any order.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import socket

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from fakes.reward_server import running_reward_server

pytestmark = pytest.mark.ray

TOKEN_ENV = "HOWEVAL_TEST_REWARD_TOKEN"
TOKEN = "test-token-7f3a"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server():
    args = {"pattern": {"p": 1.0, "seed": 0, "mode": "mean"},
            "limits": {"max_body_bytes": 200_000, "patternrm_timeout_s": 5.0, "body_timeout_s": 2.0}}
    with running_reward_server(TOKEN_ENV, TOKEN, args) as url:
        yield url


@contextlib.contextmanager
def app_pair(server: str, name: str, batching: dict | None = None, limits: dict | None = None,
             ingress_options: dict | None = None, extra_args: dict | None = None):
    """A rules PatternRM application ``patternrm-<name>`` (``batching``: its ``user_config``) and a reward
    application ``reward-<name>`` on ``/<name>`` wired to it (p = 1, so every pattern item goes to PatternRM;
    ``limits`` and ``ingress_options`` for ``RewardIngress``), beside the shared server. Yields the reward
    application's URL; both applications are deleted on exit."""
    from ray import serve

    from howeval.reward_server.app import PatternRMServer, RewardIngress, StepScorer
    from howeval.reward_server.config import PatternRMConfig, load_server_config

    rm = PatternRMServer.options(user_config=batching) if batching else PatternRMServer
    ingress = RewardIngress.options(**ingress_options) if ingress_options else RewardIngress
    cfg = load_server_config({"auth": {"token_env": TOKEN_ENV}, "patternrm_app": f"patternrm-{name}",
                              "pattern": {"p": 1.0, "seed": 0, "mode": "mean"}, **({"limits": limits} if limits else {}),
                              **(extra_args or {})})
    try:
        serve.run(rm.bind(PatternRMConfig(kind="rules")), name=f"patternrm-{name}", route_prefix=None)
        serve.run(ingress.bind(StepScorer.bind(cfg.cpr), cfg), name=f"reward-{name}",
                  route_prefix=f"/{name}")
        yield f"{server}/{name}"
    finally:
        serve.delete(f"reward-{name}")
        serve.delete(f"patternrm-{name}")


def item(response, answer="4", kind="pattern", **kw):
    return {"prompt": "What is 2+2?", "response": response, "answer": answer, "answer_type": "free_form", "kind": kind, **kw}


def post(url, body, headers=AUTH, **kw):
    return httpx.post(url + "/v1/rewards", json=body, headers=headers, timeout=60, **kw)


CLEAN = "2 + 2 = 4, so the answer is \\boxed{4}."
TWO_PATTERNS = ("Wait, let me re-check the sum. Two plus two makes four in this simple sum. "
                "Two plus two makes four in this simple sum. The answer is \\boxed{4}.")  # rules: cot + rep


def test_exact_rewards(server):
    steps = ["Add 2 and 2", "The sum is 4"]
    r = post(server, {"items": [
        item(CLEAN),                                           # correct, no pattern, z = 1 (p = 1)
        item(TWO_PATTERNS),                                     # correct, 2 of 4 patterns
        item("The answer is \\boxed{5}."),                      # wrong -> 0
        item(CLEAN, kind="base"),
        item("Step 1: Add 2 and 2.\nStep 2: The sum is 4.\nThe answer is \\boxed{4}.", kind="cpr", reference_steps=steps),
        item("The answer is \\boxed{5}.", kind="cpr", reference_steps=steps),  # wrong, one step -> F1 < 1
    ]})
    assert r.status_code == 200, r.text
    res = r.json()["rewards"]
    clean, two, wrong, base, cpr_ok, cpr_wrong = res
    assert clean["z"] == 1 and clean["labels"] == {"cot": False, "rep": False, "con": False, "pr": False}
    assert clean["reward"] == pytest.approx(1.0) and clean["s_pat"] == 1.0 and not clean["degraded"]
    assert two["labels"] == {"cot": True, "rep": True, "con": False, "pr": False}
    assert two["s_pat"] == 0.5 and two["reward"] == pytest.approx(0.9 + 0.1 * (1 - 0.5))  # 0.95
    assert wrong["reward"] == 0.0 and wrong["s_ver"] == 0.0
    assert base == {**base, "reward": 1.0, "s_ver": 1.0, "labels": None, "z": None, "step_f1": None}
    assert cpr_ok["step_f1"] == pytest.approx(1.0) and cpr_ok["reward"] == pytest.approx(0.65 + 0.35 * 1.0)
    assert cpr_ok["labels"] is None and cpr_ok["z"] is None
    f1 = cpr_wrong["step_f1"]
    assert 0.0 <= f1 < 1.0 and cpr_wrong["reward"] == pytest.approx(0.35 * f1 * 0.3)


def test_same_functions_as_trainer(server):
    """The server's reward equals howeval.rewards.functions applied in-process with the same gate key."""
    from howeval.judges.patternrm.format import rollout_key
    from howeval.rewards.functions import bernoulli_gate, pattern_reward, pattern_score

    it = item(TWO_PATTERNS)
    got = post(server, {"items": [it]}).json()["rewards"][0]
    z = bernoulli_gate(rollout_key(it["prompt"], it["response"]), p=1.0, seed=0)
    assert got["z"] == z
    assert got["reward"] == pattern_reward(1.0, pattern_score(got["labels"], "mean"), z)


def test_openrlhf_shape(server):
    body = {"query": ["What is 2+2? " + CLEAN, "What is 2+2? The answer is \\boxed{5}."],
            "prompts": ["What is 2+2? ", "What is 2+2? "], "labels": ["4", json.dumps({"answer": "4", "kind": "base"})]}
    r = httpx.post(server + "/get_reward", json=body, headers=AUTH, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["rewards"] == [pytest.approx(1.0), 0.0]


def test_auth_and_open_routes(server):
    assert post(server, {"items": [item(CLEAN)]}, headers={}).status_code == 401
    assert post(server, {"items": [item(CLEAN)]}, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert post(server, {"items": [item(CLEAN)]}, headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 401
    assert httpx.post(server + "/get_reward", json={}).status_code == 401
    # two Authorization headers: ambiguous, refused whatever their values
    two = [("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer nope"), ("Content-Type", "application/json")]
    r = httpx.post(server + "/v1/rewards", content=json.dumps({"items": [item(CLEAN)]}), headers=two, timeout=60)
    assert r.status_code == 400 and "Authorization" in r.text
    h = httpx.get(server + "/healthz")
    assert h.status_code == 200 and h.json() == {"status": "ok", "ready": True, "patternrm": "up", "step_scorer": "up",
                                                 "degraded": False}
    spec = httpx.get(server + "/openapi.json").json()
    assert {"/v1/rewards", "/get_reward", "/healthz"} <= set(spec["paths"])


def test_metrics_behind_token_from_serve_metrics(server):
    """/metrics needs the token (metrics_public is false); the counters come from ray.serve.metrics via Ray's
    metrics agent, which exports on its own period: poll until the request counter shows up."""
    import time

    assert httpx.get(server + "/metrics").status_code == 401
    assert post(server, {"items": [item(CLEAN, kind="base")]}).status_code == 200
    text = ""
    for _ in range(60):
        m = httpx.get(server + "/metrics", headers=AUTH, timeout=30)
        assert m.status_code == 200, m.text
        text = m.text
        if "howeval_reward_requests" in text:
            break
        time.sleep(1)
    assert 'howeval_reward_requests' in text and 'route="/v1/rewards"' in text


def test_validation_names_field_and_size_limit(server):
    r = post(server, {"items": [{k: v for k, v in item(CLEAN).items() if k != "answer"}]})
    assert r.status_code == 422 and "body.items.0.answer" in r.json()["message"]
    r = post(server, {"items": [item(CLEAN, answer_type="nonsense")]})
    assert r.status_code == 422 and "answer_type" in r.json()["message"]
    r = post(server, {"items": [item(CLEAN, kind="cpr")]})
    assert r.status_code == 422 and "reference_steps" in r.json()["message"]
    r = post(server, {"items": [item("x" * 250_000)]})
    assert r.status_code == 413


def test_chunked_body_over_limit_is_413(server):
    """No Content-Length (chunked transfer): the limit is enforced while the body streams in."""
    def chunks():
        yield b'{"items": [{"prompt": "q", "response": "'
        for _ in range(30):
            yield b"x" * 10_000
        yield b'", "answer": "4", "answer_type": "free_form"}]}'

    r = httpx.post(server + "/v1/rewards", content=chunks(), headers={**AUTH, "content-type": "application/json"}, timeout=60)
    assert r.status_code == 413, r.text
    small = iter([json.dumps({"items": [item(CLEAN, kind="base")]}).encode()])
    r = httpx.post(server + "/v1/rewards", content=small, headers={**AUTH, "content-type": "application/json"}, timeout=60)
    assert r.status_code == 200 and r.json()["rewards"][0]["reward"] == 1.0


LOAD_SECONDS = float(__import__("os").environ.get("HOWEVAL_LOAD_TEST_SECONDS", "20"))


def expected_reward(it: dict, got: dict) -> float:
    """The reward by the pure functions, in the test process: verify + gate + s_pat of the labels answered."""
    from howeval.judges.patternrm.format import rollout_key
    from howeval.judges.rules import RuleJudge
    from howeval.judges.verify import verify
    from howeval.rewards.functions import bernoulli_gate, pattern_reward, pattern_score

    s_ver = 1.0 if verify(it["response"], it["answer"], it["answer_type"]).correct else 0.0
    if it["kind"] == "base":
        return s_ver
    z = bernoulli_gate(rollout_key(it["prompt"], it["response"]), 1.0, 0)
    labels = RuleJudge().judge_batch([{"question": it["prompt"], "response": it["response"]}])[0].labels
    assert got["labels"] == labels
    return pattern_reward(s_ver, pattern_score(labels, "mean"), z)


def load_items(k: int, j: int) -> list[dict]:
    return [item(f"{k} and {j}: the answer is \\boxed{{4}}."),
            item(f"Wait, let me re-check {k}. The sum is {j}. The sum is {j}. So \\boxed{{{4 + j % 2}}}."),
            item("\\boxed{5}", kind="base")]


async def drive(server: str, n_clients: int, seconds: float, on_answer=None) -> list[tuple[list[dict], int, dict | None]]:
    """n clients, each sending its next request when the previous answer arrives, for ``seconds``."""
    import time

    out: list[tuple[list[dict], int, dict | None]] = []
    stop = time.monotonic() + seconds

    async def client(c: httpx.AsyncClient, k: int) -> None:
        j = 0
        while time.monotonic() < stop:
            items = load_items(k, j)
            r = await c.post(server + "/v1/rewards", json={"items": items}, headers=AUTH)
            body = r.json() if r.status_code == 200 else None
            out.append((items, r.status_code, body))
            if on_answer is not None:
                on_answer(len(out))
            j += 1

    limits = httpx.Limits(max_connections=n_clients, max_keepalive_connections=n_clients)
    async with httpx.AsyncClient(timeout=120, limits=limits) as c:
        await asyncio.gather(*[client(c, k) for k in range(n_clients)])
    return out


def test_load_64_clients_no_errors_every_answer_exact(server):
    """64 concurrent clients for LOAD_SECONDS (20 s; HOWEVAL_LOAD_TEST_SECONDS shortens it on a loaded
    machine): no error, and every reward equals the pure reward function of its item."""
    out = asyncio.run(drive(server, 64, LOAD_SECONDS))
    codes = [code for _, code, _ in out]
    assert len(codes) >= 64 and codes.count(200) == len(codes), {c: codes.count(c) for c in set(codes)}
    for items, _, body in out:
        for it, got in zip(items, body["rewards"], strict=True):
            assert not got["degraded"]
            assert got["reward"] == pytest.approx(expected_reward(it, got)), (it, got)


_text = st.text(max_size=40)
_value = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text,
                   st.lists(_text, max_size=3))
_item = st.dictionaries(st.sampled_from(["prompt", "response", "answer", "answer_type", "kind", "reference_steps",
                                         "options", "extra"]), _value, max_size=8)
_items = st.fixed_dictionaries({"items": st.one_of(st.lists(_item, max_size=3), _value)})
_body = st.one_of(_items, st.dictionaries(_text, _value, max_size=3), _value)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=_body, route=st.sampled_from(["/v1/rewards", "/get_reward"]))
def test_bad_input_never_5xx(server, body, route):
    r = httpx.post(server + route, content=json.dumps(body).encode(), headers={**AUTH, "content-type": "application/json"},
                   timeout=60)
    assert r.status_code < 500, (body, r.status_code, r.text)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(response=st.text(max_size=200), answer=st.text(min_size=0, max_size=20),
       answer_type=st.sampled_from(["free_form", "multiple_choice", "integer_number", "decimal_number",
                                    "boolean_text", "free_form_or_mc", "extractive_text", "other_text"]),
       kind=st.sampled_from(["base", "pattern", "cpr"]))
def test_valid_shape_random_text_never_5xx(server, response, answer, answer_type, kind):
    it = {"prompt": "q", "response": response, "answer": answer, "answer_type": answer_type, "kind": kind,
          "reference_steps": ["a step"]}
    r = post(server, {"items": [it]})
    assert r.status_code < 500, (it, r.status_code, r.text)
    if r.status_code == 200:
        x = r.json()["rewards"][0]
        assert 0.0 <= x["reward"] <= 1.0


ISSUE_12_INPUTS = ['{"a":' * 2000 + "1" + "}" * 2000, r"\boxed{10^{10^{10}}}", r"\boxed{9^{9^{9^{9}}}}", r"\boxed{" * 4000]


def test_a_180kb_cpr_item_embeds_at_most_max_pred_steps_and_says_so(server):
    """Issue 21: one valid ~180 KB cpr item (2,500 sentences) held the StepScorer 20-38 s, past its timeout,
    and other clients' cpr rows waited or degraded. Now its first cpr.max_pred_steps (128) steps are
    embedded, the others count as unmatched, and the row's ``truncated`` says so."""
    import time

    filler = " ".join(f"Sentence {i} restates the sum of two and two." for i in range(3800))[:178_000]
    big = item(filler + " The answer is \\boxed{4}.", kind="cpr", reference_steps=["Add 2 and 2", "The sum is 4"])
    t0 = time.perf_counter()
    r = post(server, {"items": [big, item(CLEAN, kind="cpr", reference_steps=["Add 2 and 2"])]})
    took = time.perf_counter() - t0
    assert r.status_code == 200, r.text
    row, small = r.json()["rewards"]
    assert "over max_pred_steps=128" in row["truncated"], row
    assert small["truncated"] is None and small["step_f1"] is not None
    if not row["degraded"]:  # the 5 s patternrm_timeout_s of this module: a loaded machine may still miss it
        assert row["s_ver"] == 1.0 and 0.0 <= row["step_f1"] < 0.05  # 2 refs matched at most, over ~3,800 steps
    print(f"180 KB cpr item: {took:.1f} s, degraded={row['degraded']}")


def test_pathological_items_are_unresolved_or_422_never_5xx(server):
    # issue 12: each scored as unresolved (s_ver 0) with the replica still answering, in every kind
    for kind in ("base", "pattern", "cpr"):
        r = post(server, {"items": [item(t, answer="5", kind=kind, reference_steps=["a step"]) for t in ISSUE_12_INPUTS]})
        assert r.status_code == 200, r.text
        assert [x["verify_method"] for x in r.json()["rewards"]] == ["unresolved"] * 4
        assert [x["s_ver"] for x in r.json()["rewards"]] == [0.0] * 4
    assert post(server, {"items": [item(CLEAN, kind="base")]}).json()["rewards"][0]["reward"] == 1.0
    # caller-given references over the limits: 422 naming the field, never a 500
    for label in ["[" * 1000 + "]" * 1000, "9" * 5000]:
        r = httpx.post(server + "/get_reward", json={"query": ["q The answer is 4."], "prompts": ["q"], "labels": [label]},
                       headers=AUTH, timeout=60)
        assert r.status_code == 422 and "labels.0" in r.text, r.text
    r = post(server, {"items": [item(CLEAN, answer="9" * 5000)]})
    assert r.status_code == 422 and "answer" in r.text, r.text


def test_trl_reward_function_against_server(server, monkeypatch):
    from howeval.rewards.client import RewardClient
    from howeval.training.rewards import GRPOReward

    monkeypatch.setenv("HOWEVAL_REWARD_TOKEN", TOKEN)
    fn = GRPOReward(RewardClient(server).score, "pattern")
    assert fn.__name__ == "pattern"
    prompts = [[{"role": "user", "content": "What is 2+2?"}]] * 2
    completions = [[{"role": "assistant", "content": CLEAN}], [{"role": "assistant", "content": TWO_PATTERNS}]]
    out = fn(prompts=prompts, completions=completions, answer=["4", "4"], answer_type=["free_form"] * 2)
    assert out == [pytest.approx(1.0), pytest.approx(0.95)]


def test_z1_degraded_when_patternrm_stopped(server):
    """A reward app whose PatternRM application is stopped answers 200, degraded, verifier-only.

    It runs on its own pair of applications (a PatternRM app deployed, then deleted, and a reward app on
    /degraded wired to it), so the module's shared server is untouched and test order does not matter.
    """
    from ray import serve

    from howeval.reward_server.app import build_app, build_patternrm_app

    serve.run(build_patternrm_app({"patternrm": {"kind": "rules"}}), name="patternrm-stopped", route_prefix=None)
    serve.run(build_app({"auth": {"token_env": TOKEN_ENV}, "patternrm_app": "patternrm-stopped",
                         "pattern": {"p": 1.0, "seed": 0, "mode": "mean"}}),
              name="reward-degraded", route_prefix="/degraded")
    try:
        serve.delete("patternrm-stopped")
        url = server + "/degraded"
        r = post(url, {"items": [item(TWO_PATTERNS), item("The answer is \\boxed{5}."), item(CLEAN, kind="base")]})
        assert r.status_code == 200, r.text
        two, wrong, base = r.json()["rewards"]
        assert two["degraded"] and two["z"] == 1 and two["labels"] is None and two["reward"] == 1.0
        assert two["error"].startswith("patternrm: unavailable")
        assert wrong["degraded"] and wrong["reward"] == 0.0
        assert not base["degraded"] and base["reward"] == 1.0
        # /get_reward: every degraded row says why (issue 35: its rows carried no reason)
        g = httpx.post(url + "/get_reward", headers=AUTH, timeout=60, json={
            "query": ["What is 2+2? " + TWO_PATTERNS, "What is 2+2? " + CLEAN], "prompts": ["What is 2+2? "] * 2,
            "labels": ["4", json.dumps({"answer": "4", "kind": "base"})]})
        assert g.status_code == 200, g.text
        assert g.json()["extra_logs"]["degraded"] == [1.0, 0.0]
        assert g.json()["errors"][0].startswith("patternrm: ") and g.json()["errors"][1] is None
        # (auth headers: the server's open paths are matched without a route prefix)
        h = httpx.get(url + "/healthz", headers=AUTH)  # issue 40: not ready (was 200 "ok" with degraded: true)
        assert h.status_code == 503 and h.headers["retry-after"] == "5"
        assert h.json()["patternrm"].startswith("down") and h.json()["degraded"] is True
        assert h.json()["status"] == "not ready" and h.json()["ready"] is False
    finally:
        serve.delete("reward-degraded")
    # the shared server still has its PatternRM
    assert httpx.get(server + "/healthz").json()["patternrm"] == "up"
    assert post(server, {"items": [item(TWO_PATTERNS)]}).json()["rewards"][0]["labels"] is not None


def test_healthz_is_not_ready_until_patternrm_is_up(server):
    """Issue 40: a reward app whose PatternRM application is still coming up answers /healthz 503 (a
    Kubernetes readiness probe keeps traffic away), and 200 once it answers; rewards meanwhile degrade."""
    from ray import serve

    from howeval.reward_server.app import build_app, build_patternrm_app

    serve.run(build_app({"auth": {"token_env": TOKEN_ENV}, "patternrm_app": "patternrm-late",
                         "pattern": {"p": 1.0, "seed": 0, "mode": "mean"}}), name="reward-late", route_prefix="/late")
    url = server + "/late"
    try:
        h = httpx.get(url + "/healthz", timeout=30)
        assert h.status_code == 503 and h.json()["patternrm"].startswith("down") and h.json()["step_scorer"] == "up"
        assert post(url, {"items": [item(CLEAN)]}).json()["rewards"][0]["degraded"] is True
        serve.run(build_patternrm_app({"patternrm": {"kind": "rules"}}), name="patternrm-late", route_prefix=None)
        h = httpx.get(url + "/healthz", timeout=30)
        assert h.status_code == 200 and h.json()["ready"] is True, h.text
    finally:
        serve.delete("reward-late")
        serve.delete("patternrm-late")


def test_patternrm_replica_killed_under_load_degrades_then_recovers(server):
    """Kill the PatternRM replica while 16 clients post: answers stay 200 (degraded while it is down,
    exact when labelled), and after Serve restarts the replica rewards are labelled again.

    Its own app pair (the shared server is untouched), with ``patternrm_timeout_s`` 1 s. A call that is in
    the replica when it dies degrades with ``ActorDiedError``; the rules PatternRM answers in microseconds,
    so a kill can also fall between calls, and the next calls then wait for Serve's replacement replica.
    With the shared server's 5 s they waited it out (every answer exact, only later: seen once in CI);
    with 1 s, shorter than a replacement takes here, they degrade too."""
    import threading
    import time

    import ray

    killed = threading.Event()

    def kill_once(n_answers: int) -> None:
        if n_answers >= 20 and not killed.is_set():
            killed.set()
            actors = [a for a in ray.util.list_named_actors(all_namespaces=True)
                      if "PatternRMServer" in a["name"] and "patternrm-kill" in a["name"]]
            assert actors, "no PatternRMServer replica of patternrm-kill found"
            for a in actors:
                ray.kill(ray.get_actor(a["name"], namespace=a["namespace"]), no_restart=False)

    with app_pair(server, "kill", limits={"patternrm_timeout_s": 1.0}) as url:
        out = asyncio.run(drive(url, 16, max(6.0, LOAD_SECONDS / 2), on_answer=kill_once))
        assert killed.is_set()
        codes = [code for _, code, _ in out]
        assert codes.count(200) == len(codes), {c: codes.count(c) for c in set(codes)}
        degraded = 0
        for items, _, body in out:
            for it, got in zip(items, body["rewards"], strict=True):
                if got["degraded"]:
                    degraded += 1
                    assert got["labels"] is None and got["reward"] == got["s_ver"] and got["error"].startswith("patternrm")
                else:
                    assert got["reward"] == pytest.approx(expected_reward(it, got))
        assert degraded > 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # recovery: Serve's controller replaces the dead replica
            res = post(url, {"items": [item(TWO_PATTERNS)]}).json()["rewards"][0]
            if not res["degraded"]:
                break
            time.sleep(1)
        assert not res["degraded"] and res["labels"] == {"cot": True, "rep": True, "con": False, "pr": False}
        assert httpx.get(url + "/healthz", headers=AUTH).json()["degraded"] is False


def test_full_queue_sheds_with_503_retry_after_and_the_client_waits_it_out(server):
    """A reward app whose ingress takes 1 request at a time with 1 waiting, in front of a PatternRM that
    holds each batch 1 s (``batch_wait_timeout_s``): of 8 simultaneous requests Serve's proxy answers the
    overflow at once with 503 and ``Retry-After: 1``, never a wait without bound; ``RewardClient``,
    which reads ``Retry-After``, then scores 4 concurrent requests in full within its deadline."""
    import time

    from howeval.rewards.client import RewardClient

    with app_pair(server, "shed", batching={"max_batch_size": 64, "batch_wait_timeout_s": 1.0},
                  ingress_options={"max_ongoing_requests": 1, "max_queued_requests": 1}) as url:
        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as c:
                return await asyncio.gather(*[c.post(url + "/v1/rewards", json={"items": [item(CLEAN)]}, headers=AUTH)
                                              for _ in range(8)])

        t0 = time.monotonic()
        answers = asyncio.run(burst())
        codes = sorted(r.status_code for r in answers)
        assert set(codes) <= {200, 503} and codes.count(200) >= 1 and codes.count(503) >= 4, codes
        assert all(r.headers.get("retry-after") == "1" for r in answers if r.status_code == 503)
        assert time.monotonic() - t0 < 30  # the overflow was answered at once, not queued behind 1 s batches
        ok = [r.json()["rewards"][0] for r in answers if r.status_code == 200]
        assert all(x["reward"] == 1.0 and not x["degraded"] for x in ok)

        def one(_):
            with RewardClient(url, token_env=TOKEN_ENV, timeout_s=20, max_retries=20, deadline_s=60) as client:
                return client.score([item(CLEAN), item("The answer is \\boxed{5}.")])

        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(one, range(4)))
        assert [[x["reward"] for x in r] for r in results] == [[1.0, 0.0]] * 4
        assert not any(x["degraded"] for r in results for x in r)


def test_one_forward_pass_holds_the_items_of_several_requests(server):
    """The ingress makes one PatternRM call per request; the replica still queues each item on its own, so
    with ``batch_wait_timeout_s`` 2 s four simultaneous requests of 3 items each are labelled in one
    batch of 12 (not four of 3), and each request gets its own items' labels back in order."""
    from ray import serve

    texts = [[CLEAN, TWO_PATTERNS, CLEAN], [TWO_PATTERNS, CLEAN, CLEAN], [CLEAN, CLEAN, TWO_PATTERNS],
             [TWO_PATTERNS, TWO_PATTERNS, CLEAN]]
    with app_pair(server, "mix", batching={"max_batch_size": 64, "batch_wait_timeout_s": 2.0}) as url:
        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as c:
                return await asyncio.gather(*[c.post(url + "/v1/rewards", json={"items": [item(t) for t in ts]},
                                                     headers=AUTH) for ts in texts])

        answers = asyncio.run(burst())
        assert [r.status_code for r in answers] == [200] * 4
        two = {"cot": True, "rep": True, "con": False, "pr": False}
        clean = {"cot": False, "rep": False, "con": False, "pr": False}
        got = [[x["labels"] for x in r.json()["rewards"]] for r in answers]
        assert got == [[two if t == TWO_PATTERNS else clean for t in ts] for ts in texts]
        sizes = serve.get_deployment_handle("PatternRMServer", app_name="patternrm-mix").stats.remote().result()["batch_sizes"]
        assert sizes == [12], sizes


def test_on_unresolved_llm_scores_through_the_fake_verifier_and_its_outage_degrades(server):
    """Issue 21: an answer the rules cannot decide goes to the LLM verifier (the scripted fake chat server);
    a correct one gets the full reward; the verifier failing gives a degraded row with its reason, never a silent 0."""
    from fakes.chat_server import ScriptedChatServer

    def script(n, body):
        text = body["messages"][-1]["content"]
        if "OUTAGE" in text:
            return ("status", 503, {})
        return ("ok", json.dumps({"correct": "exactly in the middle" in text, "reason": "same position"}))

    q = "Which stick is in the middle?"
    # two sentences, no answer verb: the rules leave them open (one sentence is read for its value since issue 33)
    unresolved = {"prompt": q, "response": "Look closely. Stick 4 lays exactly in the middle.", "answer": "3",
                  "answer_type": "free_form"}
    with ScriptedChatServer(script) as fake:
        extra = {"on_unresolved": "llm", "llm_verifier": {"base_url": fake.base_url, "model": "fake-verifier", "timeout_s": 5}}
        with app_pair(server, "llmfb", extra_args=extra) as url:
            r = post(url, {"items": [
                dict(unresolved, kind="base"),
                dict(unresolved, kind="pattern", prompt=q + " (pattern)"),  # another prompt: its own verdict and gate
                dict(unresolved, kind="base", response="Look closely. Stick 4 lays at the left end."),
                dict(unresolved, kind="base", response="OUTAGE. Stick 4 lays at the left end."),
                item(CLEAN, kind="base")]})
            again = post(url, {"items": [dict(unresolved, kind="base")]})
    assert r.status_code == 200, r.text
    rows = r.json()["rewards"]
    assert rows[0]["reward"] == 1.0 and rows[0]["verify_method"] == "llm" and not rows[0]["degraded"]
    assert rows[1]["s_ver"] == 1.0 and rows[1]["verify_method"] == "llm" and 0.9 <= rows[1]["reward"] <= 1.0
    assert rows[2]["reward"] == 0.0 and rows[2]["verify_method"] == "llm" and not rows[2]["degraded"]
    assert rows[3]["reward"] == 0.0 and rows[3]["degraded"] is True and rows[3]["verify_method"] == "llm_error"
    assert "503" in rows[3]["error"]
    assert rows[4]["verify_method"] == "rule" and rows[4]["reward"] == 1.0
    assert again.json()["rewards"][0]["reward"] == 1.0
    assert fake.arrivals == 4  # the repeated item came from the cache


def _partial_body(url: str, token: bool) -> socket.socket:
    """A connection that sent its headers (Content-Length 100,000) and 11 bytes of body, and stalls."""
    from urllib.parse import urlparse

    u = urlparse(url)
    s = socket.create_connection((u.hostname, u.port))
    s.settimeout(60)
    head = ("POST /v1/rewards HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
            + (f"Authorization: Bearer {TOKEN}\r\n" if token else "") + "\r\n")
    s.sendall(head.encode() + b'{"items": [')
    return s


def _status(s) -> int:
    return int(s.recv(4096).split(b" ")[1])


def test_slow_bodies_with_or_without_the_token_hold_no_slot(server):
    """Issue 35: connections sending a body a few bytes short of its Content-Length held the ingress's 32
    slots for Serve's 120 s timeout, bearer check or not. Now a request without the token is refused from its
    headers (401, its body never read) and a stalled body gets 408 after ``body_timeout_s`` (2 s here); while
    40 such connections are open, normal requests are answered."""
    from concurrent.futures import ThreadPoolExecutor

    no_token = [_partial_body(server, False) for _ in range(20)]
    stalled = [_partial_body(server, True) for _ in range(20)]
    try:
        assert [_status(s) for s in no_token] == [401] * 20
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda k: post(server, {"items": [item(CLEAN, kind="base")]}), range(4)))
        assert [r.status_code for r in answers] == [200] * 4
        assert all(r.json()["rewards"][0]["reward"] == 1.0 for r in answers)
        assert [_status(s) for s in stalled] == [408] * 20
    finally:
        for s in no_token + stalled:
            s.close()


def test_a_request_with_many_new_steps_is_embedded_in_turns_and_scored_exactly(server):
    """Issue 35: one big cpr request held the step scorer for everyone. A request with more than STEP_CHUNK
    new step texts is embedded in chunks that take turns with other requests' batches; its F1 is unchanged
    (every predicted step equals a reference step: F1 = 1)."""
    from ray import serve

    words = ["apples", "boats", "cats", "dunes", "eels", "forks", "gates", "hills", "inks", "jars"]
    refs = [f"Count the {w} in row {i} of the table" for i in range(4) for w in words]  # 40 new steps
    resp = "\n".join(f"Step {k + 1}: {r}." for k, r in enumerate(refs)) + "\nThe answer is \\boxed{4}."
    handle = serve.get_deployment_handle("StepScorer", app_name="reward")
    before = handle.stats.remote().result()["chunked_requests"]
    r = post(server, {"items": [item(resp, kind="cpr", reference_steps=refs)]})
    assert r.status_code == 200, r.text
    row = r.json()["rewards"][0]
    if not row["degraded"]:  # the module's 5 s patternrm_timeout_s: a loaded machine may miss it (then it says why)
        assert row["step_f1"] == pytest.approx(1.0) and row["reward"] == pytest.approx(1.0)
    else:
        assert row["error"].startswith("step scorer: ")
    assert handle.stats.remote().result()["chunked_requests"] == before + 1


def test_hung_verifier_degrades_its_rows_named_and_references_count_in_max_request_chars(server):
    """Issue 35: with a hung LLM verifier half the requests got 504. Now (timeout_s 1 s) every request is
    answered 200: unresolved rows degraded ``llm verifier: ...``, resolved rows exact. And reference steps
    count in ``max_request_chars`` (they were not: one cpr request held the step scorer)."""
    from concurrent.futures import ThreadPoolExecutor

    from fakes.chat_server import ScriptedChatServer

    q = "Which stick is in the middle?"
    with ScriptedChatServer(lambda n, body: ("hang",)) as fake:
        extra = {"on_unresolved": "llm", "llm_verifier": {"base_url": fake.base_url, "model": "hung", "timeout_s": 1}}
        with app_pair(server, "llmhang", extra_args=extra, limits={"max_request_chars": 3000}) as url:
            def one(k):
                # two sentences, no final-answer marker: the rules leave it unresolved (issue 33 decides one sentence)
                return post(url, {"items": [{"prompt": q, "response": f"Look closely. Stick {k} lays exactly in the middle.",
                                             "answer": "3", "answer_type": "free_form", "kind": "base"},
                                            item(CLEAN, kind="base")]})

            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(one, range(16)))
            big = post(url, {"items": [item(CLEAN, kind="cpr", reference_steps=["Add 2 and 2 " * 100] * 3)]})
    assert [r.status_code for r in answers] == [200] * 16
    for r in answers:
        unres, ok = r.json()["rewards"]
        assert unres["degraded"] and unres["verify_method"] == "llm_error" and unres["error"].startswith("llm verifier: "), json.dumps(unres)
        assert ok["reward"] == 1.0 and not ok["degraded"]
    assert big.status_code == 422 and "max_request_chars" in big.text and "reference steps" in big.text


def test_step_scorer_replica_killed_answers_within_the_failover_window(server):
    """Issue 35: killing the step-scorer replica stopped every answer for 19.4 s (each cpr request waited the
    20 s timeout while the replacement loaded). Now the waiting calls ping the scorer and fail over in
    seconds: every request is answered 200 before the timeout, the cpr rows degraded ``step scorer: ...``."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import ray

    with app_pair(server, "stepkill", limits={"patternrm_timeout_s": 20.0}) as url:
        ok = post(url, {"items": [item(CLEAN, kind="cpr", reference_steps=["Add 2 and 2"])]})
        assert ok.status_code == 200 and not ok.json()["rewards"][0]["degraded"], ok.text
        actors = [a for a in ray.util.list_named_actors(all_namespaces=True)
                  if "StepScorer" in a["name"] and "reward-stepkill" in a["name"]]
        assert actors, "no StepScorer replica of reward-stepkill found"
        for a in actors:
            ray.kill(ray.get_actor(a["name"], namespace=a["namespace"]), no_restart=False)

        def one(k):
            t0 = time.monotonic()
            r = post(url, {"items": [item(f"Step 1: Add 2 and {k}. The answer is \\boxed{{4}}.", kind="cpr",
                                          reference_steps=["Add 2 and 2"]), item(CLEAN, kind="base")]})
            return r, time.monotonic() - t0

        with ThreadPoolExecutor(6) as pool:
            out = list(pool.map(one, range(6)))
    assert [r.status_code for r, _ in out] == [200] * 6
    for r, took in out:
        cpr, base = r.json()["rewards"]
        assert base["reward"] == 1.0 and not base["degraded"]
        if cpr["degraded"]:
            assert cpr["error"].startswith("step scorer: ") and cpr["step_f1"] is None
        assert took < 20.0, took  # the failover answered it, not the 20 s timeout
    assert sum(r.json()["rewards"][0]["degraded"] for r, _ in out) >= 1
