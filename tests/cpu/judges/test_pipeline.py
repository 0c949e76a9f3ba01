"""Core pieces of the main job without Ray: config errors, loading, reasoning split, metrics, judging."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from howeval.benchmarks.loaders import BadRowError, load_benchmark
from howeval.config import ConfigError, JudgesConfig, ModelConfig, load_sweep_config
from howeval.judges.pipeline import Judger
from howeval.metrics.patterneval import group_metrics, paired_deltas, sweep_metrics, trigger_of
from howeval.engines.prompts import build_request, question_text
from howeval.parsing.reasoning import split_reasoning

# ---------------------------------------------------------------- config


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.yaml"
    p.write_text(text)
    return p


BASE = """
output_uri: out
benchmarks: [{path: m.jsonl}]
models:
  - name: a
    engine: hf
    modes: {NT: {}}
"""


def test_config_resolves_benchmark_paths_against_the_file(tmp_path):
    cfg = load_sweep_config(_write(tmp_path, BASE))
    assert cfg.benchmarks[0].path == str((tmp_path / "m.jsonl").resolve())
    assert cfg.judges.primary_name == "rules"


@pytest.mark.parametrize("patch, expect", [
    (("engine: hf", "engine: nope"), "unknown engine 'nope'"),
    (("modes: {NT: {}}", "modes: {NT: {}, X: {}}"), "models.0.modes.X"),
    (("engine: hf", "engine: hf\n    options: {batch_sz: 3}"), "batch_sz"),
    (("engine: hf", "engine: hf\n    sampling: {max_tokens: 0}"), "models.0.sampling.max_tokens"),
    (("output_uri: out", "output_uri: out\ncolour: red"), "colour"),
])
def test_config_errors_name_the_key(tmp_path, patch, expect):
    with pytest.raises(ConfigError) as e:
        load_sweep_config(_write(tmp_path, BASE.replace(*patch)))
    assert expect in str(e.value)


def test_demo_config_validates(repo_root):
    cfg = load_sweep_config(repo_root / "configs" / "demo.yaml")
    assert [m.name for m in cfg.models] == ["smollm2-135m"] and set(cfg.models[0].modes) == {"NT", "T"}
    assert Path(cfg.benchmarks[0].path).exists()

# ---------------------------------------------------------------- loading


def test_load_real_manifest_stops_on_the_first_bad_row(shared_data):
    with pytest.raises(BadRowError) as e:
        load_benchmark(str(shared_data / "manifest.jsonl"))
    assert e.value.field == "answer" and e.value.uid.startswith("bingo:")
    assert "--skip-bad-rows" in str(e.value)


def test_load_real_manifest_skip_bad_rows_records_them(shared_data):
    res = load_benchmark(str(shared_data / "manifest.jsonl"), skip_bad_rows=True)
    assert len(res.samples) + len(res.bad_rows) == 134
    assert {b["field"] for b in res.bad_rows} == {"answer"} and len(res.bad_rows) == 2
    s = next(x for x in res.samples if x["sample_id"] == "tabmwp:14520")
    assert s["family"] == "OS" and s["answer"] == "9" and s["images"][0][:8] == b"\x89PNG\r\n\x1a\n"
    p = next(x for x in res.samples if x["sample_id"] == "puzzlevqa:circle_size_number_0070")
    assert p["options"] == ["4", "1", "3", "2"] and p["family"] == "VG"


@pytest.mark.parametrize("row, field", [
    ({"uid": "x", "question": "q", "answer": "1", "answer_type": "integer_number", "image": "missing.png",
      "category": "ocr"}, "image"),
    ({"uid": "x", "question": "q", "answer": "1", "answer_type": "numberish", "category": "ocr"}, "answer_type"),
    ({"uid": "x", "question": "q", "answer_type": "integer_number", "category": "ocr"}, "answer"),
])
def test_bad_rows_name_row_and_field(tmp_path, row, field):
    m = tmp_path / "m.jsonl"
    m.write_text(json.dumps({"uid": "ok", "question": "q", "answer": "1", "answer_type": "integer_number",
                             "category": "ocr"}) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(BadRowError) as e:
        load_benchmark(str(m))
    assert (e.value.line, e.value.field) == (2, field)
    res = load_benchmark(str(m), skip_bad_rows=True)
    assert [s["sample_id"] for s in res.samples] == ["ok"] and res.bad_rows[0]["line"] == 2


def test_load_parquet_and_memory_fs(tmp_path):
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"uid": "a", "question": "2+2?", "answer": "4", "answer_type": "integer_number", "category": "stem"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "m.parquet")
    assert load_benchmark(str(tmp_path / "m.parquet")).samples[0]["family"] == "KR"
    with fsspec.open("memory://bench/m.jsonl", "w") as f:
        f.write(json.dumps(rows[0]) + "\n")
    assert load_benchmark("memory://bench/m.jsonl").samples[0]["answer"] == "4"

# ---------------------------------------------------------------- reasoning channel


@pytest.mark.parametrize("raw, finish, expect", [
    ("<think>a</think>B", "stop", ("a", "B", False)),
    ("<think>a", "length", ("a", "", True)),
    ("<think>a", "stop", ("a", "", True)),
    ("a</think> B", "stop", ("a", "B", False)),  # template pre-filled <think>
    ("plain", "length", (None, "plain", False)),
    ("<THINKING>x</THINKING>y", "stop", ("x", "y", False)),
])
def test_split_reasoning(raw, finish, expect):
    s = split_reasoning(raw, finish_reason=finish)
    assert (s.reasoning, s.response, s.truncated) == expect


def test_server_reasoning_channel_wins_and_empty_content_is_truncated():
    assert split_reasoning("42", server_reasoning="r").response == "42"
    s = split_reasoning("", finish_reason="length", server_reasoning="still thinking")
    assert s.truncated and s.response == ""

# ---------------------------------------------------------------- prompts


def test_request_per_mode_and_options():
    m = ModelConfig.model_validate({"name": "q", "engine": "openai", "model": "m", "modes": {
        "NT": {"chat_template_kwargs": {"enable_thinking": False}},
        "T": {"chat_template_kwargs": {"enable_thinking": True}, "max_tokens": 999}}})
    s = {"sample_id": "s1", "question": "Pick", "options": ["x", "y"], "images": [b"\x89PNG\r\n\x1a\nabc"]}
    assert question_text(s) == "Pick\nA. x\nB. y\nPut your final answer in \\boxed{}."
    r = build_request(s, m, "T")
    assert r.chat_template_kwargs == {"enable_thinking": True} and r.max_tokens == 999
    assert r.messages[0]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert r.request_id == "s1|q|T"
    with pytest.raises(KeyError, match="configured"):
        build_request(s, m.model_copy(update={"modes": {"NT": m.modes["NT"]}}), "T")

# ---------------------------------------------------------------- metrics


def _row(sid, mode, correct, labels=(False, False, False, False), **kw):
    return {"sample_id": sid, "config": "c", "mode": mode, "correct": correct, "family": kw.get("family", "VG"),
            "category": kw.get("category", "ocr"), **dict(zip(("cot", "rep", "con", "pr"), labels)), **kw}


def test_metrics_hand_computed():
    nt = [_row("a", "NT", True, (True, False, False, False)), _row("b", "NT", False, (False, True, True, False)),
          _row("c", "NT", None, (None,) * 4, error="boom"), _row("d", "NT", True)]
    t = [_row("a", "T", True), _row("b", "T", True), _row("c", "T", False), _row("d", "T", False, (False,) * 3 + (True,))]
    m = sweep_metrics(nt + t)["configs"]["c"]
    assert m["NT"]["acc"] == pytest.approx(2 / 3) and m["NT"]["trigger"] == pytest.approx(2 / 3)
    assert m["NT"]["labels"] == {"cot": pytest.approx(1 / 3), "rep": pytest.approx(1 / 3),
                                 "con": pytest.approx(1 / 3), "pr": 0.0}
    assert (m["NT"]["n"], m["NT"]["n_scored"], m["NT"]["n_errors"]) == (4, 3, 1)
    assert m["T"]["acc"] == 0.5 and m["T"]["trigger"] == 0.25
    # pairs a, b, d (c has no NT verdict): T-NT correctness = 0 + 1 - 1 -> 0; NT-T triggers = 1 + 1 - 1 -> 1/3
    assert m["delta_acc"] == 0.0 and m["n_paired_acc"] == 3
    assert m["delta_pat"] == pytest.approx(1 / 3) and m["n_paired_pat"] == 3


def test_trigger_is_any_label_and_none_when_unlabelled():
    assert trigger_of(_row("a", "NT", True, (False, False, True, False))) is True
    assert trigger_of(_row("a", "NT", True)) is False
    assert trigger_of(_row("a", "NT", True, (None,) * 4)) is None
    assert group_metrics([])["acc"] is None and paired_deltas([], [])["delta_acc"] is None

# ---------------------------------------------------------------- judging rules


def test_judger_never_labels_failures_or_truncations():
    j = Judger(JudgesConfig())
    base = {"config": "c", "mode": "T", "question": "What is 2+2?", "answer": "4", "answer_type": "integer_number",
            "options": None, "response_hash": "h"}
    rows = [{**base, "sample_id": "ok", "response": "The answer is \\boxed{4}.", "error": None, "truncated": False},
            {**base, "sample_id": "err", "response": "", "error": "timeout", "truncated": False},
            {**base, "sample_id": "cut", "response": "", "error": None, "truncated": True}]
    out = {r["sample_id"]: r for r in j.judge(rows)}
    assert out["ok"]["correct"] is True and out["ok"]["cot"] is False and out["ok"]["judge_error"] is None
    assert out["err"]["correct"] is None and out["err"]["cot"] is None and "timeout" in out["err"]["judge_error"]
    assert out["cut"]["correct"] is False and out["cut"]["verify_method"] == "truncated" and out["cut"]["rep"] is None


def test_judge_agreement_over_two_judges():
    from ray_jobs.report import judge_agreement

    rows = []
    vectors = {"x": ((1, 0, 0, 0), (1, 0, 0, 0)), "y": ((0, 1, 0, 0), (0, 0, 0, 0)), "z": ((0, 0, 0, 0), None)}
    for sid, (a, b) in vectors.items():
        for name, v in (("rules@1", a), ("llm@1", b)):
            labels = dict(zip(("cot", "rep", "con", "pr"), (None,) * 4 if v is None else map(bool, v)))
            rows.append({"sample_id": sid, "config": "c", "mode": "T", "response_hash": "h", "judge": name,
                         "judge_error": "judge_error: garbage" if v is None else None, **labels})
    a = judge_agreement(rows)
    assert a["judges"] == ["llm@1", "rules@1"] and a["n"] == 3
    assert a["n_unanimous"] == 1 and a["n_consensus_samples"] == 1 and a["n_with_errors"] == 1  # z: one judge failed
    assert a["per_label"]["rep"]["n_disputed"] == 1 and a["disputed"] == [["y", "c", "T"]]
    assert judge_agreement([r for r in rows if r["judge"] == "rules@1"]) is None


def test_rejudging_merges_judges_into_the_run():
    from howeval.judges.pipeline import merge_judges

    old = JudgesConfig.model_validate({"pattern": [{"name": "rules"}, {"name": "a", "version": "1"}]})
    new = JudgesConfig.model_validate({"pattern": [{"name": "a", "version": "2"}, {"name": "b"}]})
    m = merge_judges(old, new)
    assert [(j.name, j.version) for j in m.pattern] == [("rules", "1"), ("a", "2"), ("b", "1")]
    assert m.primary_name == "rules"
    assert merge_judges(old, new.model_copy(update={"primary": "b"})).primary_name == "b"


def test_cached_verifier_verdict_is_reused_typed():
    """A cached verdict (a VERIFY_TYPE struct read back from Arrow, or a VerifyResult) is reused as is:
    the verifier does not run again, and the verdict stays a VerifyResult (no JSON string in between)."""
    import pyarrow as pa

    from howeval.judges.verify import VerifyResult
    from howeval.records import VERIFY_TYPE

    cached = VerifyResult(True, "5", "llm", "same value")
    base = {"config": "c", "mode": "T", "question": "Q", "answer": "4", "answer_type": "integer_number",
            "options": None, "response": "The answer is 5.", "error": None, "truncated": False, "response_hash": "h"}
    table = pa.Table.from_pylist([{"cached_verify": vars(cached)}], schema=pa.schema([("cached_verify", VERIFY_TYPE)]))
    rows = [{**base, "sample_id": "a", **table.to_pylist()[0]},
            {**base, "sample_id": "b", "cached_verify": cached},
            {**base, "sample_id": "c", "cached_verify": None}]
    j = Judger(JudgesConfig())
    ver = j.verify_rows(rows)
    assert ver[0] == cached and ver[1] is cached  # rules alone would say 5 != 4
    assert ver[2] == VerifyResult(False, "5", "rule", ver[2].reason) and isinstance(ver[2], VerifyResult)
    out = {r["sample_id"]: r for r in j.judge(rows)}
    assert (out["a"]["correct"], out["a"]["verify_method"], out["c"]["correct"]) == (True, "llm", False)
    with pytest.raises(KeyError, match=r"cached verifier verdict: missing fields \['reason'\]"):
        j.verify_rows([{**base, "sample_id": "d", "cached_verify": {"correct": True, "extracted": "5", "method": "llm"}}])
