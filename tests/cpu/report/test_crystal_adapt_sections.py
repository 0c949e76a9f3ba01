"""write_report's CRYSTAL and AdaptMMBench sections (issue 31): the answer Accuracy and the Precision/Recall
ratio beside the step metrics (CRYSTAL's cherry-picking analysis), and AdaptMMBench's consistency check
between text mode and the text part of adaptive mode. A synthetic run (``fakes.runs.make_run``) plus
hand-written ``steps/`` and ``adapt/`` rows."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from howeval.config import load_run_config
from howeval.plugins import write_report
from howeval.records import ADAPT_SCHEMA, STEPS_SCHEMA, conform

from fakes.runs import make_run, outcome


def _step(sid, cfg, mode, h, p, r):
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"sample_id": sid, "config": cfg, "mode": mode, "response_hash": h, "embedder": "e", "tau": 0.35,
            "alpha": 0.5, "order": "lis", "pred_steps": ["x"], "ref_steps": ["y"], "step_matched": 1,
            "step_precision": p, "step_recall": r, "step_f1": f1, "step_lis": 1.0, "step_ordered_f1": f1}


def _adapt(sid, mode, correct, called):
    return {"sample_id": sid, "config": "alpha", "mode": mode, "domain": "ocr", "correct": correct,
            "verify_method": "rules", "called": called, "n_calls": int(called), "n_ineffective": 0, "tokens": 10,
            "steps": 2, "n_turns": 1, "final_text": "a", "calls": "[]", "error": None, "trajectory_steps": ["s"],
            "key_steps": ["k"], "key_step_coverage": 0.5}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = make_run(tmp_path_factory.mktemp("run") / "r")
    resp = pq.read_table(root / "responses").to_pylist()
    hashes = {(r["sample_id"], r["config"], r["mode"]): r["response_hash"] for r in resp}
    steps = []
    for i in range(6):  # alpha NT: precision 0.9, recall 0.3 on samples s00..s05
        steps.append(_step(f"s{i:02d}", "alpha", "NT", hashes[(f"s{i:02d}", "alpha", "NT")], 0.9, 0.3))
    for i in range(3):  # beta T: recall above precision (beta has no s03)
        steps.append(_step(f"s{i:02d}", "beta", "T", hashes[(f"s{i:02d}", "beta", "T")], 0.4, 0.8))
    (root / "steps").mkdir()
    pq.write_table(conform(steps, STEPS_SCHEMA), root / "steps" / "part-0.parquet")
    # AdaptMMBench: a..e in text and adaptive mode. Tool-free adaptive answers: a (same), b (flips to wrong),
    # c (same), d (flips to right); e called a tool (left out of the check).
    text = {"a": True, "b": True, "c": False, "d": False, "e": False}
    adaptive = {"a": (True, False), "b": (False, False), "c": (False, False), "d": (True, False), "e": (True, True)}
    rows = [_adapt(u, "text", ok, False) for u, ok in text.items()]
    rows += [_adapt(u, "adaptive", ok, called) for u, (ok, called) in adaptive.items()]
    rows[-1].update(n_calls_judged=2, n_calls_effective=1, coverage_method="llm:gpt-5@x|process-v1")  # e: judged calls
    rows[-2].update(coverage_method="llm:gpt-5@x|process-v1", coverage_error="judge_error: no JSON object",
                    key_step_coverage=None)
    (root / "adapt" / "alpha").mkdir(parents=True)
    pq.write_table(conform(rows, ADAPT_SCHEMA), root / "adapt" / "alpha" / "part-0.parquet")
    metrics = write_report(load_run_config(str(root)))
    return metrics, (root / "report.md").read_text(), json.loads((root / "metrics.json").read_text())


def test_crystal_accuracy_and_precision_recall_ratio(report):
    metrics, md, on_disk = report
    x = metrics["crystal"]["alpha"]["NT"]
    verdicts = [outcome("alpha", "NT", i)[0] for i in range(6)]  # s00 is unresolved (None)
    scored = [v for v in verdicts if v is not None]
    assert x["n"] == 6 and x["n_verdicts"] == len(scored) == 5
    assert x["accuracy"] == pytest.approx(sum(scored) / 5)
    assert x["pr_ratio"] == pytest.approx(3.0)
    assert metrics["crystal"]["beta"]["T"]["pr_ratio"] == pytest.approx(0.5)
    assert metrics["crystal_cherry_picking"] == {"n": 2, "precision_above_recall": 1, "min_ratio": pytest.approx(3.0),
                                                 "max_ratio": pytest.approx(3.0)}
    assert on_disk["crystal"]["alpha"]["NT"]["pr_ratio"] == pytest.approx(3.0)
    assert "| config | mode | n | Acc | Precision | Recall | P/R | Match F1 | LIS ratio | Ordered Match F1 |" in md
    assert f"| alpha | NT | 6 | {100 * sum(scored) / 5:.1f} (5) | 90.0 | 30.0 | 3.00x |" in md
    assert "Precision > Recall in 1 of 2 config x mode rows (3.00x–3.00x)" in md


def test_adapt_consistency_figure(report):
    metrics, md, _ = report
    c = metrics["adapt"]["alpha"]["consistency"]
    assert c == {"n": 4, "inconsistent": 2, "rate": 0.5, "text_only": 1, "adaptive_only": 1}
    assert "inconsistent (text vs adaptive text)" in md and "| 0.50 (2/4) |" in md


def test_adapt_process_judge_columns(report):
    metrics, md, _ = report
    a = metrics["adapt"]["alpha"]
    assert a["tool_effectiveness"] == {"adaptive": 0.5} and a["coverage_errors"] == 1
    assert a["coverage_method"] == ["llm:gpt-5@x|process-v1"]
    assert "key-step coverage (decided by the LLM judge gpt-5@x|process-v1 per key step; 1 judge failures left out)" in md
    # tokens, steps, tool calls (1 of 5 called), turns, ran ('–': no executed call records), effective, coverage
    assert "| alpha | adaptive | 10.0 | 2.0 | 0.2 | 1.0 | – | 50.0 | 50.0 |" in md


def test_an_undefined_mcc_is_null_in_metrics_json_and_said_in_the_report(tmp_path):
    """Issue 40: no tool ever called -> the MCC's denominator is 0; metrics.json held 0.0 while the report
    said 'undefined'. Now null on disk (valid JSON, no NaN either), the confusion beside it, the words unchanged."""
    root = make_run(tmp_path / "r")
    rows = [_adapt(u, "text", ok, False) for u, ok in {"a": True, "b": False, "c": False}.items()]
    rows += [_adapt(u, "adaptive", ok, False) for u, ok in {"a": True, "b": False, "c": True}.items()]
    (root / "adapt" / "alpha").mkdir(parents=True)
    pq.write_table(conform(rows, ADAPT_SCHEMA), root / "adapt" / "alpha" / "part-0.parquet")
    write_report(load_run_config(str(root)))
    text = (root / "metrics.json").read_text()
    on_disk = json.loads(text, parse_constant=lambda c: pytest.fail(f"metrics.json holds {c}"))
    a = on_disk["adapt"]["alpha"]
    assert a["confusion"] == {"tp": 0, "fp": 0, "tn": 1, "fn": 2} and a["mcc"] is None and a["mcc_solvable"] is None
    assert "undefined (no tool called)" in (root / "report.md").read_text()
