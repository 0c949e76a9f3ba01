"""LLM judges against a faulty OpenAI-compatible server: every row ends judged or with its judge_error.

The fake server (``tests/fakes/judge_server.py``) answers 30% of calls with 429, 500, a hang past the
client timeout, or garbage text, by a fixed plan per request (seed, text, repair, retry count). Checked:
each row ends as the plan says (no dropped rows, no default labels: every label equals what the server
sent for that text), bounded calls, the ``max_concurrency`` knob (a server-side barrier, no timing), the
``qps`` knob reaching the engine (the limiter itself is tested with an injected clock in
``tests/cpu/engines/test_openai_engine.py``), and (Ray) that a second ``judge_run`` pays no call for rows
already judged without error.
"""
from __future__ import annotations

import json

import pytest

from howeval.config import JudgesConfig
from howeval.judges.pipeline import Judger
from howeval.records import LABELS, response_hash

from fakes.judge_server import FAULTS, FakeJudgeServer, expected_labels

MAX_RETRIES = 2


def judges_cfg(base_url: str, max_concurrency: int = 4, qps: float | None = 20.0, timeout_s: float = 1.0) -> JudgesConfig:
    opts = {"base_url": base_url, "api_key_env": "HOWEVAL_FAKE_KEY", "max_concurrency": max_concurrency,
            "timeout_s": timeout_s, "max_retries": MAX_RETRIES, **({"qps": qps} if qps else {})}
    return JudgesConfig.model_validate({"pattern": [{"name": "fake-llm", "kind": "llm", "with_image": False,
                                                     "llm": {"model": "fake-judge", "options": opts, "max_tokens": 64}}]})


@pytest.fixture(scope="module")
def real_rows(shared_data) -> list[dict]:
    """The 144 real MATH-Vision responses as response rows (question and answer type from the manifest)."""
    manifest = {r["uid"]: r for r in map(json.loads, (shared_data / "manifest.jsonl").read_text().splitlines())}
    rows = []
    for line in (shared_data / "responses" / "mathv_model_responses.jsonl").read_text().splitlines():
        r = json.loads(line)
        m = manifest[f"math-vision:{r['id']}"]
        rows.append({"sample_id": m["uid"], "config": r["model"], "mode": "NT", "question": m["question"],
                     "response": r["response"], "answer": m["answer"], "answer_type": m["answer_type"],
                     "options": m["options"], "benchmark": m["source"], "error": None, "truncated": False,
                     "response_hash": response_hash(r["response"])})
    return rows


def check_rows(out: list[dict], rows: list[dict]) -> tuple[int, int]:
    """Every input row has exactly one judgment: labels as the server sent them, or a judge_error reason."""
    assert len(out) == len(rows)
    judged = errored = 0
    for r, j in zip(rows, out):
        assert (j["sample_id"], j["config"], j["mode"]) == (r["sample_id"], r["config"], r["mode"])
        if j["judge_error"] is None:
            assert {k: j[k] for k in LABELS} == expected_labels(r["response"])
            judged += 1
        else:
            assert j["judge_error"].startswith("judge_error:") and len(j["judge_error"]) > len("judge_error: ")
            assert all(j[k] is None for k in LABELS), "a failed judgment must carry no labels"
            errored += 1
    return judged, errored


ENGINE_ERRORS = {"429": "RateLimitError", "500": "InternalServerError", "hang": "APITimeoutError"}


def test_thirty_percent_faults_through_the_judging_core(real_rows):
    """Each row ends exactly as the server's fault plan says (no rates, no timing): labels as sent, or the
    judge_error of the fault that exhausted the client's retries, or a parse error after one repair."""
    rows = real_rows[:48]
    conc = 4
    with FakeJudgeServer(fault_rate=0.3, seed=0) as srv:
        judger = Judger(judges_cfg(srv.base_url, conc, 20.0, timeout_s=2.0))
        out = judger.judge(rows)
        srv.wait_idle()
        calls = list(srv.calls)
        max_in_flight = srv.max_in_flight
        plan = [srv.outcome(r["response"], MAX_RETRIES) for r in rows]
    judged, errored = check_rows(out, rows)
    assert (judged, errored) == (plan.count("labels"), len(rows) - plan.count("labels"))
    for j, want in zip(out, plan):
        err = j["judge_error"]
        if want == "labels":
            assert err is None
        elif want == "parse":
            assert err.startswith("judge_error: ") and "engine" not in err
        else:  # "engine:<fault>" or "repair engine:<fault>"
            fault = want.split(":")[1]
            assert err.startswith(f"judge_error: engine: {ENGINE_ERRORS[fault]}"), (want, err)
            assert ("(on repair after:" in err) == want.startswith("repair")
    # the plan for these 48 texts meets every fault kind, garbage gets its one repair, and some rows fail
    assert set(FAULTS) <= {c.fault for c in calls} and any(c.repair for c in calls)
    assert 0 < errored < len(rows)
    # bounded: each row at most (1 + retries) attempts for the first request and again for the repair
    assert len(calls) <= len(rows) * (1 + MAX_RETRIES) * 2
    assert max(c.retry_count for c in calls) <= MAX_RETRIES
    assert sum(c.repair and c.retry_count == 0 for c in calls) <= len(rows)
    # the knobs reach the engine: never more than max_concurrency in flight; starts spaced by the limiter
    assert max_in_flight <= conc
    engine = judger.judges["fake-llm"].engine
    assert engine.options.max_concurrency == conc and engine.limiter.interval == pytest.approx(1 / 20.0)


def test_max_concurrency_requests_really_run_at_once(real_rows):
    """The server holds the first 4 requests until 4 are in flight together (an event, not a timing):
    with max_concurrency=4 they all arrive, and the in-flight count never passes 4."""
    rows = real_rows[60:72]
    with FakeJudgeServer(fault_rate=0.0, gate=4) as srv:
        out = Judger(judges_cfg(srv.base_url, 4, None, timeout_s=60.0)).judge(rows)
        srv.wait_idle()
    assert check_rows(out, rows) == (len(rows), 0)
    assert srv.max_in_flight == 4


@pytest.mark.parametrize("fault", FAULTS)
def test_every_call_failing_gives_judge_error_with_reason(real_rows, fault):
    rows = real_rows[48:54]
    with FakeJudgeServer(fault_rate=1.0, faults=(fault,)) as srv:
        out = Judger(judges_cfg(srv.base_url, 3, None, timeout_s=0.5)).judge(rows)
        srv.wait_idle()
        calls = list(srv.calls)
    judged, errored = check_rows(out, rows)
    assert (judged, errored) == (0, len(rows))
    reasons = {j["judge_error"] for j in out}
    if fault == "garbage":  # parsed twice (first + one repair), never retried by the client
        assert len(calls) == 2 * len(rows)
        assert all("engine" not in x for x in reasons)
        assert all(j["rationale"] and "{not json" in j["rationale"] for j in out), "raw output kept"
    elif fault == "hang":  # the engine's circuit breaker: after 4 consecutive timeouts the endpoint is down
        assert len(calls) < len(rows) * (1 + MAX_RETRIES)
        assert all(x.startswith("judge_error: engine: endpoint unavailable (") and ENGINE_ERRORS[fault] in x
                   for x in reasons), reasons
    else:  # engine failure: (1 + retries) attempts, no repair
        assert len(calls) == len(rows) * (1 + MAX_RETRIES)
        kind = ENGINE_ERRORS[fault]
        assert all(x.startswith("judge_error: engine: " + kind) for x in reasons), reasons


# -------------------------------------------------------------------------------------------------
# Through Ray: a replay-engine sweep, judged by the fake LLM judge, then re-judged
# -------------------------------------------------------------------------------------------------


@pytest.mark.ray
def test_judge_run_fault_tolerant_and_cached(tmp_path, repo_root):
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.config import SweepConfig
    from howeval.ray_jobs.judge import judge_run
    from howeval.ray_jobs.sweep import run_sweep
    from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA
    from howeval.store import join, read_table

    manifest = repo_root / "datasets" / "demo" / "manifest.jsonl"
    samples = load_benchmark(str(manifest), limit=12).samples
    replay = tmp_path / "recorded.jsonl"
    with replay.open("w") as f:
        for s in samples:
            for mode in ("NT", "T"):
                text = f"[{s['sample_id']} {mode}] The answer is {s['answer']}."
                f.write(json.dumps({"sample_id": s["sample_id"], "mode": mode, "response": text}) + "\n")
    with FakeJudgeServer(fault_rate=0.3, seed=1) as srv:
        cfg = SweepConfig.model_validate({
            "name": "faults", "output_uri": str(tmp_path / "run"),
            "benchmarks": [{"path": str(manifest), "limit": 12}],
            "models": [{"name": "replayed", "engine": "replay", "options": {"path": str(replay)},
                        "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 12}}],
            "judges": judges_cfg(srv.base_url, 4, 20.0).model_dump() | {"num_cpus": 0.5},
            "ray": {"num_cpus": 2},
        })
        run_sweep(cfg)
        srv.wait_idle()
        first_calls = list(srv.calls)
        responses = read_table(join(cfg.output_uri, "responses"), RESPONSE_SCHEMA)[0].to_pylist()
        judgments = read_table(join(cfg.output_uri, "judgments"), JUDGMENT_SCHEMA)[0].to_pylist()
        assert len(responses) == 24 and len(judgments) == 24
        by_key = {(j["sample_id"], j["mode"]): j for j in judgments}
        failed_texts = set()
        for r in responses:
            j = by_key[(r["sample_id"], r["mode"])]
            if j["judge_error"]:
                assert all(j[k] is None for k in LABELS)
                failed_texts.add(r["response"])
            else:
                assert {k: j[k] for k in LABELS} == expected_labels(r["response"])
        assert len(first_calls) <= 24 * (1 + MAX_RETRIES) * 2 and srv.max_in_flight <= 4

        srv.reset_calls()
        res = judge_run(cfg)
        srv.wait_idle()
        second = list(srv.calls)
    assert res["judged"] == len(failed_texts)
    assert {c.text for c in second} <= failed_texts, "a row judged without error was paid for again"
    assert len(second) <= len(failed_texts) * (1 + MAX_RETRIES) * 2
    if not failed_texts:
        assert second == []
