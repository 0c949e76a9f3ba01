"""howeval.ray_jobs.compare on two demo runs that differ only in max tokens; deltas recomputed by hand."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml


def test_summary_rounds_rates_to_percent_with_the_paired_delta():
    from howeval.ray_jobs.compare import summary_lines

    comp = {"a": {"run": "runs/a", "config": "x"}, "b": {"run": "runs/b", "config": "x"}, "modes": {
        "NT": {"n_shared": 30, "acc": {"n": 12, "a": 1 / 3, "b": 2 / 3, "delta": 1 / 3, "ci": [-0.3333333, 1.0]},
               "trigger": {"n": 2, "a": 0.0, "b": 1.0, "delta": 1.0, "ci": None, "ci_refused": "too few pairs (2 < 10)"}},
        "T": {"n_shared": 0, "acc": {"n": 0, "a": None, "b": None, "delta": None, "ci": None},
              "trigger": {"n": 0, "a": None, "b": None, "delta": None, "ci": None}}}}
    assert summary_lines(comp) == [
        "A: x (run runs/a) vs B: x (run runs/b)",
        "NT: 30 shared prompts; Acc 33.3% -> 66.7% (+33.3 pts, 12 pairs: CI [-33.3, +100.0]); Trigger 0.0% -> 100.0% "
        "(+100.0 pts, 2 pairs: too few for an interval)",
        "T: 0 shared prompts; Acc – -> – (0 pairs); Trigger – -> – (0 pairs)"]


def _by_hand(run, mode):
    resp = {(r["sample_id"], r["mode"]): r for r in pq.read_table(run / "responses").to_pylist()}
    out = {}
    for j in pq.read_table(run / "judgments").to_pylist():
        r = resp[(j["sample_id"], j["mode"])]
        if j["mode"] == mode and j["response_hash"] == r["response_hash"]:
            labels = [j[k] for k in ("cot", "rep", "con", "pr")]
            out[j["sample_id"]] = (j["correct"], None if None in labels else any(labels), r["response"])
    return out


@pytest.mark.ray
@pytest.mark.slow
def test_compare_two_demo_runs_with_different_max_tokens(tmp_path, repo_root):
    from howeval.ray_jobs.compare import main as compare
    from howeval.ray_jobs.sweep import main as sweep

    cfg = yaml.safe_load((repo_root / "configs" / "demo.yaml").read_text())
    cfg.pop("crystal", None), cfg.pop("adapt", None)  # PatternEval only: keeps the test short
    cfg["benchmarks"][0]["path"] = str(repo_root / "datasets" / "demo" / "manifest.jsonl")
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    a, b = tmp_path / "a", tmp_path / "b"
    for out, tokens in ((a, "8"), (b, "40")):
        assert sweep(["--config", str(path), "--output", str(out), "--limit", "4", "--max-tokens", tokens]) == 0
    # the per-sample log of a real run: one line per response, with the prompt as sent
    lines = [json.loads(x) for x in (a / "samples.jsonl").read_text().splitlines()]
    # the demo's NT mode has a system prompt; T has none (the model's own template switches thinking)
    assert len(lines) == 8 and {x["mode"]: x["prompt"]["messages"][0]["role"] for x in lines} == {"NT": "system",
                                                                                                  "T": "user"}
    assert all(x["prompt"]["max_tokens"] == 8 and x["raw_output"] is not None for x in lines)
    # the paper's main table of a real run carries metrics.json's numbers
    import csv

    metrics = json.loads((a / "metrics.json").read_text())
    with open(a / "tables" / "patterneval.csv") as f:
        (row,) = list(csv.DictReader(f))
    for mode in ("NT", "T"):
        x = metrics["configs"][row["config"]][mode]
        for key in ("acc", "trigger"):
            assert (row[f"{key}_{mode}"] == "") == (x[key] is None)
            if x[key] is not None:
                assert float(row[f"{key}_{mode}"]) == pytest.approx(100 * x[key], abs=1e-4)
    assert row["vision"] == "OCR text"  # the demo sends SmolLM2 each image's OCR text (vision: ocr)

    out = tmp_path / "cmp"
    assert compare(["--run", str(a), "--run", str(b), "--out", str(out), "--n-boot", "200"]) == 0
    comp = json.loads((out / "compare.json").read_text())
    assert (out / "compare.md").exists() and "<table>" in (out / "compare.html").read_text()
    for mode in ("NT", "T"):
        ha, hb = _by_hand(a, mode), _by_hand(b, mode)
        shared = sorted(set(ha) & set(hb))
        m = comp["modes"][mode]
        assert m["n_shared"] == len(shared) == 4
        acc = [(ha[s][0], hb[s][0]) for s in shared if ha[s][0] is not None and hb[s][0] is not None]
        trig = [(ha[s][1], hb[s][1]) for s in shared if ha[s][1] is not None and hb[s][1] is not None]
        assert m["acc"]["n"] == len(acc) and m["trigger"]["n"] == len(trig)
        if acc:
            assert m["acc"]["delta"] == pytest.approx(sum(y - x for x, y in acc) / len(acc))
            assert m["acc"]["mcnemar"]["b"] == sum(x and not y for x, y in acc)
        if trig:
            assert m["trigger"]["delta"] == pytest.approx(sum(y - x for x, y in trig) / len(trig))
            assert m["trigger"]["mcnemar"]["c"] == sum(y and not x for x, y in trig)
        flipped = sorted(s for s in shared if ha[s][0] is True and hb[s][0] is False)
        assert [f["sample_id"] for f in m["flips"]["right_to_wrong"]] == flipped
        for f in m["flips"]["clean_to_triggered"]:
            assert f["a"]["response"] == ha[f["sample_id"]][2] and f["b"]["response"] == hb[f["sample_id"]][2]
    # the responses differ: 8 vs 40 tokens
    ra = {(r["sample_id"], r["mode"]): r for r in pq.read_table(a / "responses").to_pylist()}
    rb = {(r["sample_id"], r["mode"]): r for r in pq.read_table(b / "responses").to_pylist()}
    assert max(r["completion_tokens"] for r in ra.values()) <= 8
    assert any(rb[k]["completion_tokens"] > ra[k]["completion_tokens"] for k in ra)
