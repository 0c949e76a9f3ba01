"""Stale-resume guard (howeval.config.resume): a rerun with response-changing settings is refused by name."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from howeval.benchmarks.loaders import load_benchmark
from howeval.config import BenchmarkContent, ConfigError, SweepConfig, refuse_stale_resume, stale_fields


def _raw(out, **model_patch):
    model = {"name": "qwen", "engine": "openai", "model": "qwen3-vl-8b",
             "options": {"base_url": "http://127.0.0.1:8001/v1", "max_concurrency": 8},
             "modes": {"NT": {"chat_template_kwargs": {"enable_thinking": False}},
                       "T": {"chat_template_kwargs": {"enable_thinking": True}, "max_tokens": 4096}},
             "sampling": {"max_tokens": 1024, "temperature": 0.0}}
    for k, v in model_patch.items():
        model[k] = v
    return {"output_uri": str(out), "benchmarks": [{"path": "/data/m.jsonl", "limit": 10}], "models": [model]}


def _cfg(out, **patch) -> SweepConfig:
    return SweepConfig.model_validate(_raw(out, **patch))


def test_response_changing_fields_are_listed(tmp_path):
    old = _cfg(tmp_path)
    new = _cfg(tmp_path, model="qwen3-vl-32b", sampling={"max_tokens": 1024, "temperature": 0.7},
               modes={"NT": {"chat_template_kwargs": {"enable_thinking": False}},
                      "T": {"chat_template_kwargs": {"enable_thinking": True}, "max_tokens": 8192}})
    assert stale_fields(old, new) == [
        ("models.0.model", "qwen3-vl-8b", "qwen3-vl-32b"),
        ("models.0.modes.T.max_tokens", 4096, 8192),
        ("models.0.sampling.temperature", 0.0, 0.7),
    ]


def test_fields_that_do_not_change_a_response_are_free(tmp_path):
    old = _cfg(tmp_path)
    raw = _raw(tmp_path, options={"base_url": "http://10.0.0.5:8001/v1", "max_concurrency": 64, "qps": 4},
               resources={"replicas": 4, "num_cpus": 0.5},
               modes={"NT": {"chat_template_kwargs": {"enable_thinking": False}}})  # T removed
    raw["benchmarks"][0]["limit"] = 100  # more rows, same settings
    raw["benchmarks"].append({"path": "/data/other.jsonl"})  # a benchmark added
    raw["judges"] = {"pattern": [{"name": "rules2"}]}
    raw["ray"] = {"num_cpus": 2}
    raw["name"] = "renamed-run"
    raw["models"].append({"name": "new-model", "engine": "hf", "modes": {"NT": {}}})
    assert stale_fields(old, SweepConfig.model_validate(raw)) == []


def test_data_changes_count_and_unwritten_configs_do_not(tmp_path):
    old = _cfg(tmp_path)
    raw = _raw(tmp_path, sampling={"max_tokens": 64, "temperature": 0.0})
    raw["benchmarks"] = [{"path": "/data/v2.jsonl"}]
    new = SweepConfig.model_validate(raw)
    assert stale_fields(old, new, written={"qwen"}) == [
        ("models.0.sampling.max_tokens", 1024, 64),
        # stored without content (an older run_config.json), gone, another file name: both values, never None
        ("benchmarks (stored benchmarks.0)", "data: content not recorded (/data/m.jsonl)",
         "data: content not recorded (/data/v2.jsonl)"),
    ]
    assert stale_fields(old, new, written=set()) == []  # nothing generated yet: nothing to mix


def _store(out, cfg: SweepConfig, written=("qwen",)):
    out.mkdir(parents=True, exist_ok=True)
    (out / "run_config.json").write_text(cfg.model_dump_json())
    for name in written:
        (out / "responses" / name).mkdir(parents=True)
        (out / "responses" / name / "part-0.parquet").write_bytes(b"x")


def test_refusal_message_says_what_differs_and_how_to_go_on(tmp_path):
    out = tmp_path / "run"
    _store(out, _cfg(out))
    refuse_stale_resume(_cfg(out, resources={"replicas": 3}))  # same response settings: resumes
    with pytest.raises(ConfigError) as e:
        refuse_stale_resume(_cfg(out, sampling={"max_tokens": 1024, "temperature": 0.0, "seed": 7}))
    assert str(e.value) == (
        f"{out} holds answers made with other settings; resuming would mix them with the new ones "
        "(1 difference(s) from its run_config.json):\n"
        "  models.0.sampling.seed: stored 0, now 7\n"
        "Fix: write to a new output URI (--output or output_uri), or give each changed model config a new name "
        f"(models.N.name) so its answers are kept apart; or, to discard the old answers, delete {out}/responses/<config>/ "
        "for qwen (and their judgments). Fields that do not change a response (judges, ray, resources, limits, "
        "concurrency) never block a resume.")


def test_a_config_without_stored_responses_is_not_stale(tmp_path):
    out = tmp_path / "run"
    _store(out, _cfg(out), written=())
    refuse_stale_resume(_cfg(out, model="other"))  # the first run died before writing any answer


def test_a_stored_config_that_no_longer_validates_is_refused(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    raw = _raw(out)
    raw["models"][0]["colour"] = "red"
    (out / "run_config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=r"models.0.colour: unknown key \(got 'red'\); Accepted: name, engine, [\s\S]*use a new output URI"):
        refuse_stale_resume(_cfg(out))


def test_vllm_engine_arguments_flat_or_nested_compare_alike(tmp_path):
    def cfg(options):
        return SweepConfig.model_validate({"output_uri": str(tmp_path), "benchmarks": [{"path": "/d/m.jsonl"}],
                                           "models": [{"name": "q", "engine": "vllm", "model": "/models/q",
                                                       "modes": {"NT": {}}, "options": options}]})

    old = cfg({"max_model_len": 4096, "gpu_memory_utilization": 0.9})
    assert stale_fields(old, cfg({"engine_kwargs": {"max_model_len": 4096}, "gpu_memory_utilization": 0.8,
                                  "tensor_parallel_size": 2})) == []
    assert stale_fields(old, cfg({"max_model_len": 8192})) == [("models.0.options.max_model_len", 4096, 8192)]


def test_adapt_settings_count_but_its_modes_do_not(tmp_path):
    old = SweepConfig.model_validate(_raw(tmp_path) | {"adapt": {"max_turns": 3}})
    grown = SweepConfig.model_validate(_raw(tmp_path) | {"adapt": {"max_turns": 3, "modes": ["text"]}})
    assert stale_fields(old, grown) == []
    assert stale_fields(old, SweepConfig.model_validate(_raw(tmp_path) | {"adapt": {"max_turns": 2}})) == [
        ("adapt.max_turns", 3, 2)]
    moved = SweepConfig.model_validate(_raw(tmp_path) | {"adapt": {"max_turns": 3, "process_judge_cache": "/c"}})
    assert stale_fields(old, moved) == []  # where the process judge's cache lives changes no stored row


def test_hf_placement_options_are_free_and_loading_options_count(tmp_path):
    def cfg(options: dict) -> SweepConfig:
        return SweepConfig.model_validate({"output_uri": str(tmp_path), "benchmarks": [{"path": "/d/m.jsonl"}],
                                           "models": [{"name": "q", "engine": "hf", "model": "/m", "modes": {"NT": {}},
                                                       "options": options}]})

    old = cfg({"attn_implementation": "sdpa", "device": "cpu"})
    assert stale_fields(old, cfg({"attn_implementation": "sdpa", "device_map": "auto", "max_memory": {"0": "8GiB"},
                                  "batch_size": 4})) == []
    assert stale_fields(old, cfg({"attn_implementation": "eager", "revision": "v2",
                                  "processor_kwargs": {"max_pixels": 1000}})) == [
        ("models.0.options.attn_implementation", "sdpa", "eager"),
        ("models.0.options.processor_kwargs", {}, {"max_pixels": 1000}),
        ("models.0.options.revision", None, "v2")]


# -- benchmarks by content, never by path (issue 40) ---------------------------------------------------------
ROWS = [{"uid": f"u{i}", "question": f"What is {i} + 1?", "answer": str(i + 1), "answer_type": "integer_number",
         "category": "stem"} for i in range(5)]


def _manifest(path: Path, rows=ROWS, indent=None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, indent=indent).replace("\n", "") + "\n" for r in rows))
    return path


def _bench_cfg(out: Path, manifest: Path, **bench) -> SweepConfig:
    raw = _raw(out)
    raw["benchmarks"] = [{"path": str(manifest), **bench}]
    return SweepConfig.model_validate(raw)


def _stored_run(out: Path, manifest: Path, **bench) -> SweepConfig:
    """What the sweep writes: the config with each benchmark's content as the loader read it."""
    cfg = _bench_cfg(out, manifest, **bench)
    content = load_benchmark(str(manifest), limit=cfg.benchmarks[0].limit, read_images=False).content
    cfg = cfg.model_copy(update={"benchmarks": [cfg.benchmarks[0].model_copy(update={"content": BenchmarkContent(**content)})]})
    _store(out, cfg)
    return cfg


def test_a_manifest_unpacked_under_a_new_ray_session_folder_resumes(tmp_path):
    """The issue's refusal: the same working_dir unpacked by a new cluster under another session/package folder."""
    out = tmp_path / "run"
    first = _manifest(tmp_path / "session_2026-12-05_16-37-54_1/runtime_resources/working_dir_files/_ray_pkg_aa"
                      / "datasets/demo/manifest.jsonl")
    stored = _stored_run(out, first, limit=3)
    assert stored.benchmarks[0].content.rows == 3  # the rows the run read: the first three
    second = tmp_path / "session_2026-12-05_17-02-11_2/runtime_resources/working_dir_files/_ray_pkg_bb/datasets/demo"
    shutil.copytree(first.parent, second)
    shutil.rmtree(tmp_path / "session_2026-12-05_16-37-54_1")  # the lost cluster's folder is gone
    new = _bench_cfg(out, second / "manifest.jsonl", limit=3)
    assert refuse_stale_resume(new) == new


def test_a_moved_reformatted_or_grown_manifest_resumes_and_keeps_its_name(tmp_path):
    out = tmp_path / "run"
    _stored_run(out, _manifest(tmp_path / "demo" / "manifest.jsonl"), limit=3)
    # another folder (the drawn name would be 'elsewhere'), keys reordered, two rows appended after the used three
    moved = _manifest(tmp_path / "elsewhere" / "m.jsonl",
                      [dict(reversed(list(r.items()))) for r in ROWS] + [{**ROWS[0], "uid": "u9"}])
    resumed = refuse_stale_resume(_bench_cfg(out, moved, limit=5))  # a larger limit: more rows, same settings
    assert resumed.benchmarks[0].name == "demo"  # its rows keep the stored run's benchmark name
    assert resumed.benchmarks[0].path == str(moved)
    # an explicit other name is a difference (the report would split the rows)
    with pytest.raises(ConfigError, match=r"benchmarks.0.name: stored 'demo', now 'mine'"):
        refuse_stale_resume(_bench_cfg(out, moved, name="mine"))


def test_a_changed_manifest_is_refused_with_both_digests(tmp_path):
    out = tmp_path / "run"
    stored = _stored_run(out, _manifest(tmp_path / "demo" / "manifest.jsonl"), limit=3)
    changed = _manifest(tmp_path / "new" / "demo" / "manifest.jsonl", [ROWS[0], {**ROWS[1], "answer": "7"}, *ROWS[2:]])
    new = _bench_cfg(out, changed, limit=3)
    from howeval.config.resume import rows_content

    now = rows_content(new.benchmarks[0], 3)
    assert now.sha256 != stored.benchmarks[0].content.sha256
    with pytest.raises(ConfigError) as e:
        refuse_stale_resume(new)
    assert (f"  benchmarks (stored benchmarks.0): stored 'demo: first 3 rows sha256:{stored.benchmarks[0].content.sha256[:12]} "
            f"({tmp_path}/demo/manifest.jsonl)', now 'demo: first 3 rows sha256:{now.sha256[:12]} ({changed})'") in str(e.value)
    # a row removed or the file cut short: refused too, the new count printed
    short = _manifest(tmp_path / "short" / "demo" / "manifest.jsonl", ROWS[:2])
    with pytest.raises(ConfigError, match=r"stored 'demo: first 3 rows sha256:\w+ .*now 'demo: first 2 rows sha256:"):
        refuse_stale_resume(_bench_cfg(out, short, limit=3))
    # the benchmark dropped from the config: what is listed instead, never None
    other = _manifest(tmp_path / "other" / "manifest.jsonl", [{**r, "uid": "x" + r["uid"]} for r in ROWS])
    with pytest.raises(ConfigError, match=r"now 'no benchmark of these rows listed \(the new config lists: other\)'"):
        refuse_stale_resume(_bench_cfg(out, other))


def test_a_run_config_written_before_contents_were_recorded(tmp_path, capsys):
    """Old format (no ``content``): same path matches; an existing stored file matches by its whole rows; a gone
    file matches by name and file name with a note on stderr; anything else is refused, both values printed."""
    out = tmp_path / "run"
    old_file = _manifest(tmp_path / "a" / "demo" / "manifest.jsonl")
    _store(out, _bench_cfg(out, old_file))  # no content: as the code before issue 40 wrote it
    assert refuse_stale_resume(_bench_cfg(out, old_file)).benchmarks[0].name is None  # the same path
    copy = _manifest(tmp_path / "b" / "demo" / "manifest.jsonl")
    refuse_stale_resume(_bench_cfg(out, copy))  # the stored file still there, same rows
    changed = _manifest(tmp_path / "c" / "demo" / "manifest.jsonl", ROWS[:4])
    with pytest.raises(ConfigError, match=r"stored 'demo: content not recorded \(.*/a/demo/manifest.jsonl\)', "
                                          r"now 'demo: content not recorded \(.*/c/demo/manifest.jsonl\)'"):
        refuse_stale_resume(_bench_cfg(out, changed))
    old_file.unlink()  # the lost cluster's session folder: content unknowable
    capsys.readouterr()
    refuse_stale_resume(_bench_cfg(out, changed))
    assert "rows not compared; this run records their digest" in capsys.readouterr().err
    renamed = _manifest(tmp_path / "d" / "demo" / "rows.jsonl")
    with pytest.raises(ConfigError, match=r"stored 'demo: content not recorded"):
        refuse_stale_resume(_bench_cfg(out, renamed))  # another file name: not the same benchmark as far as we know
