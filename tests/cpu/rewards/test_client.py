"""RewardClient: retries with backoff on connection errors / 5xx / timeouts, raises at the end, TRL adapter."""
from __future__ import annotations

import logging

import httpx
import pytest

from howeval.engines.messages import message_text
from howeval.rewards.client import RewardClient, RewardRequestError, RewardServiceError


def _client(handler, **kw) -> RewardClient:
    return RewardClient("http://reward.test", token_env="HOWEVAL_TEST_CLIENT_TOKEN", backoff_s=0.0,
                        transport=httpx.MockTransport(handler), **kw)


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


class TrickleServer:
    """A TCP server on 127.0.0.1 that answers every connection one byte at a time (``every_s`` apart):
    the status line and headers (``part="headers"``), or full headers then a trickled body (``"body"``).
    Stopped (sockets closed, thread joined) by ``close``."""

    def __init__(self, part: str, every_s: float = 0.2):
        import socket
        import threading

        self.part, self.every_s = part, every_s
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:

        conns = []
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conns.append(c)
            body = b'{"rewards": [{"reward": 1.0, "degraded": false}]}'
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + str(len(body) * 100).encode() + b"\r\n\r\n"
            if self.part == "body":
                c.sendall(head)
                data = body * 100
            else:
                data = head + body
            for i in range(len(data)):
                if self.stop.wait(self.every_s):
                    break
                try:
                    c.sendall(data[i:i + 1])
                except OSError:
                    break  # the client gave up: next connection
        for c in conns:
            c.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("part", ["headers", "body"])
def test_trickling_server_cannot_hold_a_call_past_its_deadline(part):
    """Issue 21: one byte every 0.2 s resets httpx's per-read timeout for ever (> 250 s seen with timeout_s 5);
    the attempt budget is now enforced on the whole answer, so the call ends by its deadline."""
    import time

    srv = TrickleServer(part)
    try:
        with RewardClient(srv.url, token_env="HOWEVAL_TEST_CLIENT_TOKEN", timeout_s=1.0, max_retries=5, backoff_s=0.1,
                          deadline_s=2.5) as client:
            t0 = time.monotonic()
            with pytest.raises(RewardServiceError, match="deadline"):
                client.score([{"prompt": "q"}])
            took = time.monotonic() - t0
    finally:
        srv.close()
    assert took < 2.5 + 3.0  # the deadline plus scheduling slack; before the fix: never returned
    assert srv.connections >= 2  # each 1 s attempt was cut and retried on a new connection


def test_trl_reward_function_logs_the_share_of_degraded_rewards(caplog):
    """Issue 21: a degraded row is visible in the training log (TRL's log_metric, per step) and warned
    about, not only counted in the client."""
    import json

    from howeval.training.rewards import GRPOReward

    def handler(req):
        n = len(json.loads(req.content)["items"])
        rows = [{"reward": 1.0, "s_ver": 1.0, "degraded": i < 1, "verify_method": "llm" if i == 2 else "rule",
                 "error": "patternrm: unavailable: TimeoutError" if i < 1 else None} for i in range(n)]
        return httpx.Response(200, json={"rewards": rows})

    logged: list[tuple[str, float]] = []
    client = _client(handler)
    fn = GRPOReward(client.score, "pattern")
    with caplog.at_level(logging.WARNING):
        out = fn(prompts=["q"] * 4, completions=["a"] * 4, answer=["1"] * 4, answer_type=["free_form"] * 4,
                 log_metric=lambda k, v: logged.append((k, v)))
    assert out == [1.0] * 4
    got = dict(logged)
    assert got["reward_parts/degraded"] == 0.25 and got["reward_parts/verify_llm"] == 0.25
    assert client.n_degraded == 1 and client.n_rows == 4
    assert any("1/4 pattern rewards degraded" in r.message and "TimeoutError" in r.message for r in caplog.records)
