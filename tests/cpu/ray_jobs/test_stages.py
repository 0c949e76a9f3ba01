"""Planning of the shared stages (pending rows, attempts, judging) and the one-row-per-key tidy-up."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from howeval.config import JudgesConfig, ModelConfig
from howeval.plugins.patterneval import judge_input, pending_work, plan_judging, tidy
from howeval.records import JUDGMENT_SCHEMA, RESPONSE_SCHEMA, conform, latest_responses
from howeval.store import compact, write_table


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (2, 2), "red").save(buf, format="PNG")
    return buf.getvalue()


PNG = _png()
MODEL = ModelConfig(name="m", engine="replay", options={"path": "x.jsonl"}, modes={"NT": {}, "T": {}})
SAMPLES = [{"sample_id": "a"}, {"sample_id": "b"}]


def _resp(sid, mode, error=None, attempt=1, h="h"):
    return {"sample_id": sid, "config": "m", "mode": mode, "error": error, "attempt": attempt,
            "response_hash": None if error else h}


def test_pending_work_new_keys_and_error_retries_up_to_max_attempts():
    latest = latest_responses([_resp("a", "NT"), _resp("a", "T", error="timeout", attempt=1),
                               _resp("b", "NT", error="timeout", attempt=1), _resp("b", "NT", error="500", attempt=3)])
    todo = pending_work(SAMPLES, MODEL, latest, max_attempts=3)
    # a/NT done; a/T failed once -> attempt 2; b/NT failed 3 times -> given up; b/T new -> attempt 1
    assert [(r["sample_id"], r["mode"], r["attempt"]) for r in todo] == [("a", "T", 2), ("b", "T", 1)]
    assert pending_work(SAMPLES, MODEL, latest, max_attempts=1) == [{"sample_id": "b", "config": "m", "mode": "T", "attempt": 1}]
    nt_only = MODEL.model_copy(update={"modes": {"NT": MODEL.modes["NT"]}})
    assert [r["mode"] for r in pending_work(SAMPLES, nt_only, {}, max_attempts=3)] == ["NT", "NT"]


def test_plan_judging_skips_engine_errors_and_done_pairs():
    judges = JudgesConfig.model_validate({"pattern": [{"name": "rules"}, {"name": "other"}]})
    responses = [_resp("a", "NT", h="h1"), _resp("a", "T", error="boom"), _resp("b", "NT", h="h2")]
    judgments = [{"sample_id": "a", "config": "m", "mode": "NT", "response_hash": "h1", "judge": "rules@1",
                  "judge_error": None, "verifier": "rules@2", "verify_method": "rule", "correct": True,
                  "extracted": "4", "verify_reason": None},
                 {"sample_id": "b", "config": "m", "mode": "NT", "response_hash": "h2", "judge": "rules@1",
                  "judge_error": "429", "verifier": "rules@2", "verify_method": "rule", "correct": False,
                  "extracted": "3", "verify_reason": None}]
    plan = plan_judging(responses, judgments, judges)
    assert [(r["sample_id"], r["judges_needed"]) for r in plan] == [("a", ["other@1"]), ("b", ["rules@1", "other@1"])]
    assert plan[0]["cached_verify"]["correct"] is True and plan[1]["cached_verify"]["extracted"] == "3"
    # verdicts of an older verifier (rules@1: before each source's official criterion) are made again on resume
    old = [{**j, "verifier": "rules@1"} for j in judgments]
    plan = plan_judging(responses, old, judges)
    assert [(r["sample_id"], r["judges_needed"], r["cached_verify"]) for r in plan] == [
        ("a", ["rules@1", "other@1"], None), ("b", ["rules@1", "other@1"], None)]


def test_judge_input_drops_error_rows_and_adds_the_image():
    batch = pa.table({"sample_id": ["a", "b"], "images": [[PNG], []]})
    out = conform([_resp("a", "NT"), _resp("b", "NT", error="boom")], RESPONSE_SCHEMA)
    fwd = judge_input(batch, out, with_images=True)
    assert fwd.column("sample_id").to_pylist() == ["a"]
    assert fwd.column("image_data_urls").to_pylist()[0][0].startswith("data:image/png;base64,")
    assert judge_input(batch, conform([_resp("b", "NT", error="boom")], RESPONSE_SCHEMA)) is None


def test_compact_keeps_the_best_row_per_key(tmp_path):
    write_table(pa.table({"k": ["a", "b"], "attempt": [1, 1]}), str(tmp_path / "part-1.parquet"))
    write_table(pa.table({"k": ["b"], "attempt": [2]}), str(tmp_path / "part-2.parquet"))
    assert compact(str(tmp_path), ("k",), rank=lambda r: r["attempt"]) == 1
    rows = sorted(pq.read_table(tmp_path).to_pylist(), key=lambda r: r["k"])
    assert rows == [{"k": "a", "attempt": 1}, {"k": "b", "attempt": 2}]
    write_table(pa.table({"k": ["a"], "attempt": [1]}), str(tmp_path / "part-3.parquet"))  # same rank: newest wins
    assert compact(str(tmp_path), ("k",)) == 1
    assert sorted(p.name for p in tmp_path.glob("*.parquet")) == ["part-2.parquet", "part-3.parquet"]


def test_tidy_leaves_one_response_and_one_judgment_per_key(tmp_path):
    run = tmp_path / "run"
    write_table(conform([_resp("a", "NT", error="boom", attempt=1), _resp("b", "NT", h="hb")], RESPONSE_SCHEMA),
                str(run / "responses" / "m" / "part-1.parquet"))
    write_table(conform([_resp("a", "NT", h="ha2", attempt=2)], RESPONSE_SCHEMA), str(run / "responses" / "m" / "part-2.parquet"))
    j = {"config": "m", "mode": "NT", "judge": "rules@1"}
    write_table(conform([{**j, "sample_id": "b", "response_hash": "hb", "judge_error": "429"},
                         {**j, "sample_id": "a", "response_hash": "old", "judge_error": None}], JUDGMENT_SCHEMA),
                str(run / "judgments" / "m" / "part-1.parquet"))
    write_table(conform([{**j, "sample_id": "b", "response_hash": "hb", "judge_error": None},
                         {**j, "sample_id": "a", "response_hash": "ha2", "judge_error": None}], JUDGMENT_SCHEMA),
                str(run / "judgments" / "m" / "part-2.parquet"))
    (run / "responses" / "m" / ".part-9.parquet.1234.tmp").write_bytes(b"partial")
    assert tidy(str(run)) == {"responses": 1, "judgments": 2}
    resp = sorted((r["sample_id"], r["attempt"], r["error"]) for r in pq.read_table(run / "responses").to_pylist())
    assert resp == [("a", 2, None), ("b", 1, None)]
    judg = sorted((r["sample_id"], r["response_hash"], r["judge_error"]) for r in pq.read_table(run / "judgments").to_pylist())
    assert judg == [("a", "ha2", None), ("b", "hb", None)]
    assert not list((run / "responses").rglob("*.tmp"))


def test_a_config_without_a_batch_size_keeps_its_engine_full(tmp_path):
    """Issue 43: a vllm or openai config that sets no batch size gets its engine's default batch, and its
    generate actor takes enough batches at once to fill the engine's capacity (max_num_seqs, max_concurrency)
    with one batch queued; the judge takes the same batches; an hf config keeps 8 rows, one batch at a time."""
    from howeval.config import SweepConfig
    from howeval.plugins.patterneval import plan_sweep

    cfg = SweepConfig.model_validate({
        "name": "p", "output_uri": str(tmp_path / "run"), "benchmarks": [{"path": "m.jsonl"}],
        "models": [{"name": "v", "engine": "vllm", "model": "/m", "modes": {"NT": {}}},
                   {"name": "v128", "engine": "vllm", "model": "/m", "modes": {"NT": {}}, "options": {"max_num_seqs": 128}},
                   {"name": "api", "engine": "openai", "model": "m", "modes": {"NT": {}},
                    "options": {"base_url": "http://127.0.0.1:1/v1", "max_concurrency": 256}},
                   {"name": "h", "engine": "hf", "modes": {"NT": {}}}]})
    samples = [{"sample_id": f"s{i}", "question": "q", "images": None, "image_paths": None} for i in range(3)]
    pipes, _ = plan_sweep(cfg, samples, list(cfg.models), {}, judges=cfg.judges)
    got = {p.name: (p.stages[0].batch_size, p.stages[0].concurrency, p.stages[1].batch_size) for p in pipes}
    assert got == {"v": (64, 17, 64), "v128": (32, 5, 32), "api": (64, 5, 64), "h": (8, 1, 8)}
    # rows in flight per replica: capacity + one batch (1024 assumed for an unset max_num_seqs)
    assert [b * c for b, c, _ in got.values()] == [1088, 160, 320, 8]


def test_plan_sweep_declares_each_configs_stages(tmp_path):
    """The planner (no Ray) gives one pipeline per config with work: generate -> judge, resources and batches
    in flight from the config (an openai config keeps several batches in one actor), plus a judge pipeline
    for responses written without a judgment; images travel as paths."""
    import subprocess
    import sys

    from howeval.config import SweepConfig
    from howeval.plugins.patterneval import plan_sweep

    cfg = SweepConfig.model_validate({
        "name": "p", "output_uri": str(tmp_path / "run"), "benchmarks": [{"path": "m.jsonl"}],
        "models": [{"name": "rep", "engine": "replay", "options": {"path": "x.jsonl"}, "modes": {"NT": {}, "T": {}},
                    "resources": {"replicas": 2, "num_cpus": 0.5, "batch_size": 4}},
                   {"name": "api", "engine": "openai", "model": "m", "modes": {"NT": {}},
                    "options": {"base_url": "http://127.0.0.1:1/v1", "max_concurrency": 16},
                    "resources": {"batch_size": 8}}],
        "judges": {"pattern": [{"name": "rules"}], "replicas": 2, "num_cpus": 0.3}})
    samples = [{"sample_id": s, "question": "q", "images": None, "image_paths": [f"/img/{s}.png"]} for s in "ab"]
    written = {("a", "rep", "NT"): {**_resp("a", "NT", h="h"), "config": "rep"}}
    pipes, info = plan_sweep(cfg, samples, list(cfg.models), written, judges=cfg.judges)
    assert [p.name for p in pipes] == ["rep", "api", "judge"]
    rep, api, judge = pipes
    assert [s.name for s in rep.stages] == ["generate", "judge"] and rep.rows.num_rows == 3  # a/NT is written
    gen = rep.stages[0]
    assert (gen.replicas, gen.concurrency, gen.num_cpus, gen.batch_size, gen.read_images) == (2, 1, 0.5, 4, True)
    assert api.stages[0].concurrency == 3  # ceil(16 / 8) + 1 batches in flight in one actor
    assert rep.rows.column("image_paths").to_pylist()[0] == ["/img/a.png"]
    assert rep.rows.column("images").null_count == rep.rows.num_rows  # no image bytes leave the driver
    # the judges' 2 actors x 0.3 CPUs are the sweep's: spread over 3 pipelines, one actor each at 0.2
    assert rep.stages[1].replicas == 1 and rep.stages[1].num_cpus == pytest.approx(0.2)
    assert judge.rows.column("sample_id").to_pylist() == ["a"] and [s.name for s in judge.stages] == ["judge"]
    assert info["totals"]["rep NT"] == (2, 1) and info["totals"]["judge"] == (1 + 3 + 2, 0)
    assert "generate" in rep.describe() and "PolicyStage" in rep.describe()
    # the planner is pure: importing it loads no Ray
    code = "import sys, howeval.plugins, howeval.plugins.pipeline, howeval.plugins.patterneval; print('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
