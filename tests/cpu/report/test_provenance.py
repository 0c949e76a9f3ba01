"""A run's provenance (howeval.report.provenance): code, packages, hardware, resolved engine arguments and seeds
in metrics.json and the report, and no absolute path in either."""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess

import pytest

from howeval.config import SweepConfig, load_run_config
from howeval.report.provenance import capture, git_state, record_provenance, relative_to_run
from howeval.report.run import write_report

from fakes.runs import make_run


def test_metrics_and_report_carry_provenance_and_no_absolute_path(tmp_path, repo_root):
    root = make_run(tmp_path / "runs" / "r")
    cfg = load_run_config(str(root))
    cfg = cfg.model_copy(update={"overrides": ["models.0.sampling.temperature=0.0", "--limit=4"]})
    entry = record_provenance(cfg, cluster={"nodes": 1, "CPU": 2.0, "GPU": 0, "accelerators": []})
    (root / "bad_rows.json").write_text(json.dumps([{"path": str(tmp_path / "data" / "m.jsonl"), "line": 3, "uid": "u",
                                                      "field": "image", "reason": f"cannot read {tmp_path}/data/x.png"}]))
    write_report(cfg)
    metrics_text = (root / "metrics.json").read_text()
    report = (root / "report.md").read_text()
    for text in (metrics_text, report, (root / "index.html").read_text()):
        assert str(tmp_path) not in text and str(repo_root) not in text  # no machine path anywhere
    run = json.loads(metrics_text)["run"]
    prov = run["provenance"]
    assert (run["output_uri"], run["benchmarks"]) == (".", ["m.jsonl"])  # m.jsonl was relative already
    head = subprocess.run(["git", "-C", str(repo_root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert prov["git"]["commit"] == head and isinstance(prov["git"]["dirty"], bool)
    assert prov["packages"]["torch"] == importlib.metadata.version("torch")
    assert prov["packages"]["transformers"] == importlib.metadata.version("transformers")
    assert prov["packages"]["ray"] == importlib.metadata.version("ray") and "trl" in prov["packages"]
    assert prov["hardware"]["cpu_count"] == os.cpu_count() and prov["hardware"]["cluster"]["nodes"] == 1
    assert prov["seeds"] == {"alpha": 0, "beta": 0} and prov["overrides"] == ["models.0.sampling.temperature=0.0", "--limit=4"]
    assert prov["configs"]["alpha"]["engine_args"] == {"path": "x.jsonl", "delay_s": 0.0}
    # unset sampling fields are the model's own defaults (None here; the sweep resolves them into generation_settings)
    assert prov["configs"]["alpha"]["sampling"] == {"max_tokens": 32, "temperature": None, "top_p": None, "top_k": None,
                                                    "min_p": None, "presence_penalty": None,
                                                    "repetition_penalty": None, "seed": 0}
    assert prov["started"] == entry["started"]
    bad = json.loads(metrics_text)["bad_rows"][0]
    assert (bad["path"], bad["reason"]) == ("../../data/m.jsonl", "cannot read ../../data/x.png")
    assert "## Provenance" in report and f"- **Code**: commit `{head[:12]}`" in report
    assert "`models.0.sampling.temperature=0.0` `--limit=4`" in report


def test_hf_and_vllm_arguments_are_recorded_as_the_engine_receives_them(tmp_path):
    cfg = SweepConfig.model_validate({
        "output_uri": str(tmp_path / "run"), "benchmarks": [{"path": str(tmp_path / "m.jsonl")}],
        "models": [{"name": "qwen", "engine": "hf", "model": str(tmp_path / "models" / "qwen"), "modes": {"NT": {}},
                    "options": {"trust_remote_code": True, "attn_implementation": "sdpa", "torch_dtype": "bfloat16",
                                "processor_kwargs": {"max_pixels": 1003520}}, "sampling": {"seed": 7}},
                   {"name": "v", "engine": "vllm", "model": "Qwen/Qwen3-VL-8B", "modes": {"T": {}},
                    "options": {"max_model_len": 4096}}]})
    prov = capture(cfg)
    hf = prov["configs"]["qwen"]
    assert hf["model"] == "../models/qwen"
    assert hf["engine_args"]["from_pretrained"] == {"dtype": "bfloat16", "trust_remote_code": True,
                                                    "attn_implementation": "sdpa"}
    assert hf["engine_args"]["processor"] == {"trust_remote_code": True, "max_pixels": 1003520}
    v = prov["configs"]["v"]["engine_args"]
    assert v["engine_args"] == {"max_model_len": 4096} and "max_model_len" not in v["cpu_platform_defaults"]
    assert prov["seeds"] == {"qwen": 7, "v": 0}


def test_git_state_outside_a_checkout_says_why(tmp_path):
    got = git_state(tmp_path)
    assert got["commit"] is None and got["dirty"] is None and got["reason"].startswith("not a git checkout")


@pytest.mark.parametrize("path,run,want", [("/a/b/m.jsonl", "/a/runs/x", "../../b/m.jsonl"),
                                           ("gs://b/m.jsonl", "/a/r", "gs://b/m.jsonl"), ("m.jsonl", "/a/r", "m.jsonl"),
                                           ("/a/b/m.jsonl", "s3://bucket/run", ".../b/m.jsonl"), (None, "/a", None),
                                           ("/w/r/d/m.jsonl", "/tmp/run", ".../d/m.jsonl")])
def test_relative_to_run(path, run, want):
    assert relative_to_run(path, run) == want


def test_provenance_has_the_command_line_the_data_hash_and_the_wall_time(tmp_path):
    """Issue 34 (lmms-eval's results carry them): the command line, a hash of each benchmark file, wall time."""
    import datetime as dt
    import hashlib

    from howeval.report.provenance import finish_provenance, provenance_section, read_provenance

    root = make_run(tmp_path / "runs" / "r")
    manifest = tmp_path / "data" / "m.jsonl"
    manifest.parent.mkdir()
    manifest.write_text('{"uid": "a"}\n')
    cfg = load_run_config(str(root))
    cfg = cfg.model_copy(update={"benchmarks": [cfg.benchmarks[0].model_copy(update={"path": str(manifest)}),
                                                cfg.benchmarks[0].model_copy(update={"path": str(tmp_path / "gone.jsonl")})]})
    t0 = dt.datetime(2026, 12, 2, 10, 0, 0, tzinfo=dt.timezone.utc)
    entry = capture(cfg, now=t0, argv=["/v/bin/python", "-m", "howeval.ray_jobs.sweep", f"--data={manifest}", "--limit", "4"])
    assert entry["command"] == "python -m howeval.ray_jobs.sweep --data=../../data/m.jsonl --limit 4"
    assert entry["data"][0] == {"path": "../../data/m.jsonl", "bytes": 13,
                                "sha256": hashlib.sha256(b'{"uid": "a"}\n').hexdigest()}
    assert entry["data"][1]["path"] == "../../gone.jsonl" and entry["data"][1]["error"].startswith("FileNotFoundError")
    (root / "provenance.json").write_text(json.dumps([entry]))
    done = finish_provenance(cfg, now=t0 + dt.timedelta(seconds=754))
    assert done["wall_s"] == 754.0 and read_provenance(str(root))[-1]["finished"] == "2026-12-02 10:12:34 UTC"
    text = provenance_section(done)
    assert "- **Wall time**: 754 s to the report" in text and "- **Command**: `python -m howeval.ray_jobs.sweep" in text
    assert f"sha256 `{entry['data'][0]['sha256'][:16]}…`, 13 bytes" in text
