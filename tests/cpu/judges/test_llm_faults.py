"""LLM judges against a faulty OpenAI-compatible server: every row ends judged or with its judge_error.

The fake server (``tests/fakes/judge_server.py``) answers 30% of calls with 429, 500, a hang past the
client timeout, or garbage text. Checked: no dropped rows, no default labels (every label equals what the
server sent for that text), bounded calls, the ``max_concurrency`` and ``qps`` knobs, and (Ray) that a
second ``judge_run`` pays no call for rows already judged without error.
"""
from __future__ import annotations

import json

import pytest
from fakes.judge_server import FAULTS, FakeJudgeServer, expected_labels

from howeval.config import JudgesConfig
from howeval.judges.pipeline import Judger
from howeval.records import LABELS, response_hash

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


def test_thirty_percent_faults_through_the_judging_core(real_rows):
    rows = real_rows[:48]
    qps, conc = 20.0, 4
    with FakeJudgeServer(fault_rate=0.3, seed=0) as srv:
        out = Judger(judges_cfg(srv.base_url, conc, qps)).judge(rows)
        srv.wait_idle()
        calls = list(srv.calls)
        max_in_flight = srv.max_in_flight
    judged, errored = check_rows(out, rows)
    assert judged + errored == len(rows) and judged >= len(rows) * 0.8
    served = {c.fault for c in calls}
    assert set(FAULTS) <= served, f"the run met only faults {served}"
    assert any(c.repair for c in calls), "garbage output must be repaired once"
    # bounded: each row at most (1 + retries) attempts for the first call and again for the repair
    assert len(calls) <= len(rows) * (1 + MAX_RETRIES) * 2
    assert max(c.retry_count for c in calls) <= MAX_RETRIES
    # repairs: at most one repair request (plus its retries) per row
    assert sum(c.repair and c.retry_count == 0 for c in calls) <= len(rows)
    # concurrency knob: never more than max_concurrency requests in flight at the server
    assert 1 < max_in_flight <= conc
    # qps knob: request starts paced by the limiter (retries are the client's own, after backoff)
    firsts = sorted(c.start for c in calls if c.retry_count == 0)
    rate = (len(firsts) - 1) / (firsts[-1] - firsts[0])
    assert rate <= qps * 1.1, f"measured {rate:.1f} req/s with qps={qps}"


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
    else:  # engine failure: (1 + retries) attempts, no repair
        assert len(calls) == len(rows) * (1 + MAX_RETRIES)
        kind = {"429": "RateLimitError", "500": "InternalServerError", "hang": "APITimeoutError"}[fault]
        assert all(x.startswith("judge_error: engine: " + kind) for x in reasons), reasons


# -------------------------------------------------------------------------------------------------
# Through Ray: a replay-engine sweep, judged by the fake LLM judge, then re-judged
# -------------------------------------------------------------------------------------------------


@pytest.mark.ray
def test_judge_run_fault_tolerant_and_cached(tmp_path, repo_root):
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.config import SweepConfig
    from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA
    from howeval.store import join, read_table
    from ray_jobs.judge import judge_run
    from ray_jobs.sweep import run_sweep

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
