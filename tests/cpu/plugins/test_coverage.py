"""What each benchmark says it scores of a user's rows (issue 40): counted, with the missing field named."""
from __future__ import annotations

from howeval.config import SweepConfig
from howeval.plugins import RunContext, coverage_lines, get
from howeval.plugins.pipeline import Plan, Tallies


def _cfg(tmp_path, **extra) -> SweepConfig:
    return SweepConfig.model_validate({"output_uri": str(tmp_path), "benchmarks": [{"path": "/d/own/m.jsonl"}],
                                       "models": [{"name": "m", "engine": "replay", "options": {"path": "r.jsonl"},
                                                   "modes": {"NT": {}}}], **extra})


def _row(i: int, **fields) -> dict:
    return {"sample_id": f"u{i}", "benchmark": "own", "question": "q", "answer": "1", "image_paths": ["/d/a.png"], **fields}


def test_own_rows_without_reference_steps_or_boxes_are_announced(tmp_path):
    rows = [_row(0, reference_steps=["a", "b"], evidence_boxes=[[0, 0, 1, 1]]), _row(1, reference_steps=["a"]),
            _row(2, evidence_boxes=[[0, 0, 2, 2]], image_paths=[]), _row(3)]
    cfg = _cfg(tmp_path, crystal={}, adapt={})
    lines = coverage_lines(RunContext(cfg, rows), [get("patterneval"), get("crystal"), get("adapt")])
    assert lines == ["PatternEval: all 4 rows",
                     "CRYSTAL: 2 of 4 rows (2 skipped: no reference_steps)",
                     "AdaptMMBench: 1 of 4 rows (2 skipped: no evidence_boxes; 1 skipped: no image)"]


def test_a_manifest_with_only_the_required_fields_says_nothing_is_scored(tmp_path):
    rows = [_row(i) for i in range(3)]
    cfg = _cfg(tmp_path, crystal={}, adapt={})
    assert coverage_lines(RunContext(cfg, rows), [get("crystal"), get("adapt")]) == [
        "CRYSTAL: none of 3 rows (3 skipped: no reference_steps); nothing to score (the fields each benchmark needs: "
        "datasets/README.md)",
        "AdaptMMBench: none of 3 rows (3 skipped: no evidence_boxes); nothing to score (the fields each benchmark "
        "needs: datasets/README.md)"]
    # the closing lines say why nothing ran (the old CRYSTAL line claimed every response was already scored)
    ctx = RunContext(cfg, rows)
    assert get("crystal").finish(ctx, Plan("x"), Tallies()).lines == [
        "CRYSTAL: no row has reference_steps: nothing to score (datasets/README.md)"]
    assert get("adapt").finish(ctx, Plan("x"), Tallies()).lines == [
        "AdaptMMBench: no row has evidence_boxes and an image: nothing to run (datasets/README.md)"]


def test_task_accuracy_names_the_rows_outside_task_benchmarks(tmp_path):
    cfg = SweepConfig.model_validate({"output_uri": str(tmp_path), "models": [{"name": "m", "engine": "replay",
                                      "options": {"path": "r.jsonl"}, "modes": {"NT": {}}}],
                                      "benchmarks": [{"path": "/d/c/m.jsonl", "name": "chartqa",
                                                      "task": {"category": "document", "criterion": "relaxed"}},
                                                     {"path": "/d/own/m.jsonl"}]})
    rows = [_row(0, benchmark="chartqa"), _row(1), _row(2)]
    assert coverage_lines(RunContext(cfg, rows), [get("taskacc")]) == [
        "Task accuracy: 1 of 3 rows (2 skipped: not in a benchmark with a task: block)"]
