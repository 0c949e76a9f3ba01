"""The verifier's LLM fallback (issue 21, ``on_unresolved: llm``): the pipeline's handling of its verdicts
and failures, and ``LLMFallback`` against the scripted fake OpenAI-compatible chat server (cache by
response hash, bounded concurrency, failures as reasons, never a silent 0)."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.rewards.llm_fallback import LLMFallback, LLMFallbackConfig, verdict_key
from howeval.rewards.pipeline import PatternRMUnavailable, prepare, score_batch

from fakes.chat_server import ScriptedChatServer

P0 = PatternConfig(p=0.0)  # no PatternRM: the verifier alone decides the reward
# two sentences, no answer verb: the rules leave it open (one sentence would be read for its value since issue 33)
UNRESOLVED = {"prompt": "Where is stick 4?", "response": "Look closely. Stick 4 lays exactly in the middle.", "answer": "3",
              "answer_type": "free_form", "kind": "pattern"}
RESOLVED = {"prompt": "2+2?", "response": "The answer is \\boxed{4}.", "answer": "4", "answer_type": "free_form", "kind": "base"}


def test_prepare_lists_unresolved_items_only_under_llm():
    plan = prepare([RESOLVED, UNRESOLVED], P0, "llm")
    assert plan.unresolved_index == [1] and plan.llm_requests() == [UNRESOLVED]
    assert prepare([RESOLVED, UNRESOLVED], P0, "zero").unresolved_index == []
    with pytest.raises(ValueError, match="'zero', 'error' or 'llm'"):
        prepare([RESOLVED], P0, "maybe")


def test_llm_verdict_gives_the_full_reward_and_its_failure_a_degraded_row():
    ok = score_batch([RESOLVED, UNRESOLVED], P0, CPRConfig(), on_unresolved="llm",
                     llm_verify=lambda xs: [{"correct": True, "method": "llm", "reason": "same stick"} for _ in xs])
    assert [r["reward"] for r in ok] == [1.0, 1.0]
    assert ok[1]["verify_method"] == "llm" and ok[1]["s_ver"] == 1.0 and not ok[1]["degraded"]
    bad = score_batch([UNRESOLVED], P0, CPRConfig(), on_unresolved="llm",
                      llm_verify=lambda xs: [{"correct": None, "method": "llm_error", "reason": "llm verifier: HTTP 500"}])
    assert bad[0]["reward"] == 0.0 and bad[0]["degraded"] is True
    assert bad[0]["verify_method"] == "llm_error" and "HTTP 500" in bad[0]["error"]

    def boom(xs):
        raise ConnectionError("verifier down")
    down = score_batch([UNRESOLVED], P0, CPRConfig(), on_unresolved="llm", llm_verify=boom)
    assert down[0]["degraded"] and "verifier down" in down[0]["error"]
    with pytest.raises(PatternRMUnavailable, match="llm verifier"):
        score_batch([UNRESOLVED], P0, CPRConfig(), on_unresolved="llm", llm_verify=boom, on_failure="error")
    with pytest.raises(ValueError, match="needs an LLM verifier"):
        score_batch([UNRESOLVED], P0, CPRConfig(), on_unresolved="llm")


def _run(coro):
    return asyncio.run(coro)


def test_fallback_against_fake_server_caches_bounds_concurrency_and_reports_failures():
    gate = threading.Event()

    def script(n, body):
        text = body["messages"][-1]["content"]
        if "BROKEN" in text:
            return ("status", 500, {})
        if "GARBLED" in text:
            return ("ok", "I am not sure.")
        return ("wait", gate, json.dumps({"correct": "middle" in text, "reason": "graded"}))

    with ScriptedChatServer(script) as srv:
        cfg = LLMFallbackConfig(base_url=srv.base_url, model="fake-verifier", max_concurrency=2, timeout_s=10)
        items = [dict(UNRESOLVED, response=f"Look closely. Stick 4 lays exactly in the middle ({i}).") for i in range(6)]
        items.append(dict(UNRESOLVED, response="It is on the left."))

        async def go():
            fb = LLMFallback(cfg)
            task = asyncio.ensure_future(fb.verify(items))
            await asyncio.sleep(1.0)
            in_flight_while_blocked = srv.in_flight
            gate.set()
            first = await task
            again = await fb.verify(items[:3])  # the same responses: from the cache, no new call
            failed = await fb.verify([dict(UNRESOLVED, response="BROKEN"), dict(UNRESOLVED, response="GARBLED")])
            await fb.aclose()
            return fb, in_flight_while_blocked, first, again, failed

        fb, blocked, first, again, failed = _run(go())
    assert blocked == 2 and srv.max_in_flight == 2  # max_concurrency, the rest waited
    assert [v["correct"] for v in first] == [True] * 6 + [False] and {v["method"] for v in first} == {"llm"}
    assert again == first[:3] and fb.n_cached == 3 and fb.n_calls == 7 + 2
    assert failed[0]["correct"] is None and failed[0]["method"] == "llm_error" and "HTTP 500" in failed[0]["reason"]
    assert failed[1]["correct"] is None and "no JSON verdict" in failed[1]["reason"]
    assert verdict_key(items[0]) != verdict_key(items[1])


def test_fallback_timeout_is_a_reason_not_a_hang():
    with ScriptedChatServer(lambda n, body: ("hang",)) as srv:
        cfg = LLMFallbackConfig(base_url=srv.base_url, model="m", timeout_s=0.5)

        async def go():
            fb = LLMFallback(cfg)
            try:
                return await fb.verify([UNRESOLVED])
            finally:
                await fb.aclose()

        out = _run(go())
    assert out[0]["correct"] is None and "within 0.5 s" in out[0]["reason"]


def test_hung_verifier_fails_over_every_waiting_call_then_a_background_probe_brings_it_back():
    """Issue 35: a hung verifier held each row for its full ``timeout_s`` and queued the rest behind 8 slots
    (54 of 111 requests got 504). Now the first calls that time out open the failover window and answer every
    call waiting for a slot at once, named; calls in the window make no HTTP call; after it one background
    probe tries, and once the verifier answers again verdicts come back."""
    import time

    healthy = threading.Event()

    def script(n, body):
        if not healthy.is_set():
            return ("hang",)
        return ("ok", json.dumps({"correct": "middle" in body["messages"][-1]["content"], "reason": "graded"}))

    with ScriptedChatServer(script) as srv:
        cfg = LLMFallbackConfig(base_url=srv.base_url, model="m", max_concurrency=4, timeout_s=1.0, cache_size=0)
        items = [dict(UNRESOLVED, response=f"Stick 4 lays exactly in the middle ({i}).") for i in range(32)]

        async def go():
            fb = LLMFallback(cfg, failover_s=1.5)
            t0 = time.monotonic()
            first = await asyncio.gather(*(fb.verify([it]) for it in items))  # 32 requests at once
            took = time.monotonic() - t0
            calls_first = fb.n_calls
            t1 = time.monotonic()
            during = await fb.verify(items[:8])  # inside the window: no call at all
            took_during = time.monotonic() - t1
            calls_during = fb.n_calls - calls_first
            healthy.set()
            await asyncio.sleep(1.6)  # the window ends
            kick = await fb.verify(items[:1])  # still failed over; starts the background probe
            for _ in range(50):
                if not fb._down_reason:
                    break
                await asyncio.sleep(0.1)
            after = await fb.verify(items[1:3])
            await fb.aclose()
            return first, took, calls_first, during, took_during, calls_during, kick, after

        first, took, calls_first, during, took_during, calls_during, kick, after = _run(go())
    rows = [r[0] for r in first]
    assert all(r["correct"] is None and r["method"] == "llm_error" for r in rows)
    assert sum("no answer within 1.0 s" in r["reason"] for r in rows) >= 1
    assert all(r["reason"].startswith("llm verifier: ") for r in rows)
    assert calls_first == 4  # the 4 slots' calls; the 28 waiting were answered without one
    assert took < 4.0, took  # every one of the 32 within about timeout_s, not 8 rounds of it
    assert calls_during == 0 and took_during < 0.5 and all("failing over" in r["reason"] for r in during)
    assert "failing over" in kick[0]["reason"]
    assert [r["correct"] for r in after] == [True, True] and {r["method"] for r in after} == {"llm"}
