"""Stale-resume guard (howeval.config.resume): a rerun with response-changing settings is refused by name."""
from __future__ import annotations

import json

import pytest

from howeval.config import ConfigError, SweepConfig, refuse_stale_resume, stale_fields


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
        ("benchmarks (stored benchmarks.0.path)", "/data/m.jsonl", None),
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
