"""Table 6 (task accuracy) end to end through a real sweep on the replay engine: two policies (BaseRL, PatternRL) x
two modes on three task benchmarks in three formats, scored by the ``taskacc`` plug-in after generation, and the
report's table checked value by value.

The benchmark files are SYNTHETIC rows written by this test in ChartQA's and DocVQA's released JSON formats and the
project's manifest (made-up questions, answers and images); the recorded responses are written here too.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image


def _png(folder: Path, name: str) -> None:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), (30, 60, 90)).save(buf, format="PNG")
    (folder / name).write_bytes(buf.getvalue())


def _benchmarks(d: Path) -> list[dict]:
    (d / "chart").mkdir(parents=True)
    for n in ("a.png", "b.png"):
        _png(d / "chart" / "png", n)
    (d / "chart" / "chart.json").write_text(json.dumps([
        {"imgname": "a.png", "query": "What is the peak value?", "label": "40"},
        {"imgname": "b.png", "query": "Which colour is the largest bar?", "label": "Blue"},
        {"imgname": "b.png", "query": "What is the share of B?", "label": "12.5"}]))
    _png(d / "doc", "documents/p1.png")
    (d / "doc" / "val.json").write_text(json.dumps({"dataset_name": "docvqa", "data": [
        {"questionId": 101, "question": "What is the ratio?", "image": "documents/p1.png", "answers": ["0.28", "0.28:1"]},
        {"questionId": 102, "question": "What is the title?", "image": "documents/p1.png", "answers": ["Annual Report"]}]}))
    _png(d / "math", "x.png")
    (d / "math" / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"uid": "m1", "question": "What is x?", "answer": "0.5", "answer_type": "free_form", "category": "stem", "image": "x.png"},
        {"uid": "m2", "question": "How many?", "answer": "7", "answer_type": "integer_number", "category": "stem",
         "image": "x.png"}]))
    return [{"name": "chart", "path": str(d / "chart" / "chart.json"), "format": "chartqa",
             "image_root": str(d / "chart" / "png"), "task": {"category": "document", "criterion": "relaxed"}},
            {"name": "doc", "path": str(d / "doc" / "val.json"), "format": "docvqa",
             "task": {"category": "document", "criterion": "anls"}},
            {"name": "mathset", "path": str(d / "math" / "manifest.jsonl"), "task": {"category": "math", "criterion": "math"}}]


IDS = ["chartqa:chart:1", "chartqa:chart:2", "chartqa:chart:3", "docvqa:101", "docvqa:102", "m1", "m2"]
BASERL = ["\\boxed{41.5}", "\\boxed{Red}", "\\boxed{12.5}", "\\boxed{0.28}", "\\boxed{Annual Reports}",
          "So x = \\boxed{\\frac{1}{2}}", "\\boxed{8}"]
PATTERNRL_NT = ["\\boxed{43}", "\\boxed{blue}", "\\boxed{12.5}", "\\boxed{0.2}", "\\boxed{Report}", "\\boxed{0.5}",
                "\\boxed{7}"]


@pytest.mark.ray
@pytest.mark.slow
def test_task_accuracy_table_from_a_sweep_of_two_policies(tmp_path: Path, capsys):
    from howeval.ray_jobs.sweep import main

    benchmarks = _benchmarks(tmp_path / "data")
    (tmp_path / "baserl.jsonl").write_text("".join(json.dumps({"sample_id": s, "response": r}) + "\n"
                                                   for s, r in zip(IDS, BASERL)))  # the same in NT and T
    (tmp_path / "patternrl.jsonl").write_text(
        "".join(json.dumps({"sample_id": s, "mode": "NT", "response": r}) + "\n" for s, r in zip(IDS, PATTERNRL_NT))
        + "".join(json.dumps({"sample_id": s, "mode": "T", "response": "Sorry, I can't help with that image."}) + "\n"
                  for s in IDS))
    models = [{"name": n, "engine": "replay", "options": {"path": str(tmp_path / f"{n}.jsonl")},
               "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}}
              for n in ("baserl", "patternrl")]
    cfg = {"name": "table6", "output_uri": str(tmp_path / "run"), "benchmarks": benchmarks, "models": models,
           "judges": {"pattern": [{"name": "rules"}]}, "ray": {"num_cpus": 2}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0
    out = capsys.readouterr().out
    assert "TASK ACCURACY: 28 responses scored" in out  # 7 items x 2 policies x 2 modes

    scores = {(r["sample_id"], r["config"], r["mode"]): r for r in pq.read_table(tmp_path / "run" / "task_scores").to_pylist()}
    assert len(scores) == 28 and {r["criterion"] for r in scores.values()} == {"relaxed", "anls", "math"}
    assert scores[("docvqa:102", "baserl", "NT")]["score"] == pytest.approx(1 - 1 / 14)  # "annual reports": 1 edit of 14
    assert scores[("docvqa:101", "patternrl", "NT")]["score"] == pytest.approx(0.75)  # best of 0.75 ("0.28") and 0.5
    assert scores[("docvqa:102", "patternrl", "NT")]["score"] == 0.0  # 7 edits of 13: below 0.5

    t6 = json.loads((tmp_path / "run" / "metrics.json").read_text())["task_accuracy"]
    assert t6["categories"] == ["math", "document"] and t6["absent"] == ["logic"]
    assert t6["criteria"] == {"chart": "relaxed", "doc": "anls", "mathset": "math"}
    b, p, pt = t6["rows"]["baserl"]["NT"], t6["rows"]["patternrl"]["NT"], t6["rows"]["patternrl"]["T"]
    assert {k: (v["acc"], v["n"]) for k, v in b["benchmarks"].items()} == {
        "chart": (pytest.approx(2 / 3), 3), "doc": (pytest.approx((1 + 13 / 14) / 2), 2), "mathset": (0.5, 2)}
    assert b["categories"]["document"]["acc"] == pytest.approx((2 / 3 + (1 + 13 / 14) / 2) / 2)
    assert b["categories"]["document"]["n"] == 5 and b["categories"]["math"]["acc"] == 0.5
    assert t6["rows"]["baserl"]["T"] == b  # the same recorded responses in T
    assert {k: v["acc"] for k, v in p["benchmarks"].items()} == {"chart": pytest.approx(2 / 3), "doc": 0.375,
                                                                 "mathset": 1.0}
    assert {k: v["acc"] for k, v in pt["categories"].items()} == {"math": 0.0, "document": 0.0}  # refusals count 0

    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Table 6 (task accuracy)" in report
    assert "| policy | mode | math avg | logic avg | document avg | mathset (math) | chart (document) | doc (document) |" in report
    assert "| patternrl | NT | 100.0 (n=2) | absent | 52.1 (n=5) | 100.0 (n=2) | 66.7 (n=3) | 37.5 (n=2) |" in report

    # a rerun scores nothing twice
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0
    assert "TASK ACCURACY: every response of a task benchmark was already scored" in capsys.readouterr().out
