"""Issue 35 without a cluster: the ingress's ASGI ``Guard`` (bearer check before any body byte, body-read
deadline, size cap) and its failover of a part whose calls hang (``RewardIngress._call``: the liveness
ping fails the part over in seconds and answers every call waiting on it)."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

import howeval.reward_server.app as app_module
from howeval.reward_server.app import Guard, auth_error, item_chars
from howeval.reward_server.config import load_server_config
from howeval.reward_server.schemas import RewardItem

TOKEN = "guard-token"


@pytest.fixture
def settings(monkeypatch):
    monkeypatch.setattr(app_module, "SETTINGS", {"token": TOKEN, "max_body_bytes": 1000, "body_timeout_s": 0.3,
                                                 "metrics_public": False})


def run_guard(headers: list[tuple[bytes, bytes]], receive, path: str = "/v1/rewards") -> tuple[int, dict, bool]:
    """Call ``Guard`` over a dummy app; returns (status, JSON body, whether the app was reached)."""
    reached = []
    sent: list[dict] = []

    async def inner(scope, recv, send):
        msg = await recv()
        reached.append(msg["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def send(msg):
        sent.append(msg)

    scope = {"type": "http", "path": path, "root_path": "", "headers": headers, "method": "POST"}
    asyncio.run(Guard(inner)(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body), bool(reached)


async def never_called():
    raise AssertionError("the body was read before the bearer check")


async def stalled():
    await asyncio.sleep(3600)


def test_no_or_wrong_token_is_refused_from_the_headers_alone(settings):
    for headers in ([(b"content-length", b"500")], [(b"authorization", b"Bearer nope"), (b"content-length", b"500")]):
        status, body, reached = run_guard(headers, never_called)
        assert (status, reached) == (401, False) and "bearer" in body["detail"]
    two = [(b"authorization", f"Bearer {TOKEN}".encode()), (b"authorization", b"Bearer x")]
    assert run_guard(two, never_called)[0] == 400
    # open routes need no token and still get their (empty) body
    assert run_guard([], lambda: _msg(b""), path="/healthz")[0] == 200


URL_TOKEN = "u" * 40


def test_url_token_opens_the_openrlhf_route_only_and_is_checked_before_the_body(settings, monkeypatch):
    """Issue 40: OpenRLHF's stock client sends no header; its URL carries a second secret that opens
    /openrlhf/<secret>/get_reward and nothing else, checked from the path before any body byte."""
    ok = f"/openrlhf/{URL_TOKEN}/get_reward"
    assert run_guard([], never_called, path=ok)[0] == 404  # no url token configured: the route does not exist
    monkeypatch.setitem(app_module.SETTINGS, "url_token", URL_TOKEN)
    assert run_guard([], lambda: _msg(b"{}"), path=ok)[:3:2] == (200, True)
    for path, status in ((f"/openrlhf/{URL_TOKEN}x/get_reward", 401), ("/openrlhf//get_reward", 401),
                         (f"/openrlhf/{URL_TOKEN}/v1/rewards", 404), (f"/openrlhf/{URL_TOKEN}", 404)):
        got, _, reached = run_guard([], never_called, path=path)
        assert (got, reached) == (status, False), path
    # the URL token is no bearer token, and the other routes still want the bearer token
    assert run_guard([(b"authorization", f"Bearer {URL_TOKEN}".encode())], never_called)[0] == 401
    assert run_guard([], never_called, path="/get_reward")[0] == 401
    two = [(b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")]
    assert run_guard(two, never_called, path=ok)[0] == 400


def test_url_token_config_is_refused_when_short_unsafe_or_the_bearer_token(monkeypatch):
    from howeval.reward_server.config import AuthConfig

    auth = AuthConfig(token_env="T_BEARER", url_token_env="T_URL")
    monkeypatch.setenv("T_BEARER", URL_TOKEN)
    for value, why in ((None, "is not set"), ("short", "at least 32"), ("a/b" * 20, "at least 32"), (URL_TOKEN, "equals the bearer")):
        if value is None:
            monkeypatch.delenv("T_URL", raising=False)
        else:
            monkeypatch.setenv("T_URL", value)
        with pytest.raises(ValueError, match=why):
            auth.url_token()
    monkeypatch.setenv("T_URL", "v" * 32)
    assert auth.url_token() == "v" * 32
    assert AuthConfig().url_token() is None


async def _msg(body: bytes, more: bool = False) -> dict:
    return {"type": "http.request", "body": body, "more_body": more}


def test_a_stalled_body_gets_408_within_body_timeout_s(settings):
    auth = [(b"authorization", f"Bearer {TOKEN}".encode()), (b"content-length", b"500")]
    t0 = time.monotonic()
    status, body, reached = run_guard(auth, stalled)
    took = time.monotonic() - t0
    assert (status, reached) == (408, False) and "0.3 s" in body["detail"]
    assert took < 5.0  # 0.3 s deadline; far below Serve's 120 s request timeout that held the slot before

    chunks = iter([_msg(b"x" * 100, True), stalled()])  # a trickle that stops: the deadline covers the whole body
    assert run_guard(auth, lambda: next(chunks))[0] == 408


def test_size_cap_by_header_and_while_streaming_then_the_app_gets_the_body(settings):
    auth = [(b"authorization", f"Bearer {TOKEN}".encode())]
    assert run_guard(auth + [(b"content-length", b"5000")], never_called)[0] == 413
    chunks = iter([_msg(b"x" * 600, True), _msg(b"x" * 600, True), _msg(b"x", False)])
    assert run_guard(auth, lambda: next(chunks))[0] == 413
    parts = iter([_msg(b'{"a": ', True), _msg(b"1}", False)])
    status, _, reached = run_guard(auth, lambda: next(parts))
    assert (status, reached) == (200, True)


def test_auth_error_is_constant_shape():
    app_module.SETTINGS.setdefault("token", None)
    old = dict(app_module.SETTINGS)
    try:
        app_module.SETTINGS.update(token=TOKEN)
        assert auth_error([(b"authorization", f"Bearer {TOKEN}".encode())]) is None
        assert auth_error([], needs_token=False) is None
        assert auth_error([])[0] == 401
    finally:
        app_module.SETTINGS.clear()
        app_module.SETTINGS.update(old)


def test_max_request_chars_counts_reference_steps_and_every_text():
    it = RewardItem(prompt="p" * 10, response="r" * 20, answer="4", answer_type="free_form", kind="cpr",
                    reference_steps=["s" * 300, "t" * 400], options=["o" * 5])
    assert item_chars(it) == 10 + 20 + 1 + 5 + 700


class _Hung:
    """A handle call that never answers (a replica killed, its replacement still loading)."""

    def __init__(self):
        self.cancelled = False

    def __await__(self):
        return asyncio.sleep(3600).__await__()

    def cancel(self):
        self.cancelled = True


def _set(monkeypatch, **values):
    """Set the ingress's constants where its methods read them: @serve.ingress gave the class a copy of the
    module's globals."""
    g = app_module.RewardIngress.func_or_class._watch.__globals__
    for k, v in values.items():
        monkeypatch.setitem(g, k, v)


def _ingress(timeout_s: float = 20.0):
    cls = app_module.RewardIngress.func_or_class
    ing = cls.__new__(cls)
    ing.cfg = load_server_config({"auth": {"token_env": None}, "limits": {"patternrm_timeout_s": timeout_s}})
    ing._down_until, ing._down_reason, ing._gates, ing._probing, ing._last_ok = {}, {}, {}, {}, {}
    return ing


def test_a_part_with_no_live_replica_fails_over_on_its_ping_not_its_timeout(monkeypatch):
    """Issue 35: killing the step-scorer replica stopped every answer for 19.4 s (each cpr request waited its
    20 s timeout). Now a waiting call pings the part after PING_AFTER_S; no answer within PING_TIMEOUT_S fails
    it over, every waiting call is answered with the reason, and calls in the window make no call."""
    _set(monkeypatch, PING_AFTER_S=0.2, PING_TIMEOUT_S=0.3)
    ing = _ingress(timeout_s=20.0)
    calls: list[_Hung] = []

    def make_call():
        calls.append(_Hung())
        return calls[-1]

    async def ping():
        await asyncio.sleep(3600)

    async def go():
        t0 = time.monotonic()
        out = await asyncio.gather(*(ing._call("step scorer", make_call, 2, ping) for _ in range(8)))
        took = time.monotonic() - t0
        again = await ing._call("step scorer", make_call, 2, ping)
        return out, took, again

    out, took, again = asyncio.run(go())
    assert took < 10.0, took  # 0.2 + 0.3 s here, never the 20 s timeout
    assert all(isinstance(r, str) and "no answer to a ping within 0.3 s" in r for r in out), out
    assert len(calls) == 8 and all(c.cancelled for c in calls)  # every call given up was cancelled
    assert again.startswith("failing over: unavailable: no answer to a ping") and len(calls) == 8  # no new call


def test_after_the_window_a_background_ping_decides_and_no_request_waits(monkeypatch):
    _set(monkeypatch, PING_AFTER_S=0.1, PING_TIMEOUT_S=0.3, FAILOVER_S=0.2)
    ing = _ingress()
    alive = {"ok": False}
    calls = []

    async def ping():
        if not alive["ok"]:
            await asyncio.sleep(3600)
        return "ok"

    async def answer():
        calls.append(1)
        return [1.0]

    async def go():
        first = await ing._call("step scorer", lambda: _Hung(), 1, ping)  # fails over on its ping
        await asyncio.sleep(0.3)  # the window is over
        t0 = time.monotonic()
        during = await ing._call("step scorer", answer, 1, ping)  # answered now; starts the background ping
        took = time.monotonic() - t0
        await asyncio.sleep(0.5)  # that ping gets no answer: a new window
        alive["ok"] = True
        await asyncio.sleep(0.3)
        await ing._call("step scorer", answer, 1, ping)  # past the new window: a ping that answers
        await asyncio.sleep(0.1)
        back = await ing._call("step scorer", answer, 1, ping)
        return first, during, took, back

    first, during, took, back = asyncio.run(go())
    assert "no answer to a ping" in first
    assert during.startswith("failing over:") and "a ping is trying it" in during and took < 0.2
    assert back == [1.0] and calls == [1]  # no call reached the part until its ping answered


def test_a_slow_part_that_answers_its_ping_is_waited_for(monkeypatch):
    _set(monkeypatch, PING_AFTER_S=0.1, PING_TIMEOUT_S=1.0)
    ing = _ingress()
    pings = []

    async def slow_answer():
        await asyncio.sleep(0.6)
        return [0.5, 0.25]

    async def ping():
        pings.append(1)
        return "ok"

    out = asyncio.run(ing._call("step scorer", lambda: slow_answer(), 2, ping))
    assert out == [0.5, 0.25] and len(pings) >= 2 and not ing._down_reason


def test_one_request_past_its_timeout_while_the_part_answers_others_fails_nobody_over(monkeypatch):
    """Issue 35: a 1.9 MB cpr request timed out on the (busy, alive) step scorer and opened the failover
    window for every other client. Now, when other calls were answered meanwhile, only its rows degrade."""
    _set(monkeypatch, PING_AFTER_S=5.0, PING_TIMEOUT_S=1.0)
    ing = _ingress(timeout_s=0.5)

    async def small():
        await asyncio.sleep(0.05)
        return [0.5]

    async def go():
        big = asyncio.ensure_future(ing._call("step scorer", lambda: _Hung(), 600, lambda: small()))
        await asyncio.sleep(0.1)
        other = await ing._call("step scorer", small, 1, lambda: small())
        big_reason = await big
        after = await ing._call("step scorer", small, 1, lambda: small())
        return big_reason, other, after

    big_reason, other, after = asyncio.run(go())
    assert other == [0.5] and after == [0.5] and not ing._down_reason
    assert "for this request's 600 inputs" in big_reason and "no failover" in big_reason
