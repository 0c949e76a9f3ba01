"""Tests for howeval.ray_jobs.calibrate: judges scored against human labels from texts, predictions or a run; sampling."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from howeval.ray_jobs import calibrate as job
from howeval.records import JUDGMENT_SCHEMA, LABELS


def L(cot=False, rep=False, con=False, pr=False):
    return {"cot": cot, "rep": rep, "con": con, "pr": pr}


def test_job_rule_judge_on_the_real_labelled_file(tmp_path, repo_root, shared_data):
    labels = repo_root / "howeval" / "judges" / "patternrm" / "data" / "human_labels.jsonl"
    rows = [json.loads(x) for x in labels.read_text().splitlines()]
    assert len(rows) >= 30 and all("response" not in r for r in rows), "texts are read from ../shared/data"
    rc = job.main(["--labels", str(labels), "--responses", str(shared_data / "responses"),
                   "--manifest", str(shared_data / "manifest.jsonl"), "--out", str(tmp_path)])
    assert rc == 0
    s = json.loads((tmp_path / "calibration.json").read_text())
    j = s["judges"]["rules@1"]
    assert s["n_items"] == len(rows) and j["n"] == len(rows) and j["n_missing"] == 0
    assert "| rules@1 | rep |" in (tmp_path / "calibration.md").read_text()


def test_job_missing_texts_is_an_error(tmp_path):
    labels = tmp_path / "h.jsonl"
    labels.write_text(json.dumps({"source": "x.jsonl", "id": "1", "model": "m", "labels": L()}) + "\n")
    assert job.main(["--labels", str(labels), "--responses", str(tmp_path), "--out", str(tmp_path / "o")]) == 2


def test_job_from_predictions_jsonl_and_inline_texts(tmp_path):
    labels = tmp_path / "h.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "model": "m", "response": "Wait, let me re-check. The answer is 5.", "labels": L(cot=True)},
        {"id": "2", "model": "m", "response": "The answer is 4.", "labels": L()}]) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"id": "1", "model": "m", "judge": "x", **L(cot=True)},
        {"id": "2", "model": "m", "judge": "x", **L(rep=True)},
        {"id": "1", "model": "m", "judge": "y", "judge_error": "judge_error: bad json", **dict.fromkeys(LABELS)}]) + "\n")
    assert job.main(["--labels", str(labels), "--predictions", str(preds), "--out", str(tmp_path / "a")]) == 0
    s = json.loads((tmp_path / "a" / "calibration.json").read_text())
    assert s["judges"]["x"]["labels"]["cot"]["f1"] == 1.0 and s["judges"]["x"]["labels"]["rep"]["fp"] == 1
    assert s["judges"]["y"]["n"] == 0 and s["judges"]["y"]["n_missing"] == 2
    # in-process rule judge on inline texts
    assert job.main(["--labels", str(labels), "--out", str(tmp_path / "b")]) == 0
    s = json.loads((tmp_path / "b" / "calibration.json").read_text())
    assert s["judges"]["rules@1"]["labels"]["cot"]["tp"] == 1


def _write_judgments(run, rows):
    (run / "judgments" / "j").mkdir(parents=True)
    full = [{f.name: r.get(f.name) for f in JUDGMENT_SCHEMA} for r in rows]
    pq.write_table(pa.Table.from_pylist(full, schema=JUDGMENT_SCHEMA), run / "judgments" / "j" / "part.parquet")


def test_job_from_a_run_and_sampling(tmp_path):
    run = tmp_path / "run"
    rows = []
    for i in range(12):
        for judge, bits in (("a@1", (i % 2 == 0, False, False, False)), ("b@1", (i % 2 == 0, i % 3 == 0, False, False))):
            rows.append({"sample_id": f"s{i}", "config": "m", "mode": "NT", "judge": judge,
                         **dict(zip(LABELS, bits))})
    rows.append({"sample_id": "s0", "config": "m", "mode": "NT", "judge": "a@1", "judge_error": "judge_error: x"})
    _write_judgments(run, rows)
    labels = tmp_path / "h.jsonl"
    labels.write_text("\n".join(json.dumps({"sample_id": f"s{i}", "config": "m", "mode": "NT",
                                            "labels": L(cot=i % 2 == 0)}) for i in range(12)) + "\n")
    assert job.main(["--labels", str(labels), "--run", str(run), "--out", str(tmp_path / "c")]) == 0
    s = json.loads((tmp_path / "c" / "calibration.json").read_text())
    assert s["judges"]["a@1"]["labels"]["cot"]["f1"] == 1.0 and s["judges"]["a@1"]["n"] == 12  # success wins
    assert s["judges"]["b@1"]["labels"]["rep"]["fp"] == 4
    assert job.main(["--sample", "6", "--run", str(run), "--out", str(tmp_path / "d")]) == 0
    summary = json.loads((tmp_path / "d" / "calibration_set.json").read_text())
    assert summary["n"] == 6 and summary["judges"] == ["a@1", "b@1"]
    assert len((tmp_path / "d" / "calibration_set.jsonl").read_text().splitlines()) == 6
