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
    from howeval.ray_jobs.sweep import main

    model = {"name": "smol", "engine": "hf", "vision": False, "options": {"batch_size": 8, "torch_threads": 1},
             "modes": {"NT": {"system_prompt": "Answer briefly."},
                       "T": {"system_prompt": "Think inside <think></think> tags, then answer.", "prompted_thinking": True}},
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
    cmd = [sys.executable, "-m", "howeval.ray_jobs.sweep", "--config", str(cfg)]
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


def test_one_sweep_runs_patterneval_crystal_and_adaptmmbench(tmp_path, repo_root, capsys):
    """configs/all-benchmarks.yaml on 4 demo items: the three families' tables side by side, each phase
    with its progress block and summary line, and a line per report file."""
    from howeval.ray_jobs.sweep import main

    out = tmp_path / "all"
    assert main(["--config", str(repo_root / "configs" / "all-benchmarks.yaml"), "--output", str(out),
                 "--limit", "4", "--max-tokens", "16"]) == 0
    printed = capsys.readouterr().out
    for line in (f"4 samples x 1 config(s) -> {out}; starting Ray\n", "PatternEval: all 4 rows\nCRYSTAL: all 4 rows\n",
                 "AdaptMMBench: all 4 rows\n", "] generate + judge · AdaptMMBench\n",  # one block: beside generation
                 "] CRYSTAL step scores\n", "\nCRYSTAL: 8 responses scored in ", "\nAdaptMMBench smollm2-135m: Acc text ", "] report: metrics, tables, plots, samples\n",
                 f"  wrote {out / 'metrics.json'}  ", f"  wrote {out / 'index.html'}  "):
        assert line in printed, line
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
    from howeval.ray_jobs.sweep import main

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


# -- all configs at once, judging streamed, kills at random points ----------------------------------------
def _demo_rows(repo_root: Path, n: int) -> list[dict]:
    return [json.loads(line) for line in (repo_root / "datasets" / "demo" / "manifest.jsonl").open()][:n]


def _streamed_config(tmp: Path, repo_root: Path, judge_url: str, n: int = 12, models: list[dict] | None = None) -> Path:
    """3 replay configs (0.4 s a request, batches of 4) and an LLM judge behind ``judge_url``."""
    rows = _demo_rows(repo_root, n)
    recorded = tmp / "recorded.jsonl"
    with recorded.open("w") as f:
        for r in rows:
            for mode in ("NT", "T"):
                f.write(json.dumps({"sample_id": r["uid"], "mode": mode, "response": f"[{mode}] The answer is {r['answer']}."}) + "\n")
    models = models or [{"name": f"cfg{i}", "engine": "replay", "options": {"path": str(recorded), "delay_s": 0.4},
                         "modes": {"NT": {}, "T": {}}, "resources": {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}}
                        for i in range(3)]
    judge = {"name": "fake", "kind": "llm", "with_image": False,
             "llm": {"model": "fake-judge", "options": {"base_url": judge_url, "api_key_env": "HOWEVAL_TEST_KEY",
                                                        "max_concurrency": 2, "timeout_s": 20, "max_retries": 0}}}
    cfg = {"name": "streamed", "output_uri": str(tmp / "run"),
           "benchmarks": [{"path": str(repo_root / "datasets" / "demo" / "manifest.jsonl"), "limit": n}],
           "models": models, "judges": {"pattern": [judge], "num_cpus": 0.2}, "ray": {"num_cpus": 2}}
    p = tmp / "streamed.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _parquet_count(folder: Path) -> int:
    return len(list(folder.rglob("*.parquet"))) if folder.exists() else 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_streamed_sweep_killed_at_random_points_resumes_exactly(tmp_path, repo_root, seed):
    """3 configs at once, LLM-judged as responses land; SIGKILL once generation has written a seed-chosen
    number of batches while a judge request is in flight (events, not timers); the same command then
    ends with each key exactly once in responses and in judgments, every label the judge's."""
    import random

    from fakes.judge_server import FakeJudgeServer, expected_labels

    n_batches = 3 * 6  # 3 configs x 12 samples x 2 modes / batches of 4
    target = random.Random(seed).randint(2, n_batches - 6)
    env = {**os.environ, "RAY_ADDRESS": "", "HOWEVAL_TEST_KEY": "k"}
    with FakeJudgeServer(fault_rate=0.0, latency_s=0.3) as srv:
        cfg = _streamed_config(tmp_path, repo_root, srv.base_url)
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "howeval.ray_jobs.sweep", "--config", str(cfg)]
        proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 240
        state = None
        while time.time() < deadline and proc.poll() is None:
            written = _parquet_count(out / "responses")
            if written >= target and srv.in_flight > 0:
                state = (written, _parquet_count(out / "judgments"))
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert state is not None, "the sweep ended or timed out before the kill point"
        assert state[0] < n_batches, f"generation was over at the kill ({state})"

        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    responses = pq.read_table(out / "responses").to_pylist()
    judgments = pq.read_table(out / "judgments").to_pylist()
    want = sorted((r["uid"], f"cfg{i}", m) for r in _demo_rows(repo_root, 12) for i in range(3) for m in ("NT", "T"))
    assert sorted(tuple(r[k] for k in KEY) for r in responses) == want
    assert sorted(tuple(j[k] for k in KEY) for j in judgments) == want
    text = {tuple(r[k] for k in KEY): r["response"] for r in responses}
    for j in judgments:
        assert j["judge_error"] is None, j["judge_error"]
        assert {k: j[k] for k in ("cot", "rep", "con", "pr")} == expected_labels(text[tuple(j[k] for k in KEY)])
    assert "cfg2  T   Acc" in done.stdout and "report.md" in done.stdout


def test_failing_config_does_not_stop_the_others_and_errors_are_retried(tmp_path, repo_root, capsys):
    """One config's engine does not start (bad replay file), one answers only half the samples (engine
    errors on the rest), one is fine: exit 4 (a config never started) naming it and its reason, the others written
    and judged; reruns retry the error rows up to --max-attempts, each key stored once."""
    from howeval.ray_jobs.sweep import main

    from fakes.judge_server import FakeJudgeServer

    rows = _demo_rows(repo_root, 6)
    good, half, bad = tmp_path / "good.jsonl", tmp_path / "half.jsonl", tmp_path / "bad.jsonl"
    good.write_text("".join(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n" for r in rows))
    half.write_text("".join(json.dumps({"sample_id": r["uid"], "response": "It is 3."}) + "\n" for r in rows[:3]))
    bad.write_text('{"sample_id": "x"}\n')  # no response field: the engine refuses to start
    res = {"replicas": 1, "num_cpus": 0.2, "batch_size": 4}
    models = [{"name": n, "engine": "replay", "options": {"path": str(p)}, "modes": {"NT": {}, "T": {}}, "resources": res}
              for n, p in (("good", good), ("half", half), ("broken", bad))]
    os.environ["HOWEVAL_TEST_KEY"] = "k"
    with FakeJudgeServer(fault_rate=0.0) as srv:
        cfg = _streamed_config(tmp_path, repo_root, srv.base_url, n=6, models=models)
        args = ["--config", str(cfg), "--max-attempts", "2"]
        assert main(args) == 4
        cap = capsys.readouterr()
        first = cap.out
        assert cap.err.strip().splitlines()[-1].startswith("error: run failed (exit 4): config broken never started: ValueError:")
        out = tmp_path / "run"
        failures = json.loads((out / "failures.json").read_text())
        assert list(failures) == ["broken"] and "each line needs sample_id" in failures["broken"]
        assert "FAILED (1)" in first and "  broken: ValueError:" in first
        resp = pq.read_table(out / "responses").to_pylist()
        assert sorted({r["config"] for r in resp}) == ["good", "half"] and len(resp) == 24
        errors = sorted((r["sample_id"], r["mode"]) for r in resp if r["error"])
        assert len(errors) == 6 and all(r["attempt"] == 1 for r in resp)
        assert len(pq.read_table(out / "judgments")) == 18  # engine errors are not judged
        assert "good  NT  Acc 100.0% (6 scored, 0 unresolved; all-N 100.0%)" in first

        assert main(args) == 4  # rerun: error rows get attempt 2, still one row per key
        resp = pq.read_table(out / "responses").to_pylist()
        assert len(resp) == 24 and len({tuple(r[k] for k in KEY) for r in resp}) == 24
        assert sorted((r["sample_id"], r["mode"]) for r in resp if r["attempt"] == 2) == errors
        assert main(args) == 4  # max attempts reached: nothing retried
        assert max(r["attempt"] for r in pq.read_table(out / "responses").to_pylist()) == 2


def test_summary_shows_all_n_acc_reasoning_and_length_cuts_and_warns_when_t_did_not_think():
    from howeval.metrics.patterneval import sweep_metrics
    from howeval.ray_jobs.sweep import summary_lines

    rows = [{"sample_id": s, "config": "c", "mode": m, "correct": None if s == "b" else True, "cot": False,
             "rep": False, "con": False, "pr": False, "reasoning": None,
             "finish_reason": "length" if (s, m) == ("a", "T") else "stop"} for s in "ab" for m in ("NT", "T")]
    lines = summary_lines(sweep_metrics(rows), "runs/x", {})
    assert lines[0] == ("  c  NT  Acc 100.0% (1 scored, 1 unresolved; all-N 50.0%)  Trigger   0.0% (2 labelled)  n 2  "
                        "reasoning 0  length-cut 0")
    assert lines[1].endswith("reasoning 0  length-cut 1")
    assert lines[2].startswith("warning: config 'c': none of its 2 T rows has a reasoning channel")


def test_a_moved_manifest_resumes_without_generating_again(tmp_path, repo_root, capsys):
    """Issue 40: the same rows at another path (a new Ray session folder, a moved folder) resume: nothing is
    generated again, run_config.json records the new path and the same content; a changed row is refused."""
    import shutil

    from howeval.ray_jobs.sweep import main

    first = tmp_path / "session_1" / "_ray_pkg_aa" / "demo"
    shutil.copytree(repo_root / "datasets" / "demo", first)
    rows = _demo_rows(repo_root, 4)
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("".join(json.dumps({"sample_id": r["uid"], "response": f"The answer is {r['answer']}."}) + "\n"
                                for r in rows))
    model = {"name": "rep", "engine": "replay", "options": {"path": str(recorded)}, "modes": {"NT": {}},
             "resources": {"replicas": 1, "num_cpus": 0.5, "batch_size": 2}}
    out = tmp_path / "run"
    cfg = {"name": "moved", "output_uri": str(out), "benchmarks": [{"path": str(first / "manifest.jsonl"), "limit": 4}],
           "models": [model], "judges": {"pattern": [{"name": "rules"}]}, "ray": {"num_cpus": 2}}
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0
    files = sorted(p.name for p in (out / "responses").rglob("*.parquet"))
    stored = json.loads((out / "run_config.json").read_text())["benchmarks"][0]
    assert stored["content"]["rows"] == 4

    second = tmp_path / "session_2" / "_ray_pkg_bb" / "demo"
    shutil.copytree(first, second)
    shutil.rmtree(tmp_path / "session_1")
    cfg["benchmarks"][0]["path"] = str(second / "manifest.jsonl")
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 0
    assert sorted(p.name for p in (out / "responses").rglob("*.parquet")) == files  # not one row generated again
    again = json.loads((out / "run_config.json").read_text())["benchmarks"][0]
    assert again["path"] == str(second / "manifest.jsonl") and again["content"] == stored["content"]
    assert json.loads((out / "metrics.json").read_text())["configs"]["rep"]["NT"]["n"] == 4

    lines = (second / "manifest.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"answer": "7"', '"answer": "8"')
    (second / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["--config", str(tmp_path / "sweep.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"benchmarks (stored benchmarks.0): stored 'demo: first 4 rows sha256:{stored['content']['sha256'][:12]}" in err
    assert "now 'demo: first 4 rows sha256:" in err
