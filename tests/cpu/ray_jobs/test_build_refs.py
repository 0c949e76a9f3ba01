"""Tests for howeval.ray_jobs.build_refs: the Delphi reference-step job with replay writers and a replay checker."""
from __future__ import annotations

import json

import pytest
import yaml


@pytest.mark.ray
def test_build_refs_job_with_replay_writers(tmp_path, repo_root):
    from howeval.ray_jobs.build_refs import main

    manifest = repo_root / "datasets" / "demo" / "manifest.jsonl"
    uids = [json.loads(line)["uid"] for line in manifest.open()][:3]
    # cosine (all-MiniLM-L6-v2): first steps 0.92, second steps 0.91, across steps at most 0.71
    chains = {"w1": ["Look at the image and find the red circles.", "The total number of red circles is four."],
              "w2": ["Find the red circles in the picture.", "Four red circles in total."]}
    writers = []
    for name, steps in chains.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_text("".join(json.dumps({"sample_id": u, "response": json.dumps({"reasoning_steps": steps, "answer": "4"})})
                             + "\n" for u in uids))
        writers.append({"name": name, "engine": "replay", "options": {"path": str(p)}, "modes": {"NT": {}},
                        "resources": {"num_cpus": 0.5, "batch_size": 4}})
    checker = tmp_path / "checker.jsonl"
    checker.write_text(json.dumps({"sample_id": uids[0], "response": '{"consistent": true, "reason": "fine"}'}) + "\n"
                       + json.dumps({"sample_id": uids[1], "response": "looks fine"}) + "\n")
    cfg = {"output_uri": str(tmp_path / "out"), "benchmarks": [{"path": str(manifest), "limit": 3}], "writers": writers,
           "checker": {"name": "chk", "engine": "replay", "options": {"path": str(checker)}, "modes": {"NT": {}}},
           "threshold": 0.8, "ray": {"num_cpus": 2}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "c.yaml")]) == 0
    out = [json.loads(line) for line in (tmp_path / "out" / "reference_steps.jsonl").open()]
    assert [r["uid"] for r in out] == uids
    r0 = out[0]
    assert len(r0["reference_steps"]) == 2 and r0["support"] == [2, 2] and r0["writers_with_steps"] == 2
    assert r0["reference_steps"][0] in chains["w1"][:1] + chains["w2"][:1]
    assert (r0["checker_consistent"], r0["checker_error"]) == (True, None)
    assert out[1]["checker_consistent"] is None and "consistent" in out[1]["checker_error"]
    assert out[2]["checker_error"].startswith("engine: replay: no recorded response")
    assert all(r["human_gate"] == "pending" for r in out)


@pytest.mark.ray
def test_build_refs_exits_3_when_every_writer_fails(tmp_path, repo_root, capsys):
    """Writers with no recorded response for any item (every engine call fails): the file is still written, each
    item with no reference step, and the job exits 3 naming why, not 0."""
    from howeval.ray_jobs.build_refs import main

    writers = []
    for name in ("w1", "w2"):
        p = tmp_path / f"{name}.jsonl"
        p.write_text(json.dumps({"sample_id": "not-in-the-set", "response": "x"}) + "\n")
        writers.append({"name": name, "engine": "replay", "options": {"path": str(p)}, "modes": {"NT": {}},
                        "resources": {"num_cpus": 0.5, "batch_size": 4}})
    cfg = {"output_uri": str(tmp_path / "out"), "writers": writers, "ray": {"num_cpus": 2},
           "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": 2}]}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "c.yaml")]) == 3
    assert "none of 2 items got a reference step" in capsys.readouterr().err
    out = [json.loads(line) for line in (tmp_path / "out" / "reference_steps.jsonl").open()]
    assert len(out) == 2 and all(r["reference_steps"] == [] for r in out)
