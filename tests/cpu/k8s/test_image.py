"""The image's build helpers (k8s/image/): what they read from the repository and what they check.

The image itself is built by ``make image`` and checked inside by ``k8s/image/check_image.py`` (its last build
step); these tests keep the pieces it relies on true without a container engine: the dependency layer lists
exactly pyproject's dependencies, the C-toolchain check really compiles and imports an extension (the GPU build
runs it), the one-owner rule for ``cv2`` matches the pinned OCR package, and the cluster smoke run reads the
cpu-smoke overlay's node shapes and workloads.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib


def _load(repo_root: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"k8s_image_{name}", repo_root / "k8s" / "image" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_requirements_layer_is_pyprojects_dependencies(repo_root: Path):
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    script = str(repo_root / "k8s" / "image" / "requirements.py")
    cpu = subprocess.run([sys.executable, script], capture_output=True, text=True, check=True).stdout.splitlines()
    gpu = subprocess.run([sys.executable, script, "--extra", "gpu"], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert cpu == project["dependencies"]
    assert gpu == project["dependencies"] + project["optional-dependencies"]["gpu"]
    bad = subprocess.run([sys.executable, script, "--extra", "gpux"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--extra gpux" in bad.stderr and "gpu" in bad.stderr


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler on this machine")
def test_c_toolchain_check_compiles_and_imports_an_extension(repo_root: Path, monkeypatch):
    check = _load(repo_root, "check_image")
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert "built and imported a Python extension" in check.c_toolchain()
    assert "launcher" in sys.modules
    sys.modules.pop("launcher")


def test_c_toolchain_check_fails_without_a_compiler(repo_root: Path, monkeypatch):
    check = _load(repo_root, "check_image")
    monkeypatch.setattr(check.shutil, "which", lambda name: None)
    with pytest.raises(AssertionError, match="no C compiler"):
        check.c_toolchain()


def test_gpu_build_installs_a_c_toolchain_and_keeps_one_cv2(repo_root: Path):
    text = (repo_root / "k8s" / "Dockerfile").read_text()
    gpu_branch = text[text.index('if [ "$VARIANT" = "gpu" ]; then'):text.index("apt-get update")]
    assert "gcc" in gpu_branch and "libc6-dev" in gpu_branch and "python3-dev" in gpu_branch
    assert text.index("sh k8s/image/one_cv2.sh") > text.index("pip install -r /tmp/requirements.txt -c constraints/gpu.txt")
    assert 'check_image.py --variant "$VARIANT"' in text


def test_the_allowed_pip_check_line_names_the_pinned_ocr_package(repo_root: Path):
    check = _load(repo_root, "check_image")
    deps = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]["dependencies"]
    ocr_pin = next(d for d in deps if d.startswith("rapidocr-onnxruntime=="))
    name, version = ocr_pin.split("==")
    assert check.ALLOWED_PIP_CHECK == (f"{name} {version} requires opencv-python, which is not installed.",)


def test_cluster_smoke_reads_the_cpu_smoke_overlay(repo_root: Path):
    smoke = _load(repo_root, "cluster_smoke")
    m = smoke.manifests(repo_root / "k8s" / "rendered" / "cpu-smoke.yaml")
    head, worker, env = smoke.node_shapes(m["cluster"])
    assert head["num-cpus"] == "0"
    assert worker["num-cpus"] == "4" and int(worker["memory"]) == 12 * 2**30
    assert {"PYTHONUNBUFFERED"} <= {e["name"] for e in env}
    assert m["sweep"]["entrypoint"].startswith("python -m howeval.ray_jobs.sweep")
    assert smoke.output_of(m["sweep"]["entrypoint"]).startswith("/data/")
    assert "howeval.ray_jobs.train_grpo" in m["grpo"]["entrypoint"]
    assert {a["name"] for a in m["serve"]["applications"]} >= {"patternrm", "reward"}
    assert smoke.quantity("500m") == 0.5 and smoke.quantity("2Gi") == 2 * 2**30


def test_grpo_step_lines_are_read_with_their_world_size(repo_root: Path):
    smoke = _load(repo_root, "cluster_smoke")
    text = "\n".join([
        '(RayTrainWorker pid=1) [train_grpo] {"step": 3, "world_size": 2, "loss": 0.1}',
        "(RayTrainWorker pid=1) [train_grpo] not json {",
        '[train_grpo] {"step": 4, "world_size": 1, "reward": 0.5}',
        '[train_grpo] {"step": 4, "world_size": 1, "train_loss": 0.5}',  # the summary line: not a step
        '{"step": 9, "loss": 1.0}',  # not the job's step line
    ])
    assert smoke.grpo_steps(text) == ([3, 4], [2, 1])


def test_grpo_start_lines_give_each_worker_group_its_size_and_checkpoint(repo_root: Path):
    """The smoke's resize check: one record per worker-group start, a line Ray repeats counted once."""
    smoke = _load(repo_root, "cluster_smoke")
    text = "\n".join([
        '(RayTrainWorker pid=1) [train_grpo] start {"world_size": 2, "resumed_from": null, "time": 1.0}',
        '(RayTrainWorker pid=1) [train_grpo] start {"world_size": 2, "resumed_from": null, "time": 1.0}',
        '(RayTrainWorker pid=1) [train_grpo] {"step": 1, "world_size": 2, "loss": 0.0}',
        '(RayTrainWorker pid=7) [train_grpo] start {"world_size": 1, "resumed_from": 2, "time": 9.0}',
        "(RayTrainWorker pid=7) [train_grpo] start {broken",
    ])
    assert smoke.grpo_starts(text) == [{"world_size": 2, "resumed_from": None, "time": 1.0},
                                       {"world_size": 1, "resumed_from": 2, "time": 9.0}]


def _write_part(folder: Path, name: str, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), folder / f"part-{name}.parquet")


def _sweep_output(root: Path, samples: list[str], adapt_split: int) -> None:
    """A sweep's output as the store writes it: one config, modes NT/T, one judge; AdaptMMBench's 3 modes
    written in two batches (``adapt_split`` rows, then the rest), as at ``--limit 6`` (16 + 2 rows)."""
    resp = [{"sample_id": s, "config": "c", "mode": m, "response_hash": f"h{s}{m}"} for s in samples for m in ("NT", "T")]
    _write_part(root / "responses" / "c", "a", resp)
    _write_part(root / "judgments" / "c", "a", [{**r, "judge": "rules@1", "correct": True} for r in resp])
    _write_part(root / "steps", "a", [{**r, "embedder": "e", "tau": 0.35, "alpha": 0.5, "order": "lis"} for r in resp])
    adapt = [{"sample_id": s, "config": "c", "mode": m, "correct": False} for s in samples for m in ("text", "adaptive", "oracle")]
    _write_part(root / "adapt" / "c", "a", adapt[:adapt_split])
    _write_part(root / "adapt" / "c", "b", adapt[adapt_split:])
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"sample_id": r["sample_id"], "config": "c", "mode": r["mode"]} for r in resp]),
                   root / "samples.parquet")


def test_smoke_counts_rows_per_table_over_all_part_files(repo_root: Path, tmp_path: Path):
    """The sweep check of make cluster-smoke: a table whose rows came in two part files (AdaptMMBench at --limit 6:
    16 + 2 rows) has lost nothing; a row missing from a table is lost; a key written in two part files is
    duplicated. (The check before compared each part file with the union of samples: 5 "lost" rows here.)"""
    smoke = _load(repo_root, "cluster_smoke")
    ids = [f"s{i}" for i in range(6)]
    samples = {"*": set(ids), "steps": set(ids), "adapt": set(ids)}
    required = ["responses", "judgments", "samples", "steps", "adapt"]
    _sweep_output(tmp_path / "ok", ids, adapt_split=16)
    tables = smoke.read_tables(tmp_path / "ok")
    assert tables["adapt"]["files"] == 2 and len(tables["adapt"]["keys"]) == 18
    ok = smoke.count_rows(tables, samples, required)
    assert (ok["rows"], ok["lost"], ok["duplicated"], ok["unexpected"]) == (66, 0, 0, 0)

    # a real loss: one judgment row and a whole mode of one AdaptMMBench batch gone; a real duplicate: a step
    # score and an adapt episode written again in a second part file
    bad = tmp_path / "bad"
    _sweep_output(bad, ids, adapt_split=16)
    import pyarrow.parquet as pq

    j = pq.read_table(bad / "judgments" / "c" / "part-a.parquet").to_pylist()
    _write_part(bad / "judgments" / "c", "a", j[1:])
    (bad / "adapt" / "c" / "part-b.parquet").unlink()
    _write_part(bad / "steps", "b", pq.read_table(bad / "steps" / "part-a.parquet").to_pylist()[:1])
    _write_part(bad / "adapt" / "c", "c", pq.read_table(bad / "adapt" / "c" / "part-a.parquet").to_pylist()[:1])
    got = smoke.count_rows(smoke.read_tables(bad), samples, required)
    per = {k: (v["lost"], v["duplicated"]) for k, v in got["tables"].items()}
    assert per == {"adapt": (2, 1), "judgments": (1, 0), "responses": (0, 0), "samples": (0, 0), "steps": (0, 1)}
    assert (got["lost"], got["duplicated"]) == (3, 2)


def test_smoke_counts_a_lost_mode_config_and_table(repo_root: Path, tmp_path: Path):
    """Losses that leave no row to compare with still count: a whole mode of the judgments, a required table
    with no part file, and a sample of the expected set that no table holds."""
    smoke = _load(repo_root, "cluster_smoke")
    ids = ["a", "b"]
    _sweep_output(tmp_path, ids, adapt_split=3)
    import pyarrow.parquet as pq

    j = pq.read_table(tmp_path / "judgments" / "c" / "part-a.parquet").to_pylist()
    _write_part(tmp_path / "judgments" / "c", "a", [r for r in j if r["mode"] == "NT"])
    for f in (tmp_path / "steps").iterdir():
        f.unlink()
    tables = smoke.read_tables(tmp_path)
    samples = {"*": {"a", "b", "z"}, "steps": set(ids), "adapt": set(ids)}
    got = smoke.count_rows(tables, samples, ["responses", "judgments", "samples", "steps", "adapt"])
    per = {k: v["lost"] for k, v in got["tables"].items()}
    # z (no evidence boxes: not an AdaptMMBench sample): 2 responses, 2 samples rows; judgments: T of a and b,
    # and both modes of z; steps: none written, 2 samples x 2 modes
    assert per == {"adapt": 0, "judgments": 4, "responses": 2, "samples": 2, "steps": 4}


def test_metered_judge_counts_only_answers_asked_again_after_they_were_stored(repo_root: Path, tmp_path: Path):
    """The smoke's "paid twice": a call after the loss whose request already had an answer in the run's judge cache.
    A request in flight at the loss (answered by the endpoint, never stored) may be asked again."""
    import json
    import urllib.request

    smoke = _load(repo_root, "cluster_smoke")
    judge = smoke.MeteredJudge(latency_s=0.0)
    try:
        def ask(text: str) -> str:
            body = json.dumps({"model": "metered-judge", "messages": [{"role": "user", "content": text}]}).encode()
            req = urllib.request.Request(f"{judge.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())["choices"][0]["message"]["content"]

        answers = [ask(t) for t in ("a", "b", "c")]  # calls 1-3 before the loss
        # the cache as the judge writes it (howeval/judges/cache.py): a torn last line is skipped
        cache = tmp_path / "judge_cache" / "metered@1"
        cache.mkdir(parents=True)
        lines = [json.dumps({"key": k, "completion": {"text": a}}) for k, a in zip("xy", answers[:2])]
        (cache / "host-1-abc.jsonl").write_text("\n".join(lines) + '\n{"key": "z", "compl')
        stored = smoke.MeteredJudge.stored_calls(tmp_path / "judge_cache")
        assert stored == {1, 2}
        since = len(judge.calls)
        ask("c")  # in flight at the loss, never stored: asked again, not paid twice
        ask("d")
        assert judge.paid_twice(stored, since) == 0
        ask("a")  # stored before the loss and asked again: paid twice
        assert judge.paid_twice(stored, since) == 1
        assert json.loads(answers[0]) == {"cot": False, "rep": False, "con": False, "pr": False, "smoke_call": 1}
    finally:
        judge.close()


def test_smoke_summary_names_the_token_check_and_both_head_losses(repo_root: Path):
    smoke = _load(repo_root, "cluster_smoke")
    result = {"auth": {"no token": 401, "wrong token": 403},
              "sweep": {"rows": 66, "lost": 0, "duplicated": 0, "rows_at_head_loss": 28, "judge_calls": 16,
                        "judge_paid_twice": 0, "killed": "w1"},
              "reward": {"scored": 2, "degraded": 0, "refused": 401},
              "grpo": {"steps": 5, "resized": "2 -> 1 workers, resumed from step 2", "first_job_steps": 3,
                       "resumed_from": 3, "killed": "w2"}}
    line = smoke.summary(True, result, 900.4)
    assert line.startswith("cluster-smoke: ok; ray job submit without the token -> 401 (wrong token 403), not run;")
    assert "head loss at 28 rows" in line and "66 written, 0 lost, 0 duplicated" in line and "0 paid twice" in line
    assert "head loss after step 3: new cluster resumed from step 3" in line and "losses survived 4/4; 900 s" in line
    assert smoke.summary(False, {}, 5).startswith("cluster-smoke: FAILED;")


def test_grpo_steps_after_the_head_loss_count_the_checkpoint_the_new_job_resumed_from(repo_root: Path):
    """The first job may train and save a step after its log was read and before the head goes (the smoke run of
    5 December: logged 1-3, saved 4, the new cluster resumed from 4 and trained 5): the checkpoint proves step 4."""
    smoke = _load(repo_root, "cluster_smoke")
    log = "\n".join(['(RayTrainWorker pid=1) [train_grpo] start {"world_size": 2, "resumed_from": 4, "time": 1.0}',
                     '(RayTrainWorker pid=1) [train_grpo] {"step": 5, "world_size": 2, "loss": 0.1}'])
    assert smoke.trained_steps([1, 1, 2, 2, 3, 3], log, 5) == 4
    with pytest.raises(smoke.SmokeFailure, match="did not continue from a checkpoint"):
        smoke.trained_steps([1, 2, 3], log.replace('"resumed_from": 4', '"resumed_from": null'), 5)
    with pytest.raises(smoke.SmokeFailure, match=r"trained \[1, 2, 3, 4, 5\], want 1..6"):
        smoke.trained_steps([1, 2, 3], log, 6)
    gap = log.replace('"resumed_from": 4', '"resumed_from": 2').replace('"step": 5', '"step": 3')
    assert smoke.trained_steps([1, 2], gap, 3) == 2
