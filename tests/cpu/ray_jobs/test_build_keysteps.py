"""Tests for howeval.ray_jobs.build_keysteps: the AdaptMMBench key-step writer job with a replay writer (as build_refs')."""
from __future__ import annotations

import json

import pytest
import yaml


@pytest.mark.ray
def test_build_keysteps_job_with_a_replay_writer(tmp_path, repo_root):
    from howeval.ray_jobs.build_keysteps import main

    manifest = repo_root / "datasets" / "demo" / "manifest.jsonl"
    uids = [json.loads(line)["uid"] for line in manifest.open()][:3]
    replay = tmp_path / "writer.jsonl"
    replay.write_text(json.dumps({"sample_id": uids[0], "response": '{"key_steps": ["Find the bar.", "Read 42."]}'})
                      + "\n" + json.dumps({"sample_id": uids[1], "response": "I think it is 42."}) + "\n")
    cfg = {"output_uri": str(tmp_path / "out"), "benchmarks": [{"path": str(manifest), "limit": 3}],
           "writer": {"name": "w", "engine": "replay", "options": {"path": str(replay)}, "modes": {"NT": {}},
                      "resources": {"num_cpus": 0.5, "batch_size": 4}},
           "only_missing": False, "ray": {"num_cpus": 2}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "c.yaml")]) == 0
    review = tmp_path / "out" / "key_steps_review.jsonl"
    out = [json.loads(line) for line in review.open()]
    assert [r["uid"] for r in out] == uids and {r["status"] for r in out} == {"pending"}
    assert (out[0]["proposed_steps"], out[0]["error"], out[0]["writer"]) == (["Find the bar.", "Read 42."], None, "w")
    assert out[1]["proposed_steps"] == [] and out[1]["error"].startswith("parse: no JSON object")
    assert out[2]["error"].startswith("engine: replay: no recorded response")
    assert out[0]["image"].endswith(".png") and out[0]["answer"] == json.loads(manifest.open().readline())["answer"]
    # a person accepts the first; a rerun keeps that row as reviewed and rewrites the pending ones
    out[0]["status"] = "accepted"
    review.write_text("".join(json.dumps(r) + "\n" for r in out))
    replay.write_text(replay.read_text() + json.dumps({"sample_id": uids[0], "response": '{"key_steps": ["other"]}'}) + "\n")
    assert main(["--config", str(tmp_path / "c.yaml")]) == 0
    again = [json.loads(line) for line in review.open()]
    assert (again[0]["status"], again[0]["proposed_steps"]) == ("accepted", ["Find the bar.", "Read 42."])
    assert [r["status"] for r in again[1:]] == ["pending", "pending"]
    # only_missing (the default): the demo items all have key steps, so there is nothing to write
    (tmp_path / "c2.yaml").write_text(yaml.safe_dump({**cfg, "only_missing": True}))
    assert main(["--config", str(tmp_path / "c2.yaml")]) == 2


@pytest.mark.ray
def test_build_keysteps_exits_3_when_the_writer_answers_no_item(tmp_path, repo_root):
    """A writer whose every call fails (here: a replay file with no recorded response) still writes the review
    file, each row with its reason, but the job says so and exits 3 (EXIT_ALL_ROWS_FAILED), not 0."""
    from howeval.ray_jobs.build_keysteps import main

    replay = tmp_path / "writer.jsonl"
    replay.write_text(json.dumps({"sample_id": "not-in-the-set", "response": "x"}) + "\n")
    cfg = {"output_uri": str(tmp_path / "out"), "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": 2}],
           "writer": {"name": "w", "engine": "replay", "options": {"path": str(replay)}, "modes": {"NT": {}},
                      "resources": {"num_cpus": 0.5, "batch_size": 4}},
           "only_missing": False, "ray": {"num_cpus": 2}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "c.yaml")]) == 3
    out = [json.loads(line) for line in (tmp_path / "out" / "key_steps_review.jsonl").open()]
    assert len(out) == 2 and all(r["error"].startswith("engine: replay: no recorded response") for r in out)


def test_builders_refuse_bad_input_before_ray_in_one_line(tmp_path, repo_root, capsys):
    """Broken YAML, a folder, a missing file and a missing writer model: exit 2 with one ``error:`` line each,
    before Ray starts (no output folder made)."""
    from howeval.ray_jobs.build_keysteps import main as keysteps
    from howeval.ray_jobs.build_refs import main as refs

    (tmp_path / "broken.yaml").write_text("writer: [a, b\n")
    assert refs(["--config", str(tmp_path / "broken.yaml")]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    assert keysteps(["--config", str(tmp_path)]) == 2
    assert "is a folder; give the config's YAML file" in capsys.readouterr().err
    assert keysteps(["--config", str(tmp_path / "nope.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    cfg = {"output_uri": str(tmp_path / "out"), "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl")}],
           "writer": {"name": "w", "engine": "hf", "model": str(tmp_path / "no-model"), "modes": {"NT": {}}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert keysteps(["--config", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert "writer.model: model path" in err and "does not exist" in err
    assert not (tmp_path / "out").exists()
