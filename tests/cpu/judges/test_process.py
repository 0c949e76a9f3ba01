"""The LLM process judge (issue 31): AdaptMMBench's key-step coverage and tool-call effectiveness "decided by
GPT-5", through the project's judge protocol (one repair, failure rows, the write-ahead cache), against the
scripted fake OpenAI-compatible chat server."""
from __future__ import annotations

import json

import pytest

from howeval.config.engines import OpenAIOptions
from howeval.engines.openai_engine import OpenAIEngine
from howeval.judges.cache import CachingEngine, JudgeCache
from howeval.judges.process import LLMProcessJudge, parse_coverage_output, process_readable
from howeval.judges.verdict import JudgeParseError

from fakes.chat_server import ScriptedChatServer


def _engine(srv):
    return OpenAIEngine("judge-model", OpenAIOptions(base_url=srv.base_url, max_retries=1, backoff_s=0))


def test_coverage_and_effectiveness_with_repair_failure_rows_and_cache(tmp_path):
    def script(n, body):
        user = body["messages"][1]["content"]
        if "Key steps:" in user:
            if "Count the red circles" in user:  # answers a list of the wrong length first, then repairs
                last = body["messages"][-1]["content"]
                if last.startswith("Your answer could not be read"):
                    return ("ok", '{"covered": [true, false], "reason": "no count"}')
                return ("ok", '{"covered": [true]}')
            if "Read the sign" in user:
                return ("ok", "I think it is covered.")  # never JSON: a failure row after one repair
            return ("ok", '```json\n{"covered": [true, true, false], "reason": "skips the check"}\n```')
        if "zoom_in" in user:
            return ("ok", json.dumps({"effective": "[10, 10, 50, 50]" in user, "reason": "box"}))
        return ("status", 500, {})

    items = [{"question": "How many red circles?", "key_steps": ["Find the circles.", "Count the red circles."],
              "steps": ["There are circles."]},
             {"question": "What does the sign say?", "key_steps": ["Read the sign."], "steps": ["It says STOP."]},
             {"question": "Which is bigger?", "key_steps": ["a", "b", "c"], "steps": ["x", "y"]}]
    calls = [{"question": "q", "step": "Zoom on the sign.", "tool": "zoom_in", "arguments": {"box": [10, 10, 50, 50]},
              "status": "ok", "result": "crop 40x40"},
             {"question": "q", "step": "Zoom on the sign.", "tool": "zoom_in", "arguments": {"box": [0, 0, 5, 5]},
              "status": "ok"},
             {"question": "q", "step": "Rotate.", "tool": "rotate", "arguments": {"angle": 90}, "status": "ok"}]
    cache = JudgeCache(str(tmp_path / "cache"))
    with ScriptedChatServer(script) as srv:
        judge = LLMProcessJudge(CachingEngine(_engine(srv), cache, "gpt-5@x", process_readable), "gpt-5", "x")
        cov = judge.coverage_batch(items)
        eff = judge.effectiveness_batch(calls)
        n_first = len(srv.seen)
        again = LLMProcessJudge(CachingEngine(_engine(srv), JudgeCache(str(tmp_path / "cache")), "gpt-5@x",
                                              process_readable), "gpt-5", "x").coverage_batch(items)
        n_second = len(srv.seen) - n_first
    assert cov[0].value == 0.5 and cov[0].decisions == [True, False] and cov[0].error is None  # repaired
    assert cov[1].value is None and cov[1].error.startswith("judge_error: no JSON object")
    assert "repair output" in cov[1].raw
    assert cov[2].value == pytest.approx(2 / 3) and cov[2].reason == "skips the check"
    assert [v.value for v in eff] == [True, False, None]
    assert eff[2].error.startswith("judge_error: engine:")
    # the rerun: the two readable coverage answers come from the cache; only the unreadable one is asked again
    # (the first ask + its repair)
    assert [v.value for v in again] == [0.5, None, pytest.approx(2 / 3)] and n_second == 2


def test_parse_coverage_needs_one_boolean_per_key_step():
    with pytest.raises(JudgeParseError, match="2 entries for 3 key steps"):
        parse_coverage_output('{"covered": [true, true]}', 3)
    with pytest.raises(JudgeParseError, match="list of true/false"):
        parse_coverage_output('{"covered": ["yes"]}', 1)
    with pytest.raises(ValueError, match="'key_steps' is empty"):
        LLMProcessJudge(object.__new__(type("E", (), {"generate": lambda s, r: []})), "j", "1").coverage_batch(
            [{"question": "q", "key_steps": [], "steps": []}])
