"""Issue 34: a run that measured nothing says so and exits non-zero (codes: ``howeval.ray_jobs.outcome``).

A real HTTP server on 127.0.0.1 (``tests/fakes/chat_server.py``) answers every call 401, as an endpoint
does for a wrong API key: once for an ``openai`` engine, once for an LLM judge. The sweep and
``howeval.ray_jobs.judge`` exit 3 with the 401 in their last stderr line, and no all-N figure is printed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from howeval.ray_jobs.outcome import (
    EXIT_ALL_ROWS_FAILED,
    EXIT_NOT_STARTED,
    all_judge_calls_failed,
    all_rows_failed,
    exit_code,
)

from fakes.chat_server import ScriptedChatServer


def _deny(n, body):
    return ("status", 401, {})


def _demo(repo_root: Path, n: int) -> list[dict]:
    return [json.loads(line) for line in (repo_root / "datasets" / "demo" / "manifest.jsonl").open()][:n]


def _config(tmp: Path, repo_root: Path, model: dict, judge_url: str | None, n: int = 4) -> Path:
    judges = {"pattern": [{"name": "rules"}]}
    if judge_url:
        judges = {"pattern": [{"name": "llm401", "kind": "llm", "with_image": False,
                               "llm": {"model": "judge", "options": {"base_url": judge_url, "api_key_env": "HOWEVAL_T34_KEY",
                                                                     "max_retries": 0, "timeout_s": 10}}}],
                  "num_cpus": 0.2}
    cfg = {"name": "t34", "output_uri": str(tmp / "run"),
           "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": n}],
           "models": [model], "judges": judges, "ray": {"num_cpus": 2}}
    p = tmp / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_outcome_reads_every_row_failed_and_every_judge_call_failed_in_one_line():
    rows = [{"sample_id": s, "config": "api", "mode": "NT", "error": "AuthenticationError: 401\nbody"} for s in "ba"]
    rows += [{"sample_id": "a", "config": "api", "mode": "T", "error": None}]
    assert all_rows_failed(rows) == {"api NT": "all 2 rows failed: AuthenticationError: 401 body"}
    js = [{"sample_id": s, "config": "c", "mode": "NT", "judge": "j@1", "judge_error": e}
          for s, e in (("a", "401"), ("b", "timeout"))]
    assert all_judge_calls_failed(js) == {"judge j@1": "all 2 judge calls failed: 401 (+1 other reason)"}
    assert all_judge_calls_failed(js + [dict(js[0], sample_id="c", judge_error=None)]) == {}
    assert exit_code([], {}, {}) == 0 and exit_code([], {}, {"judge": "x"}) == 1
    assert exit_code([], {"api NT": "x"}, {"judge": "x"}) == EXIT_ALL_ROWS_FAILED
    assert exit_code(["broken"], {"api NT": "x"}, {"broken": "x"}) == EXIT_NOT_STARTED


@pytest.mark.ray
@pytest.mark.slow
def test_a_401_endpoint_fails_the_sweep_and_the_judge_job_in_one_line(tmp_path, repo_root, capsys, monkeypatch):
    from howeval.ray_jobs.judge import main as judge_main
    from howeval.ray_jobs.sweep import main as sweep_main

    monkeypatch.setenv("HOWEVAL_T34_KEY", "wrong-key")
    with ScriptedChatServer(_deny) as srv:
        # 1. the engine answers 401: every row failed, nothing to judge
        api = {"name": "api", "engine": "openai", "model": "m", "modes": {"NT": {}, "T": {}},
               "options": {"base_url": srv.base_url, "api_key_env": "HOWEVAL_T34_KEY", "max_retries": 0},
               "resources": {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}}
        (tmp_path / "a").mkdir()
        assert sweep_main(["--config", str(_config(tmp_path / "a", repo_root, api, srv.base_url))]) == EXIT_ALL_ROWS_FAILED
        cap = capsys.readouterr()
        assert srv.arrivals == 8  # 4 samples x 2 modes, each refused once (401 is not retried)
        last = cap.err.strip().splitlines()[-1]
        assert last.startswith("error: run failed (exit 3): api NT: all 4 rows failed: AuthenticationError: Error code: 401")
        assert "(+1 more above)" in last  # api T too
        assert "  api  NT  not measured: all 4 rows failed (engine errors)" in cap.out
        assert "all-N" not in cap.out
        metrics = json.loads((tmp_path / "a" / "run" / "metrics.json").read_text())
        assert metrics["configs"]["api"]["NT"]["acc_all_n"] is None
        assert metrics["configs"]["api"]["NT"]["trigger_all_n"] is None
        report = (tmp_path / "a" / "run" / "report.md").read_text()
        assert "> **Not measured**: config 'api' NT: not measured: all 4 rows failed" in report

        # 2. good answers (replay), the LLM judge answers 401: Trigger not measured, exit 3 naming the judge
        rows = _demo(repo_root, 4)
        recorded = tmp_path / "recorded.jsonl"
        recorded.write_text("".join(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n"
                                    for r in rows))
        replay = {"name": "rep", "engine": "replay", "options": {"path": str(recorded)}, "modes": {"NT": {}},
                  "resources": {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}}
        (tmp_path / "b").mkdir()
        before = srv.arrivals
        assert sweep_main(["--config", str(_config(tmp_path / "b", repo_root, replay, srv.base_url))]) == EXIT_ALL_ROWS_FAILED
        cap = capsys.readouterr()
        assert srv.arrivals - before == 4
        last = cap.err.strip().splitlines()[-1]
        assert last.startswith("error: run failed (exit 3): judge llm401@") and "all 4 judge calls failed" in last
        assert "401" in last and "\n" not in last
        assert "Trigger not measured (4 judge errors)" in cap.out
        assert json.loads((tmp_path / "b" / "run" / "failures.json").read_text()) == {}

        # 3. howeval.ray_jobs.judge on that run: the 4 failed judgments are retried, fail again: exit 3, not {"judged": 4} and 0
        assert judge_main(["--run", str(tmp_path / "b" / "run"), "--no-report"]) == EXIT_ALL_ROWS_FAILED
        cap = capsys.readouterr()
        assert json.loads(cap.out.strip().splitlines()[-1]) == {"judged": 4, "judge_errors": 4}
        last = cap.err.strip().splitlines()[-1]
        assert last.startswith("error: judging failed (exit 3): judge llm401@") and "401" in last
        assert srv.arrivals - before == 8
