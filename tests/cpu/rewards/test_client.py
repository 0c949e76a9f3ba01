"""RewardClient: retries with backoff on connection errors / 5xx / timeouts, raises at the end, TRL adapter."""
from __future__ import annotations

import logging

import httpx
import pytest

from howeval.engines.messages import message_text
from howeval.rewards.client import RewardClient, RewardRequestError, RewardServiceError


def _client(handler, **kw) -> RewardClient:
    c = RewardClient("http://reward.test", token_env="HOWEVAL_TEST_CLIENT_TOKEN", backoff_s=0.0, **kw)
    c._http = httpx.Client(transport=httpx.MockTransport(handler), headers=c._headers)
    return c


def _ok(request: httpx.Request) -> httpx.Response:
    import json

    items = json.loads(request.content)["items"]
    return httpx.Response(200, json={"rewards": [{"reward": 0.5 + i / 10, "degraded": False} for i in range(len(items))]})


def test_retries_5xx_then_succeeds(caplog):
    calls = []

    def handler(req):
        calls.append(req)
        return httpx.Response(503, text="busy") if len(calls) < 3 else _ok(req)

    with caplog.at_level(logging.WARNING):
        out = _client(handler, max_retries=3).score([{"prompt": "q"}])
    assert out == [{"reward": 0.5, "degraded": False}] and len(calls) == 3
    assert sum("attempt" in r.message for r in caplog.records) == 2  # each failed attempt logged


@pytest.mark.parametrize("exc", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow")])
def test_raises_after_last_retry_never_none(exc):
    calls = []

    def handler(req):
        calls.append(req)
        raise exc

    with pytest.raises(RewardServiceError, match="3 attempts at most"):
        _client(handler, max_retries=2).score([{"prompt": "q"}])
    assert len(calls) == 3


def test_4xx_not_retried_and_names_token_env():
    calls = []

    def handler(req):
        calls.append(req)
        return httpx.Response(401, json={"detail": "missing or wrong bearer token"})

    with pytest.raises(RewardRequestError, match="HOWEVAL_TEST_CLIENT_TOKEN"):
        _client(handler).score([{"prompt": "q"}])
    assert len(calls) == 1


def test_unreachable_server_raises():
    c = RewardClient("http://127.0.0.1:9", timeout_s=1.0, max_retries=1, backoff_s=0.0)
    with pytest.raises(RewardServiceError):
        c.score([{"prompt": "q"}])


def test_bearer_header_from_env(monkeypatch):
    monkeypatch.setenv("HOWEVAL_TEST_CLIENT_TOKEN", "abc")
    seen = {}

    def handler(req):
        seen["auth"] = req.headers.get("authorization")
        return _ok(req)

    _client(handler).score([{"prompt": "q"}])
    assert seen["auth"] == "Bearer abc"


def test_trl_reward_function_shapes():
    bodies = []

    def handler(req):
        import json

        bodies.append(json.loads(req.content))
        return _ok(req)

    from howeval.training.rewards import GRPOReward

    fn = GRPOReward(_client(handler).score, "cpr")
    assert fn.__name__ == "cpr"
    out = fn(prompts=["q1", [{"role": "system", "content": "s"}, {"role": "user", "content": "q2"}]],
             completions=["a1", [{"role": "assistant", "content": [{"type": "text", "text": "a2"}]}]],
             answer=["1", "2"], answer_type=["free_form"] * 2, reference_steps=[["s1"], ["s2", "s3"]], extra_col=[0, 0])
    assert out == [0.5, 0.6] and all(isinstance(x, float) for x in out)
    items = bodies[0]["items"]
    assert [i["prompt"] for i in items] == ["q1", "q2"] and [i["response"] for i in items] == ["a1", "a2"]
    assert items[1] == {"prompt": "q2", "response": "a2", "answer": "2", "answer_type": "free_form", "kind": "cpr",
                        "reference_steps": ["s2", "s3"]}
    with pytest.raises(ValueError, match="reference_steps"):
        fn(prompts=["q"], completions=["a"], answer=["1"], answer_type=["free_form"])
    with pytest.raises(ValueError, match="kind"):
        GRPOReward(_client(handler).score, "nope")


def test_message_text_errors():
    with pytest.raises(ValueError):
        message_text([{"role": "user", "content": "x"}], "assistant")
    with pytest.raises(TypeError):
        message_text(3)


class FakeClock:
    """Injected clock + sleep: time moves only when the code sleeps or a handler says so."""

    def __init__(self):
        self.t = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.t += s


def _timed_client(handler, clock, **kw) -> RewardClient:
    return RewardClient("http://reward.test", token_env="HOWEVAL_TEST_CLIENT_TOKEN", backoff_s=0.5, clock=clock,
                        sleep=clock.sleep, transport=httpx.MockTransport(handler), **kw)


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(status):
    clock, calls = FakeClock(), []

    def handler(req):
        calls.append(req)
        return httpx.Response(status, headers={"Retry-After": "3"}, text="busy") if len(calls) < 3 else _ok(req)

    out = _timed_client(handler, clock, max_retries=5, timeout_s=10).score([{"prompt": "q"}])
    assert len(out) == 1 and clock.sleeps == [3.0, 3.0]  # the server's delay, not the 0.5 s backoff


def test_retry_after_past_the_deadline_fails_at_once():
    clock, calls = FakeClock(), []

    def handler(req):
        calls.append(req)
        return httpx.Response(503, headers={"Retry-After": "120"}, text="busy")

    with pytest.raises(RewardServiceError, match="past the 20.0 s deadline"):
        _timed_client(handler, clock, max_retries=5, timeout_s=10).score([{"prompt": "q"}])
    assert len(calls) == 1 and clock.sleeps == []


def test_hung_server_costs_one_deadline():
    """Each attempt hangs until its timeout: the call ends at the deadline, not at 4 x timeout."""
    clock, timeouts = FakeClock(), []

    def handler(req):
        t = req.extensions["timeout"]["read"]
        timeouts.append(t)
        clock.t += t
        raise httpx.ReadTimeout("hung")

    with pytest.raises(RewardServiceError, match="deadline"):
        _timed_client(handler, clock, max_retries=3, timeout_s=30, deadline_s=45).score([{"prompt": "q"}])
    assert clock.t <= 45.0 and timeouts[0] == 30 and sum(timeouts) + sum(clock.sleeps) == pytest.approx(45.0)
