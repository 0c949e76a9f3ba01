"""The verifier's LLM fallback (issue 21, ``on_unresolved: llm``): the pipeline's handling of its verdicts
and failures, and ``LLMFallback`` against the scripted fake OpenAI-compatible chat server (cache by
response hash, bounded concurrency, failures as reasons, never a silent 0)."""
from __future__ import annotations

import asyncio
import json
import threading

import pytest

from fakes.chat_server import ScriptedChatServer
from howeval.config.rewards import CPRConfig, PatternConfig
from howeval.rewards.llm_fallback import LLMFallback, LLMFallbackConfig, verdict_key
from howeval.rewards.pipeline import PatternRMUnavailable, prepare, score_batch

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
