"""Tests for howeval.ray_jobs.adapt: settings per engine, items selection, and (Ray) a replayed run that resumes."""
from __future__ import annotations

import io
import json

import pytest

from howeval.config import AdaptConfig, SweepConfig
from howeval.ray_jobs.adapt import run_adapt, settings
from howeval.runtime.progress import Progress


def _cfg(tmp_path, manifest, replay, adapt=None) -> SweepConfig:
    return SweepConfig.model_validate({
        "name": "adapt-test", "output_uri": str(tmp_path / "run"), "benchmarks": [{"path": str(manifest), "limit": 2}],
        "models": [{"name": "rep", "engine": "replay", "options": {"path": str(replay)}, "modes": {"NT": {}},
                    "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 4}}],
        "adapt": adapt, "ray": {"num_cpus": 2}})


def test_settings_fill_tool_format_per_engine(tmp_path):
    cfg = _cfg(tmp_path, "m.jsonl", "r.jsonl")
    assert settings(cfg, "replay").tool_format == "text" and settings(cfg, "hf").tool_format == "text"
    assert settings(cfg, "openai").tool_format == "openai"
    assert settings(cfg, "vllm") == AdaptConfig(tool_format="openai")
    pinned = _cfg(tmp_path, "m.jsonl", "r.jsonl", {"tool_format": "openai", "modes": ["text"], "max_turns": 2})
    assert settings(pinned, "hf").tool_format == "openai" and settings(pinned, "hf").modes == ["text"]


def test_process_judge_cache_defaults_under_the_run_folder(tmp_path):
    """Issue 31 defect: the process judge's cache lived in ~/.cache; it now sits beside the other judges' cache
    (<run>/judge_cache), an explicit folder wins, and no judge means no cache folder at all."""
    judged = _cfg(tmp_path, "m.jsonl", "r.jsonl", {"process_judge": {"model": "gpt-5"}})
    assert settings(judged, "replay").process_judge_cache == str(tmp_path / "run" / "judge_cache" / "adapt-process")
    pinned = _cfg(tmp_path, "m.jsonl", "r.jsonl", {"process_judge": {"model": "gpt-5"}, "process_judge_cache": "/c"})
    assert settings(pinned, "replay").process_judge_cache == "/c"
    assert settings(_cfg(tmp_path, "m.jsonl", "r.jsonl"), "replay").process_judge_cache is None
    remote = judged.model_copy(update={"output_uri": "s3://b/run"})
    assert "/.cache/howeval/judge_cache/" in settings(remote, "replay").process_judge_cache


def test_no_items_with_evidence_boxes_runs_nothing(tmp_path):
    cfg = _cfg(tmp_path, "m.jsonl", "r.jsonl")
    samples = [{"sample_id": "a", "images": [b"x"], "evidence_boxes": None},
               {"sample_id": "b", "images": [], "evidence_boxes": [[0, 0, 1, 1]]}]
    assert run_adapt(cfg, samples) == {}
    assert not (tmp_path / "run").exists()


@pytest.mark.ray
@pytest.mark.slow
def test_replayed_text_episodes_then_resume(tmp_path, repo_root):
    """Two demo items in text mode with recorded answers (one right, one wrong): rows, verdicts and the
    summary; a second run computes nothing new."""
    from howeval.benchmarks.loaders import load_benchmark
    from howeval.records import ADAPT_SCHEMA
    from howeval.store import join, read_table

    manifest = repo_root / "datasets" / "demo" / "manifest.jsonl"
    samples = load_benchmark(str(manifest), limit=2).samples  # vg-count-001 (gold 4), vg-count-002 (gold 7)
    replay = tmp_path / "recorded.jsonl"
    answers = {"demo:vg-count-001": "There are 4 red circles.\nAnswer: 4", "demo:vg-count-002": "Answer: 5"}
    replay.write_text("".join(json.dumps({"sample_id": f"{sid}:text:t1", "response": text}) + "\n"
                              for sid, text in answers.items()))
    cfg = _cfg(tmp_path, manifest, replay, {"modes": ["text"]})
    out = io.StringIO()
    summary = run_adapt(cfg, samples, progress=Progress(stream=out, tty=False))
    lines = out.getvalue().splitlines()  # a titled block with a line per config x mode, then the summary
    assert lines[0].endswith("] AdaptMMBench") and lines[-2].startswith("  adapt rep text       2/2      100%  err 0  ")
    assert lines[-1] == "AdaptMMBench rep: Acc (all items) text 50.0% (2); decided only text 50.0% (2); MCC –"
    rows = {r["sample_id"]: r for r in read_table(join(cfg.output_uri, "adapt", "rep"), ADAPT_SCHEMA)[0].to_pylist()}
    assert set(rows) == set(answers)
    assert rows["demo:vg-count-001"]["correct"] is True and rows["demo:vg-count-002"]["correct"] is False
    assert {r["verifier"] for r in rows.values()} == {"rules@2"}  # the sweep's verifier (issue 41)
    assert all(r["mode"] == "text" and r["error"] is None and not r["called"] for r in rows.values())
    assert "rep" in summary
    files = sorted(p.name for p in (tmp_path / "run" / "adapt" / "rep").iterdir())
    run_adapt(cfg, samples)  # resume: every (sample_id, config, mode) is written, nothing runs again
    assert sorted(p.name for p in (tmp_path / "run" / "adapt" / "rep").iterdir()) == files
