"""End to end through Ray: real samples from ../shared/data, both modes, the embedded model."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from howeval.metrics.patterneval import sweep_metrics
from howeval.records import KEY

pytestmark = [pytest.mark.ray, pytest.mark.slow]

# Eight real items over the four sources and five answer types.
REAL_UIDS = ["math-vision:5", "math-vision:27", "puzzlevqa:circle_size_number_0070", "tabmwp:14520",
             "tabmwp:7252", "tabmwp:26275", "tabmwp:35535", "bingo:bingo_0"]


@pytest.fixture(scope="module")
def real_manifest(tmp_path_factory, shared_data: Path) -> Path:
    """A manifest of REAL_UIDS whose image paths point into ../shared/data (absolute; nothing copied)."""
    rows = {json.loads(line)["uid"]: json.loads(line) for line in (shared_data / "manifest.jsonl").open()}
    out = tmp_path_factory.mktemp("real") / "manifest.jsonl"
    with out.open("w") as f:
        for uid in REAL_UIDS:
            r = dict(rows[uid])
            r["image"] = str(shared_data / r["image"])
            f.write(json.dumps(r) + "\n")
    return out


def _config(tmp: Path, manifest: Path, output: Path, model: dict) -> Path:
    cfg = {"name": "t", "output_uri": str(output), "benchmarks": [{"path": str(manifest), "name": "real"}],
           "models": [model], "judges": {"pattern": [{"name": "rules"}]}, "ray": {"num_cpus": 2}}
    p = tmp / "sweep.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_real_items_both_modes_records_match_metrics(tmp_path, real_manifest):
    from ray_jobs.sweep import main

    model = {"name": "smol", "engine": "hf", "vision": False, "options": {"batch_size": 8, "torch_threads": 1},
             "modes": {"NT": {"system_prompt": "Answer briefly."},
                       "T": {"system_prompt": "Think inside <think></think> tags, then answer."}},
             "sampling": {"max_tokens": 24}, "resources": {"replicas": 1, "num_cpus": 0.75, "batch_size": 8}}
    out = tmp_path / "run"
    assert main(["--config", str(_config(tmp_path, real_manifest, out, model))]) == 0

    responses = pq.read_table(out / "responses").to_pylist()
    judgments = pq.read_table(out / "judgments").to_pylist()
    keys = sorted((r["sample_id"], r["config"], r["mode"]) for r in responses)
    assert keys == sorted((u, "smol", m) for u in REAL_UIDS for m in ("NT", "T"))
    assert sorted((j["sample_id"], j["config"], j["mode"]) for j in judgments) == keys
    for r in responses:
        assert r["error"] is None, r["error"]
        assert r["images_seen"] == 0  # text-only model: images were not sent
        assert r["completion_tokens"] <= 25
        assert r["response_hash"] is not None
        assert r["truncated"] == (r["response"] == "" and r["reasoning"] is not None)

    metrics = json.loads((out / "metrics.json").read_text())
    by_key = {(j["sample_id"], j["config"], j["mode"]): j for j in judgments}
    joined = [{**r, **{k: by_key[(r["sample_id"], r["config"], r["mode"])][k]
                      for k in ("correct", "cot", "rep", "con", "pr", "judge_error")}} for r in responses]
    expected = sweep_metrics(joined)["configs"]["smol"]
    got = metrics["configs"]["smol"]
    for mode in ("NT", "T"):
        assert got[mode]["n"] == 8
        assert got[mode]["acc"] == expected[mode]["acc"]
        assert got[mode]["trigger"] == expected[mode]["trigger"]
        assert got[mode]["labels"] == expected[mode]["labels"]
        assert set(got[mode]["by_family"]) == {"KR", "OS", "VG"}
    assert got["delta_acc"] == expected["delta_acc"] and got["delta_pat"] == expected["delta_pat"]
    report = (out / "report.md").read_text()
    assert "| smol | NT | 8 |" in report and "Text-only configs" in report

    # Rerunning the same command generates and judges nothing new.
    n_files = len(list((out / "responses").rglob("*.parquet")))
    assert main(["--config", str(_config(tmp_path, real_manifest, out, model))]) == 0
    assert len(list((out / "responses").rglob("*.parquet"))) == n_files
    assert len(pq.read_table(out / "judgments")) == len(judgments)


def test_killed_sweep_resumes_with_each_key_once(tmp_path, shared_data):
    """A sweep killed half-way (SIGKILL) and rerun ends with every key exactly once."""
    rows = [json.loads(line) for line in (shared_data / "manifest.jsonl").open()][:24]
    manifest = tmp_path / "manifest.jsonl"
    with manifest.open("w") as f:
        for r in rows:
            f.write(json.dumps({**r, "image": str(shared_data / r["image"])}) + "\n")
    recorded = tmp_path / "recorded.jsonl"
    with recorded.open("w") as f:
        for r in rows:
            f.write(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n")
    model = {"name": "rep", "engine": "replay", "options": {"path": str(recorded), "delay_s": 0.4},
             "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 4}}
    out = tmp_path / "run"
    cfg = _config(tmp_path, manifest, out, model)
    cmd = [sys.executable, "-m", "ray_jobs.sweep", "--config", str(cfg)]
    env = {**os.environ, "RAY_ADDRESS": ""}
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 180
    while time.time() < deadline and len(list((out / "responses").rglob("*.parquet"))) < 2:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = pq.read_table(out / "responses").num_rows
    assert 0 < partial < 48, partial

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    keys = [tuple(r[k] for k in KEY) for r in pq.read_table(out / "responses").to_pylist()]
    assert len(keys) == 48 and len(set(keys)) == 48
    metrics = json.loads((out / "metrics.json").read_text())
    # every recorded answer is the gold one, so whatever the verifier resolves is correct
    assert metrics["configs"]["rep"]["NT"]["n"] == 24 and metrics["configs"]["rep"]["T"]["n"] == 24


def test_one_sweep_runs_patterneval_crystal_and_adaptmmbench(tmp_path, repo_root):
    """configs/all-benchmarks.yaml on 4 demo items: the three families' tables side by side."""
    from ray_jobs.sweep import main

    out = tmp_path / "all"
    assert main(["--config", str(repo_root / "configs" / "all-benchmarks.yaml"), "--output", str(out),
                 "--limit", "4", "--max-tokens", "16"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    steps = pq.read_table(out / "steps").to_pylist()
    adapt = pq.read_table(out / "adapt").to_pylist()
    # every response of the 4 items (all have reference steps) is step-scored once
    assert len(steps) == 8 and len({(s["sample_id"], s["mode"]) for s in steps}) == 8
    for s in steps:
        assert s["step_f1"] <= 1 and s["step_matched"] <= min(len(s["pred_steps"]), len(s["ref_steps"]))
    nt = [s for s in steps if s["mode"] == "NT"]
    assert metrics["crystal"]["smollm2-135m"]["NT"]["f1"] == pytest.approx(sum(s["step_f1"] for s in nt) / len(nt))
    # AdaptMMBench: the items with evidence boxes, in all three modes
    assert {a["mode"] for a in adapt} == {"text", "adaptive", "oracle"}
    assert len(adapt) == 3 * len({a["sample_id"] for a in adapt})
    assert "mcc" in metrics["adapt"]["smollm2-135m"]
    report = (out / "report.md").read_text()
    for heading in ("## PatternEval", "## CRYSTAL", "## AdaptMMBench"):
        assert heading in report


def test_sweep_stops_before_ray_on_a_missing_key_and_on_a_stale_output(tmp_path, real_manifest, capsys, monkeypatch):
    """Fail-fast and stale-resume refusals come from main before any work (messages: tests/cpu/config/)."""
    from howeval.config import SweepConfig
    from ray_jobs.sweep import main

    monkeypatch.delenv("HOWEVAL_TEST_UNSET_KEY", raising=False)
    out = tmp_path / "run"
    model = {"name": "api", "engine": "openai", "model": "m", "modes": {"NT": {}},
             "options": {"base_url": "https://api.example.com/v1", "api_key_env": "HOWEVAL_TEST_UNSET_KEY"}}
    assert main(["--config", str(_config(tmp_path, real_manifest, out, model))]) == 2
    assert "models.0.options.api_key_env: environment variable HOWEVAL_TEST_UNSET_KEY is not set" in capsys.readouterr().err
    assert not out.exists()  # nothing written: no run_config.json, no responses

    hf = {"name": "smol", "engine": "hf", "modes": {"NT": {}}, "sampling": {"max_tokens": 24}}
    cfg_path = _config(tmp_path, real_manifest, out, hf)
    stored = SweepConfig.model_validate(yaml.safe_load(cfg_path.read_text()))
    (out / "responses" / "smol").mkdir(parents=True)
    (out / "responses" / "smol" / "part.parquet").write_bytes(b"x")
    (out / "run_config.json").write_text(stored.model_dump_json())
    assert main(["--config", str(cfg_path), "--max-tokens", "48"]) == 2
    err = capsys.readouterr().err
    assert "models.0.sampling.max_tokens: stored 24, now 48" in err and "new output URI" in err
    assert SweepConfig.model_validate_json((out / "run_config.json").read_text()) == stored  # not overwritten
