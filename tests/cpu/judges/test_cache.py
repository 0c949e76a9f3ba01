"""The write-ahead judge cache: a killed (re-)judge pays no call twice (issue 12)."""
from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from howeval.config import JudgesConfig
from howeval.engines.base import ChatRequest, Completion
from howeval.judges.cache import CachingEngine, JudgeCache, judge_cache_dir, request_key
from howeval.judges.pipeline import Judger
from howeval.records import LABELS, response_hash

from fakes.judge_server import FakeJudgeServer, expected_labels


def req(text: str, rid: str = "r") -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], max_tokens=8, request_id=rid)


class Crashing:
    """An engine with submit(): answers requests one by one and 'dies' (raises) after ``die_after`` answers."""

    name = "crashing"

    def __init__(self, die_after: int | None = None):
        self.die_after = die_after
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def submit(self, r: ChatRequest) -> Future:
        f: Future = Future()
        with self._lock:
            if self.die_after is not None and len(self.calls) >= self.die_after:
                f.set_exception(KeyboardInterrupt("killed"))
                return f
            self.calls.append(r.messages[0]["content"])
        f.set_result(Completion(text=f"answer to {r.messages[0]['content']}", request_id=r.request_id))
        return f


def test_key_ignores_the_request_id_but_not_the_judge_or_the_text():
    assert request_key("j@1", req("a", "x")) == request_key("j@1", req("a", "y"))
    assert request_key("j@1", req("a")) != request_key("j@2", req("a"))
    assert request_key("j@1", req("a")) != request_key("j@1", req("b"))


def test_a_killed_batch_keeps_what_arrived_and_the_rerun_pays_only_the_rest(tmp_path):
    reqs = [req(f"q{i}", f"row{i}") for i in range(10)]
    dead = Crashing(die_after=4)
    with pytest.raises(KeyboardInterrupt):
        CachingEngine(dead, JudgeCache(tmp_path), "judge@1").generate(reqs)
    assert len(dead.calls) == 4
    again = Crashing()
    eng = CachingEngine(again, JudgeCache(tmp_path), "judge@1")  # a new process: reads the segments
    out = eng.generate(reqs)
    assert again.calls == [f"q{i}" for i in range(4, 10)]  # the 4 answered calls are not paid twice
    assert [c.text for c in out] == [f"answer to q{i}" for i in range(10)]
    assert [c.request_id for c in out] == [f"row{i}" for i in range(10)]
    assert (eng.hits, eng.calls) == (4, 6)


def test_errors_are_not_cached_and_torn_lines_are_skipped(tmp_path):
    cache = JudgeCache(tmp_path)
    cache.put("k1", Completion(text="", error="HTTP 500"))
    cache.put("k2", Completion(text="ok"))
    cache.close()
    with open(cache.path, "a", encoding="utf-8") as fh:
        fh.write('{"key": "k3", "completion": {"te')  # a write cut by a kill
    again = JudgeCache(tmp_path)
    assert again.get("k1") is None and again.get("k2").text == "ok" and again.get("k3") is None and len(again) == 1


def test_cache_dir_placement():
    rules_only = JudgesConfig.model_validate({"pattern": [{"name": "rules", "kind": "rules"}]})
    llm = JudgesConfig.model_validate({"pattern": [{"name": "j", "kind": "llm", "llm": {
        "model": "m", "options": {"base_url": "http://127.0.0.1:9/v1"}}}]})
    assert judge_cache_dir(rules_only, "runs/x") is None
    assert judge_cache_dir(llm, "runs/x") == "runs/x/judge_cache"
    assert "/.cache/howeval/judge_cache/" in judge_cache_dir(llm, "s3://bucket/run")
    with pytest.raises(ValueError, match="local"):
        JudgeCache("s3://bucket/run/judge_cache")


def test_judger_rerun_pays_no_call_twice(tmp_path):
    rows = [{"sample_id": f"s{i}", "config": "c", "mode": "NT", "question": "q", "response": f"The answer is {i}.",
             "answer": str(i), "answer_type": "free_form", "options": None, "benchmark": "b", "error": None,
             "truncated": False, "response_hash": response_hash(f"The answer is {i}.")} for i in range(6)]
    with FakeJudgeServer(fault_rate=0.0) as srv:
        cfg = JudgesConfig.model_validate({"pattern": [{"name": "fake", "kind": "llm", "with_image": False, "llm": {
            "model": "fake-judge", "max_tokens": 64, "options": {"base_url": srv.base_url, "max_retries": 0}}}]})
        first = Judger(cfg, cache_dir=str(tmp_path)).judge(rows)
        srv.wait_idle()
        n_first = len(srv.calls)
        second = Judger(cfg, cache_dir=str(tmp_path)).judge(rows)
        srv.wait_idle()
        assert n_first == 6 and len(srv.calls) == 6  # the rerun answered every row from the cache
    for r, a, b in zip(rows, first, second):
        assert {k: a[k] for k in LABELS} == {k: b[k] for k in LABELS} == expected_labels(r["response"])


# ------------------------------------------------- issue 25: only answers the judge can read are cached


class Scripted:
    """An engine (generate only) answering every request with ``text``; records how many it answered."""

    name = "scripted"

    def __init__(self, text: str):
        self.text = text
        self.calls = 0

    def generate(self, reqs):
        self.calls += len(reqs)
        return [Completion(text=self.text, request_id=r.request_id) for r in reqs]


GOOD = '{"cot": false, "rep": true, "con": false, "pr": false}'


def _rows(n):
    return [{"sample_id": f"s{i}", "config": "c", "mode": "NT", "question": "q", "response": f"The answer is {i}.",
             "answer": str(i), "answer_type": "free_form", "options": None, "benchmark": "b", "error": None,
             "truncated": False, "response_hash": response_hash(f"The answer is {i}.")} for i in range(n)]


def test_unparseable_judge_answers_are_not_replayed_after_the_judge_is_fixed(tmp_path):
    cfg = JudgesConfig.model_validate({"pattern": [{"name": "j", "kind": "llm", "with_image": False,
                                                    "llm": {"model": "m", "max_tokens": 64}}]})
    broken, fixed = Scripted("I think it has repetition."), Scripted(GOOD)
    first = Judger(cfg, engine_builder=lambda m, o: broken, cache_dir=str(tmp_path)).judge(_rows(3))
    assert broken.calls == 6  # 3 answers + 3 repairs, none readable
    assert all(r["rep"] is None for r in first)
    second = Judger(cfg, engine_builder=lambda m, o: fixed, cache_dir=str(tmp_path)).judge(_rows(3))
    assert fixed.calls == 3  # asked again: nothing unreadable was replayed
    assert [r["rep"] for r in second] == [True, True, True]
    third_engine = Scripted("never asked")
    third = Judger(cfg, engine_builder=lambda m, o: third_engine, cache_dir=str(tmp_path)).judge(_rows(3))
    assert third_engine.calls == 0 and [r["rep"] for r in third] == [True, True, True]  # good answers are cached


def test_a_stored_unreadable_answer_is_asked_again_and_replaced(tmp_path):
    r = req("q")
    key = request_key("j@1", r)
    JudgeCache(tmp_path).put(key, Completion(text="no json here"))  # written by a version without the check
    fixed = Scripted(GOOD)
    eng = CachingEngine(fixed, JudgeCache(tmp_path), "j@1", accept=lambda c: c.text.startswith("{"))
    assert eng.generate([r])[0].text == GOOD and (fixed.calls, eng.rejected) == (1, 1)
    again = CachingEngine(Scripted("x"), JudgeCache(tmp_path), "j@1", accept=lambda c: c.text.startswith("{"))
    assert again.generate([r])[0].text == GOOD and again.calls == 0  # the readable answer wins on reload
